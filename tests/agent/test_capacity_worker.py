"""Capacity end to end: receiver → SQS → worker → agent loop → real SDK → stub server, on moto.

SQS visibility follows the test's FixedClock (moto's clock is patched), so "the message comes
back after the delay" is asserted, not assumed. Every case ends with nothing lost: the delivery
is done, or waiting with its pointer in the queue, or failed with its pointer in the DLQ.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest

from lockgate.actions.ledger import Ledger
from lockgate.agent.handler import route_tasks
from lockgate.agent.loop import AgentLoop
from lockgate.agent.runs import RunStore
from lockgate.agent.tasks import Task
from lockgate.capacity.breaker import CircuitBreaker
from lockgate.capacity.gate import Gate
from lockgate.capacity.ratelimit import Bucket, RateLimiter
from lockgate.capacity.spend import SpendCaps
from lockgate.clock import FixedClock
from lockgate.inbox.models import Delivery, Status
from lockgate.inbox.worker import RetryLater
from lockgate.model.client import ModelClient
from lockgate.webhooks.signing import sign
from lockgate_infra.stub.client import stub_client
from lockgate_infra.stub.models import Scripted
from lockgate_infra.stub.replies import Model, Reply, billing, overloaded, rate_limited
from lockgate_infra.stub.server import StubAnthropic
from tests.agent.toolkit import Effects, make_task
from tests.support import LOG, PRICES, SECRETS, Harness, Sleeper

DONE = Reply([{"type": "text", "text": "handled"}])
REMAINING = 300.0  # seconds the Lambda has left for each delivery


@pytest.fixture(autouse=True)
def sqs_on_the_fake_clock(monkeypatch: pytest.MonkeyPatch, clock: FixedClock) -> None:
    """moto's SQS visibility timers run on the test clock."""
    monkeypatch.setattr("moto.sqs.models.unix_time", clock.now)
    monkeypatch.setattr("moto.sqs.models.unix_time_millis", lambda: clock.now() * 1000)


