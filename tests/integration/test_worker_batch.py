"""One SQS batch's records processed side by side (lockgate.inbox.batch), on moto with the shop's
worker as lockgate.runtime builds it and the stub model: same effects as one after another, each
delivery once, the failures exactly the deferred and broken records.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from lockgate.clock import FixedClock
from lockgate.http import RawRequest
from lockgate.inbox.batch import QueueRecord, process_batch
from lockgate.inbox.queue import decode_pointer
from lockgate.inbox.store import InboxStore
from lockgate.inbox.worker import RetryLater
from lockgate.webhooks.signing import sign
from lockgate_infra.chaos.faults import FaultPlan, Rates
from lockgate_infra.chaos.run import START, account
from lockgate_infra.chaos.traffic import CATALOGUE, Send
from lockgate_infra.chaos.world import HELPDESK_SECRET, World
from shop.offline.inbox import ShopModel
from tests.support import LOG, serialized_moto

NO_FAULTS = Rates(aws_before=0, aws_after=0, crash_after_effect=0, reenter=0, model=0)
# One email of each kind the shop handles: questions, a small (automatic) and a large (approved)
# refund, and a prompt injection.
MAILS = [Send(f"msg-chaos-{n:04d}", False, [0], mail) for n, mail in enumerate(CATALOGUE)]
BACKING_OFF = Send("msg-chaos-0099", False, [0], CATALOGUE[0])  # released earlier, due in an hour
JUNK = {"messageId": "junk", "receiptHandle": "junk", "body": "not a pointer"}


@dataclass
class Outcome:
    """A batch's answer and the account's end state, in terms that do not depend on the account."""

    failures: list[str]  # the failed records' deliveries ("junk" for the stray message), in batch order
    inbox: dict[str, tuple[str, int]]  # delivery -> (status, attempts)
    runs: list[str]
    ledger: list[tuple[str, str]]  # (tool, state) of every operation
    refunds: list[tuple[str, str]]  # (order, amount) of every payment row
    proposals: list[str]  # the tool of every proposal written for a person (or a veto window)
    emails: list[tuple[str, str]]  # (to, subject) of every email SES sent
    model_failures: list[str] = field(default_factory=list)


def post(world: World, send: Send) -> None:
    """The helpdesk's signed delivery, through the receiver: stored and queued."""
    headers = sign(
        world.config.sources["helpdesk"], HELPDESK_SECRET, send.body, int(world.clock.now()), send.delivery_id
    )
    event = {"pathParameters": {"source": "helpdesk"}, "headers": headers, "body": send.body.decode()}
    assert world.receiver.receive(RawRequest.from_apigw_v2(event)).status == 200


def backing_off(world: World, pk: str) -> None:
    """An earlier attempt released the delivery for retry in an hour: its pointer must come back later."""
    store, now = InboxStore(world.client("dynamodb"), world.names["InboxTable"]), int(world.clock.now())
    store.claim(pk, "earlier-worker", now + 60, 300)
    store.release_for_retry(pk, "earlier-worker", "TimeoutError: earlier", now + 3600, now + 60)


def queued(world: World) -> list[dict[str, Any]]:
    """The inbox queue's messages as records of Lambda's SQS event (receiving them, as the mapping does)."""
    sqs, records = world.client("sqs"), []
    while got := sqs.receive_message(QueueUrl=world.names["InboxQueue"], MaxNumberOfMessages=10).get(
        "Messages"
    ):
        records += [
            {"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"]} for m in got
        ]
    return records


def handler(world: World, on_retry: Callable[[], None] = lambda: None) -> Callable[[QueueRecord], str]:
    """What the worker's Lambda handler does with one record, on the world's worker."""

    def handle(record: QueueRecord) -> str:
        try:
            return world.workers[0].process(
                decode_pointer(record.body), record.receipt_handle, remaining_seconds=lambda: 90.0
            )
        except RetryLater:
            on_retry()
            raise

    return handle


def outcome(world: World, records: Sequence[dict[str, Any]], answer: dict[str, Any]) -> Outcome:
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.ses.models import ses_backends

    pks = {r["messageId"]: (decode_pointer(r["body"]) if r is not JUNK else "junk") for r in records}
    state = world.scan("StateTable")
    return Outcome(
        failures=[pks[f["itemIdentifier"]] for f in answer["batchItemFailures"]],
        inbox={i["pk"]["S"]: (i["status"]["S"], int(i["attempts"]["N"])) for i in world.scan("InboxTable")},
        runs=sorted(
            i["pk"]["S"] for i in state if i["pk"]["S"].startswith("run#") and i["sk"]["S"] == "meta"
        ),
        ledger=sorted((i["tool"]["S"], i["state"]["S"]) for i in state if i["pk"]["S"].startswith("op#")),
        refunds=sorted((i["order_id"]["S"], i["amount"]["N"]) for i in world.scan("ShopPaymentsTable")),
        proposals=sorted(i["tool"]["S"] for i in world.scan("ApprovalsTable")),
        emails=sorted(
            (to, m.subject)
            for m in ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages
            for to in m.destinations.get("ToAddresses", [])
        ),
        model_failures=list(world.stub.model_failures),
    )


@contextmanager
def shop_account() -> Iterator[World]:
    with account(FaultPlan(1, NO_FAULTS), FixedClock(START)) as world:
        yield world


