"""The job runner: leases, crashed runs, deadlines and cursors, failures, catch-up, the queued run."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from lockgate.jobs.contract import JobContext, JobResources, JobResult
from lockgate.jobs.registry import CatchUp, Overlap
from lockgate.jobs.schedule import iso
from tests.jobs.conftest import Rig, spec
from tests.support import serialized_moto

ALWAYS = lambda: 600.0  # noqa: E731 - remaining seconds of a fresh invocation


class Counting:
    """A job that records every call (its scheduled time and cursor)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def __call__(self, ctx: JobContext) -> JobResult:
        self.calls.append((ctx.scheduled_time, ctx.cursor))
        return JobResult(done=True, counts={"seen": 1})

    def factory(self, resources: JobResources) -> Counting:
        return self


def test_given_two_concurrent_invocations_of_one_job_then_exactly_one_runs(rig: Rig) -> None:
    # Given a job that holds its lease until the second invocation has come and gone
    second_done = threading.Event()
    ran: list[str] = []

    def slow(ctx: JobContext) -> JobResult:
        ran.append(threading.current_thread().name)
        assert second_done.wait(10), "the second invocation never finished"
        return JobResult(counts={"seen": 1})

    runner = rig.runner({"slow": spec("slow", lambda r: slow)})
    outcomes: dict[str, str] = {}

    def invoke(label: str) -> None:
        outcomes[label] = runner.run("slow", "2026-01-01T00:05:00Z", ALWAYS).status
        if label == "second":
            second_done.set()

    # When both invocations run at once (moto's dispatch serialised, so conditions are atomic)
    with serialized_moto():
        first = threading.Thread(target=invoke, args=("first",), name="first")
        first.start()
        while not ran:
            threading.Event().wait(0.01)
        second = threading.Thread(target=invoke, args=("second",), name="second")
        second.start()
        second.join(10)
        first.join(10)

    # Then one ran, the other stepped aside cleanly; the row shows one success and no lease
    assert ran == ["first"]
    assert outcomes == {"first": "done", "second": "skipped"}
    assert rig.metrics.totals["JobSkipped"] == 1 and rig.metrics.totals["JobSucceeded"] == 1
    state = rig.state("slow")
    assert state.last_success_at == rig.clock.now() and state.lease_owner is None
    assert state.last_counts == {"seen": 1}


def test_given_a_crashed_run_holding_the_lease_then_the_next_run_waits_for_expiry_and_proceeds(
    rig: Rig,
) -> None:
    # Given a run that took the lease and died (the process never released it)
    job = Counting()
    runner = rig.runner({"sweep": spec("sweep", job.factory)}, timeout_seconds=300)
    now = rig.clock.now()
    assert rig.store.acquire("sweep", "dead-run", iso(now), now, now + 300 + 60).taken

    # When the next invocation comes while the lease is still valid
    assert runner.run("sweep", iso(now + 300), ALWAYS).status == "skipped"
    assert job.calls == []

    # Then after the lease (timeout + margin) expires, the next invocation runs and owns the row
    rig.clock.advance(361)
    assert runner.run("sweep", iso(now + 600), ALWAYS).status == "done"
    assert len(job.calls) == 1
    state = rig.state("sweep")
    assert state.lease_owner is None and state.last_success_at == rig.clock.now()


class Pages:
    """Ten items, one page each; every page takes 10 s of the (fake) clock."""

    def __init__(self, rig: Rig) -> None:
        self.rig = rig
        self.done: list[int] = []

    def __call__(self, ctx: JobContext) -> JobResult:
        position = int((ctx.cursor or {}).get("next", 0))
        while position < 10:
            if ctx.should_stop():
                return JobResult(done=False, cursor={"next": position}, counts={"items": 0})
            self.done.append(position)
            self.rig.clock.advance(10)
            position += 1
        return JobResult(done=True, counts={"items": 10})


def test_given_a_job_stopped_by_the_deadline_then_the_next_run_resumes_from_its_cursor(rig: Rig) -> None:
    # Given a job with 100 s of work and an invocation with 45 s left
    pages = Pages(rig)
    runner = rig.runner({"pages": spec("pages", lambda r: pages)})

    # When the first invocation runs out of time
    first = runner.run("pages", "2026-01-01T00:00:00Z", lambda: 45.0)

    # Then it stopped cleanly and saved where it got to
    assert first.status == "stopped"
    stopped_at = len(pages.done)
    assert 0 < stopped_at < 10
    assert rig.state("pages").cursor == {"next": stopped_at}
    assert rig.state("pages").lease_owner is None

    # When the next invocations run with enough time
    while runner.run("pages", iso(rig.clock.now()), lambda: 45.0).status == "stopped":
        pass

    # Then every item was done exactly once, in order, and the cursor is gone
    assert pages.done == list(range(10))
    assert rig.state("pages").cursor is None


