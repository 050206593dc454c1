"""The stored item schema: which format of runs, proposals and ledger rows this code reads and writes.

Every run item, proposal and ledger row carries ``schema`` (a number); items written before it
existed have none and are schema 1. The rule for an upgrade:

- Items an older version wrote are read as they are: a format change is additive, or it bumps
  ``ITEM_SCHEMA`` and reads the older shape too.
- Items a newer version wrote (found after a rollback) are never acted on: reading one raises
  ``SchemaTooNew``, a permanent failure, so the delivery is set aside for a person instead of
  being misread.
- A proposal remembers its tool's argument schema; if a new deployment changed it, the approved
  proposal is not run (see ``lockgate.approvals.executor``): it expires and the task is told.
- A run recorded by the previous version replays its recorded steps; every tool call in them is
  validated against today's schema and re-checked by today's policy, and the ledger's key keeps
  a side effect that already happened from happening again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lockgate.errors import PermanentFailure

ITEM_SCHEMA = 2  # the newest format this code reads
# What each format added: 2, a run step's data stored compressed (``dataz``, binary zlib of the
# JSON) when that saves write units. Items that use nothing newer are still written as 1, so a
# rollback to a version that reads only 1 still reads them.
COMPRESSED_STEP = 2
ATTRIBUTE = "schema"


class SchemaTooNew(PermanentFailure):
    """A stored item was written by a newer Lockgate than this one: it is not acted on."""


def stamped(item: dict[str, Any], schema: int = 1) -> dict[str, Any]:
    """The low-level item with its schema number: the oldest format that can read it."""
    return {**item, ATTRIBUTE: {"N": str(schema)}}


def written_by(item: Mapping[str, Any]) -> int:
    """The schema an item was written with (1 for items from before the number existed)."""
    try:
        return int(item.get(ATTRIBUTE, {}).get("N", "1"))
    except (AttributeError, TypeError, ValueError):
        return ITEM_SCHEMA + 1  # unreadable: treat as not ours to read


def check_readable(item: Mapping[str, Any], what: str) -> None:
    """Raise SchemaTooNew when ``item`` (a ``what``, e.g. "run") was written by a newer version."""
    version = written_by(item)
    if version > ITEM_SCHEMA:
        raise SchemaTooNew(
            f"{what} was written with item schema {version}, newer than this deployment's {ITEM_SCHEMA}: "
            "deploy the newer version again, or let it expire"
        )
