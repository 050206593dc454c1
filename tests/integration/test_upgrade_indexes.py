"""`lockgate upgrade indexes`: what an earlier version stored is listed again after the upgrade."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from lockgate.actions.ledger import Ledger, OpState
from lockgate.actions.tools import OutcomeUnknown
from lockgate.clock import FixedClock
from lockgate.inbox.models import Delivery, Status
from lockgate.inbox.store import InboxStore
from lockgate.index_shards import ATTRIBUTE, index_shard
from lockgate_infra.cli.targets import Target
from lockgate_infra.cli.upgrade import run_upgrade_indexes
from tests.support import Aws, run_cli


def _as_before_sharding(db: Any, table: str, key: dict[str, Any]) -> None:
    """The item as a version before the sharded indexes stored it: no ``index_shard``."""
    db.update_item(
        TableName=table, Key=key, UpdateExpression="REMOVE #h", ExpressionAttributeNames={"#h": ATTRIBUTE}
    )


def _delivery(n: int, status: Status) -> Delivery:
    return Delivery(pk=f"github#old{n}", source="github", delivery_id=f"old{n}", event_type="push",
                    status=status, received_at=1_000 + n, available_at=1_000 + n)  # fmt: skip


@pytest.fixture
def upgraded_from_before(aws: Aws) -> Aws:
    """Two waiting deliveries, a failed one and an operation of unknown outcome, stored without a
    shard; one delivery stored by this version."""
    db, store = aws.client("dynamodb"), InboxStore(aws.client("dynamodb"), aws.inbox_table)
    for n, status in enumerate((Status.RECEIVED, Status.RECEIVED, Status.FAILED)):
        store.put_new(_delivery(n, status))
        _as_before_sharding(db, aws.inbox_table, {"pk": {"S": f"github#old{n}"}})
    store.put_new(_delivery(9, Status.RECEIVED))

    def lost(key: str) -> None:
        raise OutcomeUnknown("timed out")

    Ledger(db, aws.state_table, FixedClock(1_000)).execute(
        op_key="run-1/refund",
        fingerprint="fp",
        tool="refund_order",
        run_id="run-1",
        summary="refund",
        effect=lost,
    )
    _as_before_sharding(db, aws.state_table, {"pk": {"S": "op#run-1/refund"}, "sk": {"S": "op"}})
    return aws


def _target(aws: Aws) -> Target:
    return Target(session=aws.session, endpoint_url=None, names=aws.names, label="the test stack")


def test_given_items_stored_before_sharding_then_the_indexes_do_not_list_them(
    upgraded_from_before: Aws,
) -> None:
    aws = upgraded_from_before
    store = InboxStore(aws.client("dynamodb"), aws.inbox_table)
    ledger = Ledger(aws.client("dynamodb"), aws.state_table, FixedClock(2_000))

    assert store.count_by_status()[Status.RECEIVED] == 1
    assert ledger.open_page(OpState.UNKNOWN)[0] == []


def test_given_items_stored_before_sharding_when_upgrading_then_each_is_listed_with_its_shard(
    upgraded_from_before: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    aws = upgraded_from_before
    db = aws.client("dynamodb")

    assert run_upgrade_indexes(argparse.Namespace(dry_run=False), _target(aws)) == 0

    assert capsys.readouterr().out.splitlines() == [
        "Inbox deliveries: 3 without an index shard, 3 got one",
        "open ledger entries: 1 without an index shard, 1 got one",
    ]
    store = InboxStore(db, aws.inbox_table)
    assert store.count_by_status()[Status.RECEIVED] == 3
    assert [d.pk for d in store.list_by_status(Status.FAILED)] == ["github#old2"]
    item = db.get_item(TableName=aws.inbox_table, Key={"pk": {"S": "github#old0"}})["Item"]
    assert item[ATTRIBUTE] == {"N": str(index_shard("github#old0"))}
    listed, _ = Ledger(db, aws.state_table, FixedClock(2_000)).open_page(OpState.UNKNOWN)
    assert [op.key for op in listed] == ["run-1/refund"]
    # And a second run finds nothing left to do
    assert run_upgrade_indexes(argparse.Namespace(dry_run=False), _target(aws)) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Inbox deliveries: 0 without an index shard, 0 got one",
        "open ledger entries: 0 without an index shard, 0 got one",
    ]


def test_given_a_dry_run_then_it_counts_and_changes_nothing(upgraded_from_before: Aws) -> None:
    aws = upgraded_from_before
    code, out = run_cli("upgrade", "indexes", "--dry-run", "--stack", "missing", "--region", "us-east-1")
    assert (code, out) == (2, "")  # no such stack: one line on stderr, exit 2

    assert run_upgrade_indexes(argparse.Namespace(dry_run=True), _target(aws)) == 0

    assert InboxStore(aws.client("dynamodb"), aws.inbox_table).count_by_status()[Status.RECEIVED] == 1
