"""What became of an approved action, as the approval side may know it: the ledger entry's state and time.

The approval callback's role may read only ``op#`` items of the State table, and of them only the
attributes read here (a GetItem with a projection): never a result, an error text or a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.actions.ledger import OpState, item_key
from lockgate.approvals.proposals import Proposal
from lockgate.errors import StoreUnavailable

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# What the callback's role may read of a ledger entry (template.yaml's ReadActionOutcome).
READABLE_ATTRIBUTES = ("pk", "sk", "state", "updated_at")


class ActionState(StrEnum):
    """Where an approved action stands, in a reviewer's words."""

    RAN = "ran"
    FAILED = "failed"
    WAITING = "waiting for reconciliation"  # it may or may not have happened: a job or a person settles it
    RUNNING = "running"
    NOT_RUN = "not run yet"


@dataclass(frozen=True)
class ActionOutcome:
    """The action's state and when the ledger last changed it (None: no entry yet)."""

    state: ActionState
    at: int | None = None


_STATES = {
    OpState.SUCCEEDED: ActionState.RAN,
    OpState.FAILED: ActionState.FAILED,
    OpState.UNKNOWN: ActionState.WAITING,
    OpState.IN_PROGRESS: ActionState.RUNNING,
    OpState.PENDING: ActionState.RUNNING,
}


class ActionOutcomes:
    """Reads the ledger entry a proposal will run under (``extra["op_key"]``), read-only."""

    def __init__(self, dynamodb: DynamoDBClient, table_name: str) -> None:
        self._db = dynamodb
        self._table = table_name

    def of(self, proposal: Proposal, op_key: str | None = None) -> ActionOutcome | None:
        """The outcome under ``op_key`` (default: the proposal's own), NOT_RUN if the ledger has no
        entry; None if no key is known (proposed, or edited, before keys were kept)."""
        op_key = proposal.extra.get("op_key") if op_key is None else op_key
        if not isinstance(op_key, str) or not op_key:
            return None
        try:
            response = self._db.get_item(
                TableName=self._table,
                Key=item_key(op_key),
                ProjectionExpression="#st, updated_at",
                ExpressionAttributeNames={"#st": "state"},
                ConsistentRead=True,
            )
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        item = response.get("Item")
        if not item:
            return ActionOutcome(ActionState.NOT_RUN)
        state = _STATES.get(OpState(item["state"]["S"]), ActionState.RUNNING)
        return ActionOutcome(state, int(item["updated_at"]["N"]) if "updated_at" in item else None)
