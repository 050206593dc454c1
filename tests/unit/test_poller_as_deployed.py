"""The local SQS event source as deployed: as many pollers as the template's MaximumConcurrency, each
filling its batch within MaximumBatchingWindowInSeconds (what the latency benchmark runs)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from lockgate_infra.local.poller import SqsPoller
from lockgate_infra.local.sources import start_sqs_pollers
from lockgate_infra.local.template import LocalPlan

ROOT = Path(__file__).resolve().parents[2]


class TricklingQueue:
    """A fake SQS queue whose messages arrive a few per receive, with empty receives between."""

    def __init__(self, arrivals: list[int]) -> None:
        self._arrivals = list(arrivals)
        self._next = 0
        self.deleted: list[str] = []

    def receive_message(self, **_: Any) -> dict[str, Any]:
        count = self._arrivals.pop(0) if self._arrivals else 0
        messages = [self._message() for _ in range(count)]
        return {"Messages": messages} if messages else {}

    def delete_message_batch(self, Entries: list[dict[str, str]], **_: Any) -> dict[str, Any]:  # noqa: N803
        self.deleted += [entry["ReceiptHandle"] for entry in Entries]
        return {"Successful": Entries}

    def _message(self) -> dict[str, Any]:
        self._next += 1
        return {"MessageId": f"m{self._next}", "ReceiptHandle": f"r{self._next}", "Body": "{}"}


def test_given_a_batching_window_when_messages_trickle_in_then_one_invocation_gets_the_full_batch() -> None:
    # Given a queue where 10 messages arrive 3, then none, then 4, then 3 at a time
    queue = TricklingQueue([3, 0, 4, 0, 3])
    batches: list[int] = []
    done = threading.Event()

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        batches.append(len(event["Records"]))
        done.set()
        return {"batchItemFailures": []}

    # When a poller with a batch size of 10 and a long batching window takes them
    poller = SqsPoller(queue, "url", "arn:aws:sqs:us-east-1:1:q", invoke, batch_size=10, batching_window=60)
    poller.start()
    try:
        assert done.wait(10)
    finally:
        poller.stop()

    # Then the function was invoked once, with all ten, and all ten were deleted
    assert batches == [10]
    assert len(queue.deleted) == 10


def test_given_the_template_when_started_as_deployed_then_one_poller_per_allowed_invocation() -> None:
    # Given the real template's worker event source (BatchSize, window and MaximumConcurrency)
    plan = LocalPlan.from_file(ROOT / "template.yaml")
    (source,) = [s for s in plan.sqs_sources if s.function == "AgentWorkerFunction"]
    resources = {name: f"https://queue.local/{name}" for name in plan.queues}

    # When its pollers start as deployed, and as the local stack starts them by default
    def start(as_deployed: bool) -> list[SqsPoller]:
        return start_sqs_pollers(
            plan,
            resources,
            lambda _: TricklingQueue([]),
            lambda *_: None,
            lambda _: None,  # type: ignore[arg-type,return-value]
            wait_seconds=0,
            as_deployed=as_deployed,
        )

    deployed, default = start(True), start(False)
    for poller in (*deployed, *default):
        poller.stop()

    # Then as deployed there are MaximumConcurrency pollers on the Inbox queue, each with the window
    inbox = [p for p in deployed if p.function == "AgentWorkerFunction"]
    assert source.maximum_concurrency is not None and source.maximum_concurrency >= 2
    assert len(inbox) == source.maximum_concurrency
    assert {p.batching_window for p in inbox} == {source.maximum_batching_window} != {0.0}
    # And by default one poller that never waits to fill a batch
    assert [p.batching_window for p in default if p.function == "AgentWorkerFunction"] == [0.0]
