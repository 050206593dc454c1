"""Limits on what waits for a person, held by the same transaction that writes the proposal.

- One pending proposal per (task, tool, target), e.g. one refund per order: a slot item whose
  ``holder`` is the proposal. It is released when the proposal is decided, run or expired (the
  executor), and frees itself once the proposal can no longer run (``until``), so a lost release
  never blocks the target for longer than the proposal's own windows.
- At most N pending per task and per sender: a counter item holding one attribute per holder
  (``h_<approval id>`` = until) and their number ``n``; taking a place is ``n < cap`` in the
  transaction, a release removes the holder and subtracts one, conditionally, exactly once.

The proposal put, the slot and both counters are one TransactWriteItems: a proposal exists only
with its places taken, and a refused limit writes nothing. No check-then-act.

A task's counter, which every proposal of the task writes, is spread over ``min(shards, cap)``
items (``pending#TASK#s<i>``, ``lockgate.shards``), each allowing its share of the cap; a proposal
takes the shard its id hashes to, and a full shard sends it, after one BatchGetItem of the shards,
to one with room. The bound: a task never has more than its cap pending; a proposal may be refused
while another shard frees a place at the same moment. Proposals that were pending before sharding
keep their place on the unsharded counter and give it back there: until they are decided or can no
longer run (a day at most), a task may have up to twice its cap pending.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.approvals.proposals import RETENTION_SECONDS, Proposal
from lockgate.config import ApprovalsConfig
from lockgate.dynamo import error_code, num, write_if
from lockgate.errors import StoreUnavailable
from lockgate.shards import count_share, every_shard, shard_of, sharded

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

SLOT, HOLDERS = "slot", "holders"


class LimitReached(Exception):  # noqa: N818 - names the outcome the model is told about
    """A limit refused the proposal; ``reason`` is written for the model (nothing was stored)."""

    def __init__(self, limit: str, reason: str) -> None:
        super().__init__(reason)
        self.limit = limit  # "target", "task" or "sender"
        self.reason = reason


def _digest(value: str) -> str:
    """Keys carry no customer data (a sender's address) and stay short, whatever the target is."""
    return hashlib.sha256(value.encode()).hexdigest()[:24]


def slot_key(task: str, tool: str, target: str) -> str:
    """The slot item's pk for one (task, tool, target)."""
    return f"pending#{task}#{tool}#{_digest(target)}"


def holds(task: str, tool: str, target: str | None, sender: str | None) -> dict[str, str]:
    """The places a proposal takes, by kind: its target's slot, its task's and its sender's counters."""
    places = {"task": f"pending#{task}"}
    if target is not None:
        places["target"] = slot_key(task, tool, target)
    if sender:
        places["sender"] = f"pending#{task}#sender#{_digest(sender.strip().lower())}"
    return places


class PendingLimits:
    """Takes and releases a proposal's places (State table) together with its put (Approvals table)."""

    def __init__(
        self,
        dynamodb: DynamoDBClient,
        approvals_table: str,
        state_table: str,
        config: ApprovalsConfig,
        shards: int = 1,
    ) -> None:
        self._db = dynamodb
        self._approvals = approvals_table
        self._state = state_table
        self._config = config  # max_pending_per_task, max_pending_per_sender
        self._shards = max(1, min(shards, config.max_pending_per_task))

    def propose(self, proposal: Proposal, now: int) -> tuple[Proposal, bool]:
        """Write the proposal and take its places (``extra["holds"]``); (stored, created now?).

        A replay returns the stored proposal. LimitReached says which limit refused it; a counter
        full of holders whose proposals can no longer run is pruned once and tried again, and so is
        a transaction that met another one on a counter.
        """
        places: dict[str, str] = proposal.extra.get("holds", {})
        if "task" in places:  # the task's shard, kept on the proposal: its release goes there
            places["task"] = sharded(
                places["task"], shard_of(proposal.approval_id, self._shards), self._shards
            )
        for attempt in (1, 2, 3):
            try:
                self._db.transact_write_items(TransactItems=self._items(proposal, places, now))  # type: ignore[arg-type]
                return proposal, True
            except ClientError as exc:
                reasons = _reasons(exc)
                if reasons[0].get("Code") == "ConditionalCheckFailed":
                    old = reasons[0].get("Item")
                    return (Proposal.from_item(old) if old else self._stored(proposal)), False
                if attempt < 3 and any(r.get("Code") == "TransactionConflict" for r in reasons):
                    continue  # another proposal took a counter at the same moment: once more
                refusal = self._refusal(proposal, places, reasons[1:], now)
                if attempt < 3 and refusal.limit == "task" and self._move(places):
                    continue  # the task's shard is full, another has room
                if attempt == 3 or refusal.limit == "target" or not self._prune(reasons[1:], places, now):
                    raise refusal from exc
            except BotoCoreError as exc:
                raise StoreUnavailable(type(exc).__name__) from exc
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def release(self, proposal: Proposal) -> None:
        """Give back the proposal's places (decided, run or expired); a second release changes nothing."""
        for kind, pk in proposal.extra.get("holds", {}).items():
            if kind == "target":
                write_if(
                    self._db.delete_item,
                    TableName=self._state,
                    Key={"pk": {"S": pk}, "sk": {"S": SLOT}},
                    ConditionExpression="holder = :me",
                    ExpressionAttributeValues={":me": {"S": proposal.approval_id}},
                )
            else:
                self._give_back(pk, f"h_{proposal.approval_id}", None)

    def waiting(self, task: str, tool: str, target: str, now: float) -> dict[str, Any] | None:
        """The arguments of the proposal waiting on (task, tool, target), or None."""
        try:
            item = self._db.get_item(
                TableName=self._state,
                Key={"pk": {"S": slot_key(task, tool, target)}, "sk": {"S": SLOT}},
                ConsistentRead=True,
            ).get("Item")
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        if not item or (num(item, "until") or 0) < now:
            return None
        args: dict[str, Any] = json.loads(item["args"]["S"])
        return args

    def _items(self, proposal: Proposal, places: dict[str, str], now: int) -> list[dict[str, Any]]:
        until = proposal.expires_at + proposal.run_within_seconds  # after this it can never run
        ttl = {"N": str(until + RETENTION_SECONDS)}
        items: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self._approvals,
                    "Item": proposal.to_item(),
                    "ConditionExpression": "attribute_not_exists(approval_id)",
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            }
        ]
        for kind, pk in places.items():
            if kind == "target":
                items.append(self._slot(proposal, pk, until, now, ttl))
                continue
            cap = self._task_cap(pk) if kind == "task" else self._config.max_pending_per_sender
            items.append(
                {
                    "Update": {
                        "TableName": self._state,
                        "Key": {"pk": {"S": pk}, "sk": {"S": HOLDERS}},
                        "UpdateExpression": "SET #h = :until, #ttl = :ttl ADD n :one",
                        "ConditionExpression": "attribute_not_exists(n) OR n < :cap",
                        "ExpressionAttributeNames": {"#h": f"h_{proposal.approval_id}", "#ttl": "ttl"},
                        "ExpressionAttributeValues": {
                            ":until": {"N": str(until)},
                            ":ttl": ttl,
                            ":one": {"N": "1"},
                            ":cap": {"N": str(cap)},
                        },
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                }
            )
        return items

    def _task_cap(self, pk: str) -> int:
        """A task counter's cap: its share when it is one of the task's shards."""
        cap = self._config.max_pending_per_task
        shard = pk.rpartition("#s")[2]
        if self._shards == 1 or not shard.isdigit():
            return cap  # the unsharded counter (a proposal from before sharding)
        return count_share(cap, int(shard), self._shards)

    def _move(self, places: dict[str, str]) -> bool:
        """Move the task's place to a shard with room (one BatchGetItem of them); False when none has."""
        if self._shards == 1:
            return False
        task_pk = places["task"].rpartition("#s")[0]
        keys = [{"pk": {"S": pk}, "sk": {"S": HOLDERS}} for pk in every_shard(task_pk, self._shards)]
        try:
            found = self._db.batch_get_item(
                RequestItems={self._state: {"Keys": keys, "ConsistentRead": True}}
            )["Responses"].get(self._state, [])
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        taken = {item["pk"]["S"]: num(item, "n") or 0 for item in found}
        room = [k["pk"]["S"] for k in keys if taken.get(k["pk"]["S"], 0) < self._task_cap(k["pk"]["S"])]
        places["task"] = next((pk for pk in room if pk != places["task"]), places["task"])
        return bool(room) and places["task"] in room

    def _slot(self, proposal: Proposal, pk: str, until: int, now: int, ttl: dict[str, str]) -> dict[str, Any]:
        return {
            "Put": {
                "TableName": self._state,
                "Item": {
                    "pk": {"S": pk},
                    "sk": {"S": SLOT},
                    "holder": {"S": proposal.approval_id},
                    "until": {"N": str(until)},
                    "summary": {"S": proposal.summary[:300]},
                    "args": {"S": json.dumps(proposal.args, sort_keys=True)},
                    "ttl": ttl,
                },
                # Free, or held by a proposal that can no longer run (its release was lost).
                "ConditionExpression": "attribute_not_exists(pk) OR #until < :now",
                "ExpressionAttributeNames": {"#until": "until"},
                "ExpressionAttributeValues": {":now": {"N": str(now)}},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _refusal(
        self, proposal: Proposal, places: dict[str, str], reasons: list[dict[str, Any]], now: int
    ) -> LimitReached:
        """Which limit refused, worded for the model; anything but a condition is the store failing."""
        for kind, reason in zip(places, reasons, strict=False):
            if reason.get("Code") != "ConditionalCheckFailed":
                continue
            if kind == "target":
                held = reason.get("Item", {}).get("summary", {}).get("S", "another request")
                return LimitReached(
                    "target",
                    f"a request on the same thing is already waiting for a person ({held}); only one "
                    f"{proposal.tool} per target may wait at a time",
                )
            who = "this task" if kind == "task" else "this sender"
            return LimitReached(kind, f"too many actions for {who} are already waiting for a person")
        raise StoreUnavailable(f"proposal transaction: {[r.get('Code') for r in reasons]}")

    def _prune(self, reasons: list[dict[str, Any]], places: dict[str, str], now: int) -> bool:
        """Remove holders whose proposals can no longer run from full counters; True if any was removed."""
        removed = False
        for (kind, pk), reason in zip(places.items(), reasons, strict=False):
            if kind == "target" or reason.get("Code") != "ConditionalCheckFailed":
                continue
            for name, value in (reason.get("Item") or {}).items():
                if name.startswith("h_") and int(value.get("N", "0")) < now:
                    removed = self._give_back(pk, name, value["N"]) or removed
        return removed

    def _give_back(self, pk: str, holder: str, until: str | None) -> bool:
        """Remove one holder and count it out, only if it is still there (as ``until``, when given)."""
        values: dict[str, Any] = {":minus": {"N": "-1"}}
        condition = "attribute_exists(#h)"
        if until is not None:
            condition, values[":until"] = "#h = :until", {"N": until}
        return write_if(
            self._db.update_item,
            TableName=self._state,
            Key={"pk": {"S": pk}, "sk": {"S": HOLDERS}},
            UpdateExpression="REMOVE #h ADD n :minus",
            ConditionExpression=condition,
            ExpressionAttributeNames={"#h": holder},
            ExpressionAttributeValues=values,
        )

    def _stored(self, proposal: Proposal) -> Proposal:
        try:
            item = self._db.get_item(
                TableName=self._approvals,
                Key={"approval_id": {"S": proposal.approval_id}},
                ConsistentRead=True,
            ).get("Item")
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        return Proposal.from_item(item) if item else proposal


def _reasons(exc: ClientError) -> list[dict[str, Any]]:
    """The per-item cancellation reasons; anything but a cancelled transaction is the store failing."""
    if error_code(exc) != "TransactionCanceledException":
        raise StoreUnavailable(error_code(exc)) from exc
    reasons = [dict(r) for r in exc.response.get("CancellationReasons") or []]
    if not reasons:
        raise StoreUnavailable("proposal transaction cancelled without reasons") from exc
    return reasons
