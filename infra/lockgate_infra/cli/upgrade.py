"""`lockgate upgrade indexes`: give the items an earlier version stored their ``index_shard``.

The inbox's deliveries and the ledger's open entries are listed through sharded indexes
(``lockgate/index_shards.py``). An index holds only the items that have every attribute of its key,
so what a version before them stored (no ``index_shard``) is not listed until it gets one: a
delivery waiting for the sweep, a failed one for ``inbox redrive``, an operation of unknown outcome
for the reconcile job. This scans the Inbox, and the State table's open ledger entries, and sets
the shard their key hashes to, each by a conditional write: an item that has one keeps it. Run it
after the upgrade's first deploy (docs/operate.md, "Upgrading"); running it again changes nothing.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lockgate.dynamo import read_page, write_if
from lockgate.index_shards import ATTRIBUTE, index_shard
from lockgate_infra.cli.targets import Target


@dataclass(frozen=True)
class Backfill:
    """One table's items without a shard: which, what their key is, and what their shard hashes."""

    logical_id: str
    label: str
    only: str  # a filter on top of "has no index_shard"
    key: Callable[[dict[str, Any]], dict[str, Any]]
    shard_of: Callable[[dict[str, Any]], str]


BACKFILLS = (
    Backfill("InboxTable", "Inbox deliveries", "", lambda i: {"pk": i["pk"]}, lambda i: str(i["pk"]["S"])),
    Backfill(
        "StateTable",
        "open ledger entries",
        "attribute_exists(open_state) AND ",
        lambda i: {"pk": i["pk"], "sk": i["sk"]},
        lambda i: str(i["op_key"]["S"]),
    ),
)


def add_upgrade_parser(commands: Any, *, run: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
    """``lockgate upgrade indexes``; returned so the caller adds --local/--stack."""
    upgrade = commands.add_parser("upgrade", help="bring what an earlier version stored up to this one")
    sub = upgrade.add_subparsers(dest="upgrade_command", required=True)
    indexes: argparse.ArgumentParser = sub.add_parser(
        "indexes", help="give the deliveries and open ledger entries stored before sharding their index shard"
    )
    indexes.add_argument("--dry-run", action="store_true", help="count them, change nothing")
    indexes.set_defaults(run=run)
    return indexes


def run_upgrade_indexes(args: argparse.Namespace, target: Target) -> int:
    """Backfill every table; one line each. Exit 0."""
    db = target.client("dynamodb")
    for backfill in BACKFILLS:
        found, given = backfill_shards(db, target.name(backfill.logical_id), backfill, dry_run=args.dry_run)
        verb = "would get" if args.dry_run else "got"
        print(f"{backfill.label}: {found} without an index shard, {given} {verb} one")
    return 0


def backfill_shards(db: Any, table: str, backfill: Backfill, *, dry_run: bool = False) -> tuple[int, int]:
    """(items found without a shard, items given one); an item changed meanwhile is left as it is."""
    found = given = 0
    start: dict[str, Any] | None = None
    while True:
        items, start = read_page(
            db.scan, start, TableName=table, FilterExpression=f"{backfill.only}attribute_not_exists(#h)",
            ExpressionAttributeNames={"#h": ATTRIBUTE}, ConsistentRead=True,
        )  # fmt: skip
        for item in items:
            found += 1
            given += dry_run or write_if(
                db.update_item,
                TableName=table,
                Key=backfill.key(item),
                UpdateExpression="SET #h = :h",
                ConditionExpression="attribute_exists(pk) AND attribute_not_exists(#h)",
                ExpressionAttributeNames={"#h": ATTRIBUTE},
                ExpressionAttributeValues={":h": {"N": str(index_shard(backfill.shard_of(item)))}},
            )
        if start is None:
            return found, given
