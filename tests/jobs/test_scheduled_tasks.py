"""Tasks on a schedule: one inbox event per occurrence, whatever Scheduler repeats."""

from __future__ import annotations

import json

from lockgate.config import ScheduleConfig
from lockgate.inbox.routing import Router
from lockgate.jobs.registry import job_registry
from tests.jobs.conftest import Rig

ALWAYS = lambda: 600.0  # noqa: E731


def _registry(rig: Rig, expression: str = "cron(17 6 ? * MON-FRI *)") -> dict:
    config = rig.config.__class__(
        sources=rig.config.sources, schedules={"refund-summary": ScheduleConfig(expression, "each")}
    )
    rig.config = config
    return job_registry(config)


def test_given_a_duplicate_scheduler_invocation_for_the_same_time_then_one_event_is_enqueued(
    rig: Rig,
) -> None:
    # Given the scheduled task's job
    runner = rig.runner(_registry(rig))

    # When Scheduler delivers the same occurrence twice (at-least-once), in two time formats
    first = runner.run("refund-summary", "2026-01-06T06:17:00Z", ALWAYS)
    second = runner.run("refund-summary", "2026-01-06T06:17:00+00:00", ALWAYS)

    # Then one inbox item with the stable id, and one pointer on the queue
    assert first.counts == {"enqueued": 1, "duplicate": 0}
    assert second.counts == {"enqueued": 0, "duplicate": 1}
    items = rig.aws.inbox_items()
    assert [i["pk"]["S"] for i in items] == ["schedule#refund-summary#2026-01-06T06:17:00Z"]
    assert items[0]["source"]["S"] == "schedule" and items[0]["event_type"]["S"] == "refund-summary"
    body = json.loads(items[0]["body"]["B"])
    assert body == {"schedule": "refund-summary", "scheduled_time": "2026-01-06T06:17:00Z"}
    messages = rig.aws.drain(rig.aws.queue_url)
    assert [json.loads(m["Body"])["pk"] for m in messages] == ["schedule#refund-summary#2026-01-06T06:17:00Z"]


def test_given_missed_weekday_mornings_then_each_missed_occurrence_is_enqueued_once(rig: Rig) -> None:
    # Given the summary ran on Friday 2 January 2026
    runner = rig.runner(_registry(rig))
    runner.run("refund-summary", "2026-01-02T06:17:00Z", ALWAYS)

    # When the schedule was off until Wednesday the 7th (and Wednesday's tick is delivered twice)
    runner.run("refund-summary", "2026-01-07T06:17:00Z", ALWAYS)
    runner.run("refund-summary", "2026-01-07T06:17:00Z", ALWAYS)

    # Then Monday and Tuesday were enqueued too (not the weekend), each exactly once
    keys = sorted(i["pk"]["S"] for i in rig.aws.inbox_items())
    assert keys == [
        "schedule#refund-summary#2026-01-02T06:17:00Z",
        "schedule#refund-summary#2026-01-05T06:17:00Z",
        "schedule#refund-summary#2026-01-06T06:17:00Z",
        "schedule#refund-summary#2026-01-07T06:17:00Z",
    ]
    assert len(rig.aws.drain(rig.aws.queue_url)) == 4


def test_given_a_task_triggered_by_a_schedule_then_routing_sends_the_event_to_it() -> None:
    # Given a router with a webhook task and a scheduled task
    router = Router()
    router.add("helpdesk", "*", lambda event, context: "support")
    router.add("schedule", "refund-summary", lambda event, context: "summary")

    # Then the schedule's event (source "schedule", event type = its name) goes to the task
    assert router.route("schedule", "refund-summary")(None, None) == "summary"  # type: ignore[arg-type]
    assert router.route("schedule", "other").__name__ == "no_task"
