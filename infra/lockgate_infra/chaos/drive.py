"""Drive one seed: send the traffic, poll the queue like Lambda's event source mapping, let
reviewers decide, run the housekeeping jobs — all under injected faults — until nothing is left
to do, then check the invariants.

The event source mapping is AWS's side, so polling and deleting are fault-free; everything our
functions call is not. A crashed invocation leaves its whole batch to come back after the
queue's visibility timeout, as Lambda does.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from lockgate.errors import LockgateError
from lockgate.http import RawRequest, error_response
from lockgate.inbox.worker import RetryLater, Worker
from lockgate.webhooks.signing import sign
from lockgate_infra.chaos.faults import FaultPlan, WorkerCrash
from lockgate_infra.chaos.reviewers import Choices, Edits, review
from lockgate_infra.chaos.traffic import FORGED_SECRET, Delivery
from lockgate_infra.chaos.world import SOURCE_SECRETS, World

ROUND_SECONDS = 30  # the clock moves this much between rounds
OPEN_OPERATIONS = ("PENDING", "IN_PROGRESS", "UNKNOWN")
MAX_ROUNDS = 300  # two and a half virtual hours: far past every lease, visibility timeout and backoff cap
APPROVE_RATE = 0.7

Job = Callable[[World, FaultPlan], None]


@dataclass
class Tally:
    """What happened during a run, besides the end state."""

    rounds: int = 0
    posts: int = 0
    duplicates_absorbed: int = 0
    receives: int = 0
    redeliveries: int = 0
    crashes: int = 0
    unhandled: Counter[str] = field(default_factory=Counter)  # "function: exception type" our code let out
    choices: Choices = field(default_factory=Choices)  # what the reviewers chose


def drive(
    world: World,
    plan: FaultPlan,
    sends: Sequence[Delivery],
    jobs: Sequence[Job] = (),
    job_every: int = 4,
    racing: Job | None = None,
    approve_rate: float = APPROVE_RATE,
    edits: Edits | None = None,
    weather: Callable[[int], None] | None = None,
) -> Tally:
    """Run until quiescent (or MAX_ROUNDS); returns the tally.

    ``racing`` (the inbox sweep) may also run in the middle of a worker's processing, racing it.
    Reviewers approve an action with probability ``approve_rate``, else reject it; with ``edits``,
    they approve some with changes (``reviewers``). ``weather`` runs first in each round, with its
    number (faults of the run's own that come and go with time, such as a server's outage).
    """
    tally = Tally()
    pending = {(due, n) for n, send in enumerate(sends) for due in send.due}
    guard = partial(_guarded, tally)
    for round_no in range(MAX_ROUNDS):
        tally.rounds = round_no + 1
        if weather is not None:
            weather(round_no)
        for due, n in sorted(pending):
            if due <= round_no:
                pending.discard((due, n))
                retry_at = _post(world, plan, sends[n], tally)
                if retry_at is not None:
                    pending.add((round_no + retry_at, n))
        _poll(world, plan, tally, racing)
        review(world, plan, tally.choices, guard, approve_rate, edits)
        if round_no % job_every == 0:
            for job in jobs:
                with plan.active():
                    _guarded(tally, "jobs", partial(job, world, plan))
        if not pending and _quiescent(world):
            break
        world.clock.advance(ROUND_SECONDS)
    return tally


def _post(world: World, plan: FaultPlan, send: Delivery, tally: Tally) -> int | None:
    """One send by the provider; returns rounds until it retries, or None."""
    source = world.config.sources[send.source]
    body = send.body
    headers = sign(
        source,
        FORGED_SECRET if send.forged else SOURCE_SECRETS[send.source],
        body,
        int(world.clock.now()),
        send.delivery_id,
    )
    event = {
        "pathParameters": {"source": send.source},
        "headers": headers,
        "body": body.decode(),
        "isBase64Encoded": False,
    }
    tally.posts += 1
    with plan.active():
        try:
            response = world.receiver.receive(RawRequest.from_apigw_v2(event))
            status = response.status
            if status == 200 and json.loads(response.body).get("status") == "duplicate":
                tally.duplicates_absorbed += 1
        except LockgateError as exc:
            status = error_response(exc).status
        except WorkerCrash:
            status = 502  # the receiver died mid-request: API Gateway answers 502
        except Exception as exc:  # noqa: BLE001 - a Lambda error: API Gateway answers 500, the provider retries
            tally.unhandled[f"receiver: {type(exc).__name__}"] += 1
            status = 500
    send.answers.append(status)
    send.tries_left -= 1
    if status < 500 or send.tries_left <= 0:
        return None
    return int(2 ** (len(send.answers) - 1))  # the provider's backoff, in rounds


def _poll(world: World, plan: FaultPlan, tally: Tally, racing: Job | None) -> None:
    """Receive what is visible and invoke the worker, batch by batch, like the event source mapping."""
    sqs = world.client("sqs")
    while True:
        messages = sqs.receive_message(
            QueueUrl=world.names["InboxQueue"],
            MaxNumberOfMessages=10,
            AttributeNames=["ApproximateReceiveCount"],
        ).get("Messages", [])
        if not messages:
            return
        for message in messages:
            tally.receives += 1
            if int(message["Attributes"]["ApproximateReceiveCount"]) > 1:
                tally.redeliveries += 1
            try:
                done = _invoke(world, plan, world.workers[0], message, tally, racing)
            except WorkerCrash:
                tally.crashes += 1
                break  # the invocation died: the rest of its batch comes back after the visibility timeout
            if done:
                sqs.delete_message(QueueUrl=world.names["InboxQueue"], ReceiptHandle=message["ReceiptHandle"])


def _invoke(
    world: World,
    plan: FaultPlan,
    worker: Worker,
    message: dict[str, Any],
    tally: Tally,
    racing: Job | None = None,
) -> bool:
    """One record through one worker; True when the event source mapping would delete it."""
    pk = json.loads(message["Body"])["pk"]
    deadline = world.clock.now() + 90

    def redelivered() -> None:
        """Mid-processing: the sweep runs (racing this worker), or SQS redelivers to a second worker."""
        if racing is not None and plan.rng.random() < 0.5:
            plan.injected["sweep-race"] += 1
            with plan.active():
                _guarded(tally, "jobs", partial(racing, world, plan))
            return
        tally.redeliveries += 1
        try:
            _invoke(world, plan, world.workers[1], message, tally)
        except WorkerCrash:
            tally.crashes += 1

    with plan.active(reentry=redelivered if worker is world.workers[0] else None):
        try:
            worker.process(
                pk, message["ReceiptHandle"], remaining_seconds=lambda: deadline - world.clock.now()
            )
        except RetryLater:
            return False
        except WorkerCrash:
            raise
        except LockgateError:
            return False  # a domain error (e.g. the store unavailable): a batch item failure, retried
        except Exception as exc:  # noqa: BLE001 - a Lambda error: the record comes back after the visibility timeout
            tally.unhandled[f"worker: {type(exc).__name__}"] += 1
            return False
    return True


def _guarded(tally: Tally, function: str, call: Callable[[], Any]) -> None:
    """Run one invocation of a function whose failures the caller just retries later."""
    try:
        call()
    except WorkerCrash:
        tally.crashes += 1
    except LockgateError:
        pass  # a domain error the function reports as a clear answer
    except Exception as exc:  # noqa: BLE001 - an invocation error: counted, retried by the next round
        tally.unhandled[f"{function}: {type(exc).__name__}"] += 1


def queue_depth(world: World) -> int:
    """Messages in the inbox queue: visible, in flight or delayed."""
    attributes = world.client("sqs").get_queue_attributes(
        QueueUrl=world.names["InboxQueue"],
        AttributeNames=[
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ],
    )["Attributes"]
    return sum(int(value) for value in attributes.values())


def _quiescent(world: World) -> bool:
    if queue_depth(world):
        return False
    if world.review.listing():
        return False
    if any(item["status"]["S"] in ("received", "processing") for item in world.scan("InboxTable")):
        return False
    # A ledger entry left open (an executor that stopped mid-call) is the reconcile job's to settle,
    # through a person when the downstream cannot tell: not quiet until that has run its course.
    return not any(
        item["pk"]["S"].startswith("op#") and item.get("state", {}).get("S") in OPEN_OPERATIONS
        for item in world.scan("StateTable")
    )


def seeded(seed: int) -> random.Random:
    """The traffic's generator (separate from the fault plan's, so faults don't reshuffle traffic)."""
    return random.Random(seed * 7919 + 1)  # noqa: S311 - reproducible traffic, not security