@dataclass
class Pipeline:
    """The worker routing github events to one agent task with every capacity control on."""

    harness: Harness
    stub: StubAnthropic
    task: Task
    limits: dict[str, Bucket] = field(default_factory=dict)
    model_sleeps: list[float] = field(default_factory=list)
    limiter_sleep: Sleeper | None = None

    def __post_init__(self) -> None:
        h, clock = self.harness, self.harness.clock
        db = h.client("dynamodb")
        self.limiter_sleep = Sleeper(clock)

        def factory() -> Any:
            return stub_client(self.stub.base_url, "test-key")

        model = ModelClient(factory, clock, LOG, sleep=self.model_sleeps.append, max_attempts=2)
        loop = AgentLoop(
            model=model,
            prices=PRICES,
            runs=RunStore(db, h.aws.state_table, clock),
            ledger=Ledger(db, h.aws.state_table, clock),
            clock=clock,
            log=LOG,
            metrics=h.metrics,
            breaker=CircuitBreaker(
                db, h.aws.state_table, clock, failure_threshold=2, open_seconds=30, metrics=h.metrics, log=LOG
            ),
            gate=Gate(
                db,
                clock,
                spend=SpendCaps(
                    db, h.aws.state_table, clock, global_cap_usd=5.0, task_caps={}, metrics=h.metrics, log=LOG
                ),
                limiter=RateLimiter(
                    db,
                    h.aws.state_table,
                    clock,
                    limits=self.limits,
                    metrics=h.metrics,
                    log=LOG,
                    sleep=self.limiter_sleep,
                ),
            ),
        )
        route_tasks(h.router, [self.task], loop, clock)
        self.worker = h.worker(lease_seconds=400)

    def deliver(self, delivery_id: str) -> str:
        """A signed GitHub push through the receiver: stored, with its pointer queued."""
        body = json.dumps({"delivery": delivery_id}).encode()
        cfg = self.harness.config.sources["github"]
        now = int(self.harness.clock.now())
        headers = sign(cfg, SECRETS["GITHUB_SECRET"], body, now, delivery_id=delivery_id, event_type="push")
        assert self.harness.post("github", body, headers).status == 200
        return f"github#{delivery_id}"

    def pump(self, remaining: float = REMAINING) -> dict[str, str]:
        """Receive every visible pointer once and process it as the Lambda would; pk → outcome."""
        sqs, outcomes = self.harness.client("sqs"), {}
        got = sqs.receive_message(QueueUrl=self.harness.aws.queue_url, MaxNumberOfMessages=10)
        for message in got.get("Messages", []):
            pk = json.loads(message["Body"])["pk"]
            try:
                outcomes[pk] = self.worker.process(pk, message["ReceiptHandle"], lambda: remaining)
            except RetryLater:
                outcomes[pk] = "retry later"
                continue  # the worker already set the message's visibility to the delay
            sqs.delete_message(QueueUrl=self.harness.aws.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return outcomes

    def row(self, pk: str) -> Delivery:
        return self.harness.store().get(pk)

    def visible_pointers(self) -> int:
        attrs = self.harness.client("sqs").get_queue_attributes(
            QueueUrl=self.harness.aws.queue_url, AttributeNames=["ApproximateNumberOfMessages"]
        )
        return int(attrs["Attributes"]["ApproximateNumberOfMessages"])

    def state(self, pk: str, sk: str) -> dict[str, Any] | None:
        got = self.harness.client("dynamodb").get_item(
            TableName=self.harness.aws.state_table,
            Key={"pk": {"S": pk}, "sk": {"S": sk}},
            ConsistentRead=True,
        )
        item: dict[str, Any] | None = got.get("Item")
        return item


@pytest.fixture
def stub() -> Iterator[StubAnthropic]:
    with StubAnthropic(Scripted([]), min_cacheable_tokens=0) as server:
        yield server


def pipeline(harness: Harness, stub: StubAnthropic, model: Model, **kw: Any) -> Pipeline:
    stub.set_model(model)
    return Pipeline(harness, stub, kw.pop("task", make_task(Effects(), source="github")), **kw)


# -- 429 with retry-after -----------------------------------------------------------------------


def test_a_429_with_retry_after_is_waited_out_then_the_event_completes(
    harness: Harness, stub: StubAnthropic
) -> None:
    # Given the API answers 429 "retry after 7 s" once, then replies
    p = pipeline(harness, stub, Scripted([rate_limited(7), DONE]))
    pk = p.deliver("d-429")
    # When the worker handles the delivery
    outcomes = p.pump()
    # Then the client slept exactly the 7 s the API asked for and the second attempt succeeded
    assert p.model_sleeps == [7.0]
    assert stub.calls == 2
    assert outcomes[pk] == "test-task: completed: handled"
    # And the inbox row is done, the pointer deleted, nothing in the DLQ
    assert p.row(pk).status is Status.DONE
    assert p.visible_pointers() == 0 and harness.aws.drain(harness.aws.dlq_url) == []


# -- 529 bursts: the breaker ----------------------------------------------------------------------


def test_a_529_burst_opens_the_breaker_no_request_reaches_the_api_while_open_then_a_probe_recovers(
    harness: Harness, stub: StubAnthropic, clock: FixedClock
) -> None:
    # Given an API overloaded (529) for 4 requests; 2 attempts per call, 2 failed calls open it 30 s
    p = pipeline(harness, stub, Scripted([overloaded()] * 4 + [DONE] * 3))
    a, b, c = p.deliver("a"), p.deliver("b"), p.deliver("c")
    # When the three deliveries are handled: a and b each fail both attempts with 529
    assert p.pump() == {a: "retry later", b: "retry later", c: "retry later"}
    # Then the breaker opened after b's failure, so c was not sent at all
    assert stub.calls == 4
    breaker = p.state("breaker#claude-sonnet-5-5", "state")
    assert breaker is not None and breaker["state"]["S"] == "open"
    assert harness.metrics.totals["CircuitOpened"] == 1
    # And every delivery waits in the inbox with its error and a next-available time; nothing lost
    for pk in (a, b):
        assert p.row(pk).status is Status.RECEIVED and "overloaded" in (p.row(pk).last_error or "")
    assert p.row(c).status is Status.RECEIVED and "circuit open" in (p.row(c).last_error or "")
    assert p.row(c).available_at == int(clock.now()) + 30
    # When c's pointer comes back while the circuit is still open (others back off meanwhile)
    clock.advance(31)
    harness.client("dynamodb").update_item(  # keep the circuit open a little longer, as a longer outage
        TableName=harness.aws.state_table,
        Key={"pk": {"S": "breaker#claude-sonnet-5-5"}, "sk": {"S": "state"}},
        UpdateExpression="SET opened_until = :later",
        ExpressionAttributeValues={":later": {"N": str(int(clock.now()) + 60)}},
    )
    assert c in p.pump()
    # Then still no request reached the API while the circuit is open
    assert stub.calls == 4 and p.row(c).status is Status.RECEIVED
    # When the open time is over and every pointer has come back
    clock.advance(900)
    outcomes = p.pump()
    # Then one probe went through, succeeded and closed the breaker, and every delivery completed
    assert outcomes == dict.fromkeys((a, b, c), "test-task: completed: handled")
    assert stub.calls == 7
    breaker = p.state("breaker#claude-sonnet-5-5", "state")
    assert breaker is not None and breaker["state"]["S"] == "closed"
    assert all(p.row(pk).status is Status.DONE for pk in (a, b, c))
    assert p.visible_pointers() == 0 and harness.aws.drain(harness.aws.dlq_url) == []


# -- billing error -----------------------------------------------------------------------------


def test_a_billing_error_fails_fast_and_sets_the_event_aside_with_a_clear_error(
    harness: Harness, stub: StubAnthropic
) -> None:
    # Given the account is out of credit
    p = pipeline(harness, stub, Scripted([billing(), DONE]))
    pk = p.deliver("d-bill")
    # When the worker handles the delivery
    outcome = p.pump()[pk]
    # Then exactly one request was sent (no retries), and the breaker did not count it
    assert stub.calls == 1 and p.model_sleeps == []
    assert p.state("breaker#claude-sonnet-5-5", "state") is None
    # And the delivery is failed (not retried) with the reason on the row, its pointer in the DLQ
    row = p.row(pk)
    assert row.status is Status.FAILED and row.attempts == 1
    assert row.last_error is not None and "model call failed (billing" in row.last_error
    assert outcome.startswith("failed: permanent failure")
    (dead,) = harness.aws.drain(harness.aws.dlq_url)
    assert json.loads(dead["Body"])["pk"] == pk
    # And nothing was charged to the day's budget for the refused call
    spend = p.state("spend#2026-01-01", "global")
    assert spend is not None and Decimal(spend["spent"]["N"]) == 0


# -- shared rate limits ------------------------------------------------------------------------


def test_an_empty_source_bucket_waits_when_the_deadline_allows(harness: Harness, stub: StubAnthropic) -> None:
    # Given github may make 1 model request a minute
    p = pipeline(harness, stub, Scripted([DONE, DONE]), limits={"source#github": Bucket(1)})
    a, b = p.deliver("a"), p.deliver("b")
    # When two deliveries arrive together and the Lambda has 300 s left
    outcomes = p.pump()
    # Then the second waited the full refill (60 s, slept, not spun) and both completed
    assert p.limiter_sleep is not None and p.limiter_sleep.waits == [60.0]
    assert set(outcomes) == {a, b} and stub.calls == 2
    assert p.row(a).status is Status.DONE and p.row(b).status is Status.DONE
    assert p.state("bucket#source#github", "rate") is not None


def test_an_empty_model_bucket_hands_the_event_back_to_the_queue_with_the_delay(
    harness: Harness, stub: StubAnthropic, clock: FixedClock
) -> None:
    # Given the model may take 1 request a minute, and the Lambda has too little time left to wait
    p = pipeline(
        harness, stub, Scripted([DONE, DONE]), limits={"model#claude-sonnet-5-5": Bucket(1, 100_000)}
    )
    a, b = p.deliver("a"), p.deliver("b")
    outcomes = p.pump(remaining=60.0)
    # Then one is done and the other is deferred without a request or a sleep
    (waiting,) = [pk for pk, outcome in outcomes.items() if outcome == "retry later"]
    assert stub.calls == 1 and p.limiter_sleep is not None and p.limiter_sleep.waits == []
    # And its inbox row says why and when it is next available; its pointer is hidden for that long
    row = p.row(waiting)
    assert row.status is Status.RECEIVED and "rate limit for model#claude-sonnet-5-5" in (
        row.last_error or ""
    )
    assert row.available_at == int(clock.now()) + 60
    assert p.visible_pointers() == 0
    # When the delay has passed, the pointer reappears and the event completes
    clock.advance(59)
    assert p.pump() == {}
    clock.advance(2)  # moto shows a message once its visibility time has strictly passed
    assert p.pump(remaining=60.0) == {waiting: "test-task: completed: handled"}
    assert {p.row(a).status, p.row(b).status} == {Status.DONE}
    assert harness.metrics.totals["RateLimited"] == 1
    assert harness.aws.drain(harness.aws.dlq_url) == []


# -- input guard -------------------------------------------------------------------------------


def test_a_prompt_over_the_input_limit_is_set_aside_for_a_person_without_a_request(
    harness: Harness, stub: StubAnthropic
) -> None:
    # Given a task that accepts at most 5 input tokens
    p = pipeline(
        harness, stub, Scripted([DONE]), task=make_task(Effects(), source="github", max_input_tokens=5)
    )
    pk = p.deliver("d-big")
    # When the worker handles the delivery
    outcome = p.pump()[pk]
    # Then nothing was sent, the run records the refusal, and the delivery is failed at once
    # (retrying cannot shrink the input) with the reason on the row and its pointer in the DLQ
    assert stub.calls == 0
    row = p.row(pk)
    assert row.status is Status.FAILED and row.attempts == 1
    assert "over the task's limit of 5; nothing was sent" in (row.last_error or "")
    assert outcome.startswith("failed: permanent failure")
    (dead,) = harness.aws.drain(harness.aws.dlq_url)
    assert json.loads(dead["Body"])["pk"] == pk
    run = RunStore(harness.client("dynamodb"), harness.aws.state_table, harness.clock).get(pk)
    assert run is not None and run.status == "input_too_large"
