"""Operating the inbox and reading runs through the `lockgate` CLI, on moto: every command is judged
by what it did to the DLQ, the Inbox table, the queue and the run records."""

from __future__ import annotations

import datetime as dt
import io
import json
import time
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import pytest

from lockgate.agent.runs import RunStore
from lockgate.errors import BadDelivery
from lockgate.inbox.models import Status
from lockgate.inbox.queue import encode_pointer
from lockgate.inbox.routing import InboxEvent, TaskContext
from lockgate_infra.cli import main as cli
from lockgate_infra.cli.runs import since_seconds
from lockgate_infra.cli.targets import Target
from tests.agent.conftest import rig, stub  # noqa: F401 - fixtures: the loop on moto, the stub model
from tests.agent.test_approvals import Approvals, propose_with_veto, veto_flow
from tests.agent.toolkit import Effects
from tests.integration.test_worker import never_called, store
from tests.support import Aws, Harness

DAY = 86_400


@pytest.fixture
def stack(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> Aws:
    """The CLI pointed at the moto account, as `--stack` would point it at a deployed one."""
    target = Target(aws.session, None, dict(aws.names), "the test stack")
    monkeypatch.setattr(cli, "_target", lambda args: target)
    return aws


def lockgate(*args: str) -> tuple[int, str, str]:
    """Run `lockgate ARGS`; (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = cli.main(list(args))
        except SystemExit as exc:  # argparse's own refusals (usage errors)
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def dead_letters(aws: Aws) -> int:
    """What the DLQ alarm sees: visible messages in the DLQ."""
    attrs = aws.client("sqs").get_queue_attributes(
        QueueUrl=aws.dlq_url, AttributeNames=["ApproximateNumberOfMessages"]
    )
    return int(attrs["Attributes"]["ApproximateNumberOfMessages"])


def letter_keys(aws: Aws) -> list[str]:
    """Every dead letter's body, read without consuming it (made visible again)."""
    sqs, bodies, handles = aws.client("sqs"), [], []
    while got := sqs.receive_message(QueueUrl=aws.dlq_url, MaxNumberOfMessages=10).get("Messages", []):
        bodies += [m["Body"] for m in got]
        handles += [m["ReceiptHandle"] for m in got]
    for handle in handles:
        sqs.change_message_visibility(QueueUrl=aws.dlq_url, ReceiptHandle=handle, VisibilityTimeout=0)
    return sorted(bodies)


def catch_up(harness: Harness) -> None:
    """Move the worker's fixed clock to the real time the CLI stamps its changes with."""
    harness.clock.advance(max(0.0, time.time() + 1 - harness.clock.now()))


def failing(harness: Harness, n: int) -> list[str]:
    """n deliveries the worker set aside as failed (a malformed body), each with its dead letter."""
    keys = store(harness, n)

    def malformed(event: InboxEvent, context: TaskContext) -> str:
        raise BadDelivery("not an order")

    harness.router.add("github", "push", malformed)
    worker = harness.worker()
    for pk in keys:
        worker.process(pk, "rh", never_called)
    harness.aws.drain(harness.aws.queue_url)  # the receiver's pointers: handled above
    return keys


def test_retry_removes_only_that_deliverys_letters_from_a_dlq_larger_than_one_batch(
    harness: Harness, stack: Aws
) -> None:
    # Given 23 failed deliveries, each with its dead letter, plus a second letter for the first one
    # (the queue's own redrive: a bare pointer) and a message that is not ours: 25 letters
    keys = failing(harness, 23)
    sqs = stack.client("sqs")
    sqs.send_message(QueueUrl=stack.dlq_url, MessageBody=encode_pointer(keys[0]))
    sqs.send_message(QueueUrl=stack.dlq_url, MessageBody="not a pointer")
    assert dead_letters(stack) == 25
    # When the operator retries the first delivery
    code, out, _ = lockgate("inbox", "retry", keys[0])
    # Then both its letters are gone, every other letter is still there and visible at once
    assert code == 0 and f"re-queued {keys[0]}" in out
    assert dead_letters(stack) == 23
    remaining = letter_keys(stack)
    assert not any(keys[0] + '"' in body for body in remaining) and "not a pointer" in remaining
    # And the delivery waits again with fresh attempts, its pointer on the inbox queue
    row = harness.store().get(keys[0])
    assert row.status is Status.RECEIVED and row.attempts == 0
    assert [json.loads(m["Body"])["pk"] for m in stack.drain(stack.queue_url)] == [keys[0]]
    # And when it fails again, the DLQ holds one letter for it, not two
    catch_up(harness)
    harness.worker().process(keys[0], "rh", never_called)
    assert dead_letters(stack) == 24


def test_redrive_sends_every_failure_round_again_and_empties_the_dlq_of_them(
    harness: Harness, stack: Aws
) -> None:
    # Given three failed deliveries with their dead letters
    keys = failing(harness, 3)
    assert dead_letters(stack) == 3
    # When the operator asks for a dry run, nothing changes and the count is printed
    code, out, _ = lockgate("inbox", "redrive", "--dry-run")
    assert code == 0 and out.strip().endswith("would redrive 3")
    assert dead_letters(stack) == 3
    assert {harness.store().get(pk).status for pk in keys} == {Status.FAILED}
    # When the operator redrives
    code, out, _ = lockgate("inbox", "redrive")
    # Then every one waits again with fresh attempts, is queued once, and the DLQ is empty
    assert code == 0 and out.strip().endswith("redrove 3")
    assert all(harness.store().get(pk).attempts == 0 for pk in keys)
    assert {harness.store().get(pk).status for pk in keys} == {Status.RECEIVED}
    assert sorted(json.loads(m["Body"])["pk"] for m in stack.drain(stack.queue_url)) == sorted(keys)
    assert dead_letters(stack) == 0
    # And running it again does nothing more
    code, out, _ = lockgate("inbox", "redrive")
    assert out.strip().endswith("redrove 0")
    assert stack.drain(stack.queue_url) == [] and dead_letters(stack) == 0


def test_replay_runs_a_done_delivery_again_as_a_new_recorded_item(harness: Harness, stack: Aws) -> None:
    # Given a delivery the worker finished
    seen: list[InboxEvent] = []

    def record(event: InboxEvent, context: TaskContext) -> str:
        seen.append(event)
        return f"handled as run {context.run_id}"

    (pk,) = store(harness, 1)
    harness.router.add("github", "push", record)
    harness.worker().process(pk, "rh", never_called)
    stack.drain(stack.queue_url)
    original = harness.store().get(pk)
    assert original.status is Status.DONE
    # When the operator replays it
    code, out, _ = lockgate("inbox", "replay", pk, "--by", "alice")
    # Then a new inbox item records the replay and who asked for it, and its pointer is queued
    assert code == 0 and f"as {pk}#replay1" in out
    replay = harness.store().get(f"{pk}#replay1")
    assert (replay.status, replay.replay_of, replay.replayed_by) == (Status.RECEIVED, pk, "alice")
    assert (replay.source, replay.event_type, replay.body) == (original.source, "push", original.body)
    assert [json.loads(m["Body"])["pk"] for m in stack.drain(stack.queue_url)] == [replay.pk]
    # And the worker routes it like the original, as a run of its own; the original is untouched
    catch_up(harness)
    outcome = harness.worker().process(replay.pk, "rh", never_called)
    assert outcome == f"handled as run run#{pk}#replay1"
    assert [e.delivery.pk for e in seen] == [pk, replay.pk] and seen[1].body == seen[0].body
    assert harness.store().get(pk) == original
    # And a second replay is another item of its own
    assert f"as {pk}#replay2" in lockgate("inbox", "replay", pk)[1]


def test_replay_refuses_what_is_not_done_in_one_line(harness: Harness, stack: Aws) -> None:
    (failed,) = failing(harness, 1)
    code, out, err = lockgate("inbox", "replay", failed)
    assert code == 2 and out == ""
    assert (
        err.startswith(f"lockgate: {failed} is failed; only done deliveries replay") and err.count("\n") == 1
    )
    code, _, err = lockgate("inbox", "replay", "github#no-such")
    assert code == 2 and err.startswith("lockgate: no delivery github#no-such in ") and err.count("\n") == 1
    assert stack.inbox_items() and len(stack.inbox_items()) == 1  # nothing was stored


def seed_runs(aws: Aws, clock: Any) -> None:
    """Three finished runs of two tasks, a day apart."""
    runs = RunStore(aws.client("dynamodb"), aws.state_table, clock)
    for run_id, task, status, cost in (
        ("helpdesk#a", "support-inbox", "completed", 0.0123),
        ("helpdesk#b", "support-inbox", "needs_person", 0.02),
        ("schedule#digest#1", "refund-summary", "completed", 0.5),
    ):
        run = runs.open(run_id, task, run_id)
        runs.finish(run, status, f"{task} {status}", {"cost_usd": cost})
        clock.advance(DAY)


def test_runs_list_newest_first_with_filters(stack: Aws, clock: Any) -> None:
    # Given three runs a day apart (the last one started at the clock's time minus a day)
    start = clock.now()
    seed_runs(stack, clock)
    # When the operator lists runs since before the first
    code, out, _ = lockgate("runs", "list", "--since", "2000-01-01")
    # Then they come newest first, one line each, with the start time in UTC and the cost
    lines = out.splitlines()
    assert code == 0 and [line.split()[0] for line in lines[:3]] == [
        "schedule#digest#1",
        "helpdesk#b",
        "helpdesk#a",
    ]
    assert lines[2].split()[1:3] == ["support-inbox", "completed"] and "$0.0123" in lines[2]
    assert " UTC " in lines[0] and lines[-1].startswith("3 of 3 run(s) since 2000-01-01 00:00:00 UTC")
    # And the filters narrow it
    out = lockgate(
        "runs", "list", "--since", "2000-01-01", "--task", "support-inbox", "--status", "completed"
    )[1]
    assert [line.split()[0] for line in out.splitlines()[:-1]] == ["helpdesk#a"]
    # And --since takes a UTC date (from its midnight) or an age counted back from now
    second_day = dt.datetime.fromtimestamp(start + DAY, dt.UTC).date().isoformat()
    out = lockgate("runs", "list", "--since", second_day)[1]
    assert [line.split()[0] for line in out.splitlines()[:-1]] == ["schedule#digest#1", "helpdesk#b"]
    assert since_seconds("36h", now=start) == start - 36 * 3600 and since_seconds("90m", now=0) == -5400


def test_runs_list_refuses_a_since_it_cannot_read(stack: Aws) -> None:
    code, out, err = lockgate("runs", "list", "--since", "yesterday")
    assert code == 2 and out == "" and "'yesterday' is not a date (2026-11-30) or an age (24h)" in err


def test_runs_show_tells_what_became_of_each_action_a_person_was_asked_about(
    rig: Any,  # noqa: F811 - the fixture imported above
    stack: Aws,
) -> None:
    # Given three runs that each asked a person to approve a payment: one approved and run,
    # one rejected, one still waiting
    flow = Approvals(rig, Effects())
    approved = flow.propose_payment(80, delivery="d-1")
    rejected = flow.propose_payment(90, delivery="d-2")
    flow.propose_payment(70, delivery="d-3")
    flow.approve(approved, "alice")
    flow.approve(rejected, "bob", "reject")
    flow.execute_all()
    assert len(flow.effects.paid) == 1
    # When the operator shows each run
    shown = {d: lockgate("runs", "show", f"github#{d}") for d in ("d-1", "d-2", "d-3")}
    # Then each asked call says who decided, when (UTC), and what happened after, not just "BLOCKED"
    asked = "asked a person (approval: payments over $50 need a person)"
    at = "2026-01-01 00:00:00 UTC"
    assert all(code == 0 and "BLOCKED" not in out for code, out, _ in shown.values())
    assert (
        f"{asked}: pay $80.00 -> approved by alice at {at} (via link); ran: SUCCEEDED at {at}\n"
        in (shown["d-1"][1])
    )
    assert f"  pay $90.00: rejected by bob at {at} (via link); will not run\n" in shown["d-2"][1]
    # (the fixed clock's proposals are long past their 24 h by the real clock the CLI reads)
    assert "pay $70.00: expired at 2026-01-02 00:00:00 UTC: nobody decided; will not run" in shown["d-3"][1]
    assert f"started {at}" in shown["d-1"][1]
    # And --json carries the same outcomes; an unknown run is one line and exit 2
    actions = json.loads(lockgate("runs", "show", "github#d-1", "--json")[1])["actions"]
    assert [(a["summary"], a["result"]) for a in actions] == [("pay $80.00", f"ran: SUCCEEDED at {at}")]
    code, _, err = lockgate("runs", "show", "github#nope")
    assert code == 2 and err == "lockgate: no run 'github#nope' (`lockgate runs list` shows recent ones)\n"
    # And --wait shows a finished run as it is, and gives up on one that never appears with the same line
    assert lockgate("runs", "show", "github#d-1", "--wait", "30") == shown["d-1"]
    assert lockgate("runs", "show", "github#nope", "--wait", "1") == (code, "", err)


def test_runs_show_tells_that_a_veto_window_action_ran_because_nobody_vetoed_it(
    rig: Any,  # noqa: F811 - the fixture imported above
    stack: Aws,
) -> None:
    # Given a reversible payment proposed with a 30-minute veto window, run when the window closed
    flow = veto_flow(rig, Effects())
    _, veto_event = propose_with_veto(flow)
    rig.clock.advance(1801)
    flow.executor(veto_event, TaskContext("x", lambda: 60.0, None, None, rig.metrics))  # type: ignore[arg-type]
    assert len(flow.effects.paid) == 1
    # When the operator shows the run, then it says nobody vetoed it, and that it ran
    out = lockgate("runs", "show", "github#d-1")[1]
    assert (
        "pay $80.00: nobody vetoed it by 2026-01-01 00:30:00 UTC; ran: SUCCEEDED at 2026-01-01 00:30:01 UTC"
        in out
    )