def mixed_batch(concurrency: int) -> Outcome:
    """Five emails, one delivery still backing off and a stray message, as one batch."""
    with shop_account() as world:
        for send in [*MAILS, BACKING_OFF]:
            post(world, send)
        backing_off(world, f"helpdesk#{BACKING_OFF.delivery_id}")
        records = [*queued(world), JUNK]
        with serialized_moto():
            answer = process_batch(event(records), handler(world), concurrency=concurrency, log=LOG)
        return outcome(world, records, answer)


def event(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {"Records": list(records)}


class FirstCallsGate:
    """The stub model holds the first ``count`` requests until ``release`` says so (it gives up after 30 s).

    A run waits for each reply before its next request, so the first requests held are from
    ``count`` different runs.
    """

    def __init__(self, count: int, release: Callable[[], bool]) -> None:
        self._count, self._release, self._lock = count, release, threading.Lock()
        self.held = 0

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        respond = ShopModel.__call__

        def gated(model: ShopModel, request: Any) -> Any:
            with self._lock:
                hold = self.held < self._count
                self.held += hold
            if hold and not self._release():
                raise RuntimeError("the gate was never released")  # the stub answers 500
            return respond(model, request)

        monkeypatch.setattr(ShopModel, "__call__", gated)


def test_given_a_mixed_batch_when_its_records_run_side_by_side_then_everything_is_as_one_after_another() -> (
    None
):
    # Given the same batch (five emails, a delivery backing off, a stray message) on two fresh accounts
    # When one runs its records one after another and the other all at once
    sequential, concurrent = mixed_batch(concurrency=1), mixed_batch(concurrency=10)
    # Then the answers and the end states are the same
    assert concurrent == sequential
    # And only the delivery backing off and the stray message come back
    assert concurrent.failures == [f"helpdesk#{BACKING_OFF.delivery_id}", "junk"]
    # And every email was processed once: claimed once, one run, each side effect in the ledger once
    for send in MAILS:
        assert concurrent.inbox[f"helpdesk#{send.delivery_id}"] == ("done", 1)
        assert f"run#helpdesk#{send.delivery_id}" in concurrent.runs
    assert concurrent.inbox[f"helpdesk#{BACKING_OFF.delivery_id}"] == ("received", 1)  # the earlier attempt
    assert len(concurrent.runs) == len(MAILS)
    # One reply per customer email (none to the injection's sender), each sent once through the ledger
    assert [to for to, _ in concurrent.emails] == sorted(
        s.mail.sender for s in MAILS if s.mail.kind != "attack"
    )
    assert concurrent.ledger == [("send_email", "SUCCEEDED")] * len(concurrent.emails)
    # And both refunds wait for a person (or the veto window) as proposals: nothing paid in the batch
    assert concurrent.proposals == ["refund_order", "refund_order"] and concurrent.refunds == []
    assert concurrent.model_failures == []


def test_given_a_batch_of_five_when_run_side_by_side_then_every_record_is_waiting_for_the_model_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a model that answers none of the first five requests until all five have arrived
    # (one after another, the first run would wait for the others forever: the gate gives up after 30 s)
    barrier = threading.Barrier(len(MAILS))

    def everyone_asked() -> bool:
        try:
            barrier.wait(timeout=30)
        except threading.BrokenBarrierError:
            return False
        return True

    gate = FirstCallsGate(len(MAILS), everyone_asked)
    gate.install(monkeypatch)
    with shop_account() as world:
        for send in MAILS:
            post(world, send)
        records = queued(world)
        # When the batch runs its records side by side
        with serialized_moto():
            answer = process_batch(event(records), handler(world), concurrency=len(MAILS), log=LOG)
        done = outcome(world, records, answer)
    # Then all five were in flight together, and each finished
    assert gate.held == len(MAILS)
    assert done.model_failures == [] and done.failures == []
    assert all(done.inbox[f"helpdesk#{s.delivery_id}"] == ("done", 1) for s in MAILS)


def test_given_two_pointers_to_one_delivery_in_a_batch_then_it_runs_once_and_the_copy_comes_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a model that holds the delivery's first request until the other copy has been turned away
    turned_away = threading.Event()
    gate = FirstCallsGate(1, lambda: turned_away.wait(timeout=30))
    gate.install(monkeypatch)
    mail = MAILS[0]  # a question: its reply is a side effect that must not happen twice
    with shop_account() as world:
        post(world, mail)
        sqs = world.client("sqs")
        sqs.send_message(
            QueueUrl=world.names["InboxQueue"], MessageBody=json.dumps({"pk": f"helpdesk#{mail.delivery_id}"})
        )
        records = queued(world)
        assert len(records) == 2
        # When both copies run side by side
        with serialized_moto():
            answer = process_batch(event(records), handler(world, turned_away.set), concurrency=2, log=LOG)
        first = outcome(world, records, answer)
        # Then the delivery ran once, and the copy that found it leased is reported to come back
        assert first.failures == [f"helpdesk#{mail.delivery_id}"]
        assert first.inbox[f"helpdesk#{mail.delivery_id}"] == ("done", 1)
        assert first.emails == [(mail.mail.sender, f"Re: {mail.mail.subject}")] and len(first.runs) == 1
        assert first.ledger == [("send_email", "SUCCEEDED")]
        # And when that copy comes back, it is dropped without running again
        again = [r for r in records if r["messageId"] == answer["batchItemFailures"][0]["itemIdentifier"]]
        with serialized_moto():
            assert process_batch(event(again), handler(world), concurrency=2, log=LOG) == {
                "batchItemFailures": []
            }
        assert outcome(world, records, answer).emails == first.emails
    assert first.model_failures == []