def test_given_a_failing_job_then_the_error_is_raised_recorded_and_the_lease_released(rig: Rig) -> None:
    # Given a job that fails
    def broken(ctx: JobContext) -> JobResult:
        raise RuntimeError("downstream said no")

    runner = rig.runner({"broken": spec("broken", lambda r: broken)})

    # When it runs, the invocation fails (Scheduler retries, the Errors metric counts it)
    with pytest.raises(RuntimeError, match="downstream said no"):
        runner.run("broken", "2026-01-01T00:00:00Z", ALWAYS)

    # Then the failure is on the row, there is no heartbeat, and a retry may run at once
    state = rig.state("broken")
    assert state.last_error == "RuntimeError: downstream said no"
    assert state.last_success_at is None and state.lease_owner is None
    assert rig.metrics.totals["JobFailed"] == 1


def test_given_an_unknown_job_name_then_the_invocation_fails_naming_the_known_ones(rig: Rig) -> None:
    runner = rig.runner({"sweep": spec("sweep", Counting().factory)})
    with pytest.raises(Exception, match="known: sweep"):
        runner.run("nope", None, ALWAYS)


def test_given_missed_daily_runs_and_catch_up_each_then_every_missed_occurrence_runs_oldest_first(
    rig: Rig,
) -> None:
    # Given a daily job that last finished on 1 January
    job = Counting()
    runner = rig.runner({"daily": spec("daily", job.factory, "cron(5 0 * * ? *)", catch_up=CatchUp.EACH)})
    runner.run("daily", "2026-01-01T00:05:00Z", ALWAYS)

    # When the schedule was disabled for three days and fires again on the 5th
    outcome = runner.run("daily", "2026-01-05T00:05:00Z", ALWAYS)

    # Then the 2nd, 3rd and 4th run before the 5th, and the heartbeat is at the 5th
    assert [t for t, _ in job.calls] == [
        "2026-01-01T00:05:00Z",
        "2026-01-02T00:05:00Z",
        "2026-01-03T00:05:00Z",
        "2026-01-04T00:05:00Z",
        "2026-01-05T00:05:00Z",
    ]
    assert outcome.missed == 3 and outcome.runs == 4
    assert rig.state("daily").last_scheduled_time == "2026-01-05T00:05:00Z"
    assert rig.metrics.totals["JobMissedRuns"] == 3


def test_given_missed_runs_and_catch_up_once_then_one_run_covers_them_and_the_gap_is_reported(
    rig: Rig,
) -> None:
    # Given a 5-minute job that last ran at 00:00
    job = Counting()
    runner = rig.runner({"sweep": spec("sweep", job.factory)})
    runner.run("sweep", "2026-01-01T00:00:00Z", ALWAYS)

    # When the account was throttled for half an hour
    outcome = runner.run("sweep", "2026-01-01T00:30:00Z", ALWAYS)

    # Then one run, and five missed occurrences reported
    assert [t for t, _ in job.calls] == ["2026-01-01T00:00:00Z", "2026-01-01T00:30:00Z"]
    assert outcome.missed == 5
    assert rig.metrics.totals["JobMissedRuns"] == 5


def test_given_overlap_policy_queue_then_a_second_invocation_makes_the_running_one_run_again(
    rig: Rig,
) -> None:
    # Given a queue-one job whose first run is joined by a second invocation mid-way
    calls: list[str] = []
    runner_box: list[Any] = []

    def collect(ctx: JobContext) -> JobResult:
        calls.append(ctx.scheduled_time)
        if len(calls) == 1:  # while this run holds the lease, two more invocations arrive
            assert runner_box[0].run("collect", "2026-01-01T00:10:00Z", ALWAYS).status == "queued"
            assert runner_box[0].run("collect", "2026-01-01T00:20:00Z", ALWAYS).status == "skipped"
        return JobResult()

    runner = rig.runner({"collect": spec("collect", lambda r: collect, overlap=Overlap.QUEUE)})
    runner_box.append(runner)

    # When the first run finishes
    outcome = runner.run("collect", "2026-01-01T00:00:00Z", ALWAYS)

    # Then it ran once more for the queued invocation (only one waits), and nothing is left queued
    assert calls == ["2026-01-01T00:00:00Z", "2026-01-01T00:10:00Z"]
    assert outcome.runs == 2
    assert rig.state("collect").queued_time is None and rig.state("collect").lease_owner is None
    assert rig.metrics.totals["JobQueued"] == 1 and rig.metrics.totals["JobSkipped"] == 1
