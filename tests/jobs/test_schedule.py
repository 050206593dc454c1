"""Schedule expressions: occurrences, gaps, and what is refused."""

from __future__ import annotations

import pytest

from lockgate.jobs.schedule import ScheduleExpression, iso, parse_iso

WEEKDAYS = ScheduleExpression.parse("cron(17 6 ? * MON-FRI *)")


def test_weekday_cron_skips_the_weekend() -> None:
    # Friday 2 January 2026 to Tuesday the 6th
    times = [
        iso(t)
        for t in WEEKDAYS.occurrences(parse_iso("2026-01-02T00:00:00Z"), parse_iso("2026-01-06T23:59:00Z"))
    ]
    assert times == ["2026-01-02T06:17:00Z", "2026-01-05T06:17:00Z", "2026-01-06T06:17:00Z"]


def test_longest_gap_is_friday_to_monday_for_weekdays_and_the_interval_for_rates() -> None:
    assert WEEKDAYS.longest_gap() == 3 * 86_400
    assert ScheduleExpression.parse("rate(15 minutes)").longest_gap() == 900
    assert ScheduleExpression.parse("cron(0 3 ? * MON *)").longest_gap() == 7 * 86_400


def test_rate_occurrences_count_from_the_anchor() -> None:
    rate = ScheduleExpression.parse("rate(10 minutes)")
    assert list(rate.occurrences(0, 1800, anchor=0)) == [600, 1200, 1800]


def test_steps_lists_and_ranges() -> None:
    cron = ScheduleExpression.parse("cron(0/20 8-9 * * ? *)")
    times = [
        iso(t) for t in cron.occurrences(parse_iso("2026-01-01T00:00:00Z"), parse_iso("2026-01-01T12:00:00Z"))
    ]
    assert times == [f"2026-01-01T{h:02d}:{m:02d}:00Z" for h in (8, 9) for m in (0, 20, 40)]


@pytest.mark.parametrize(
    "text",
    [
        "cron(0 8 * * * *)",
        "cron(0 8 ? * ? *)",
        "cron(0 8 L * ? *)",
        "rate(0 minutes)",
        "every day",
        "cron(0 8 * *)",
    ],
)
def test_expressions_scheduler_would_refuse_or_we_do_not_support_raise(text: str) -> None:
    with pytest.raises(ValueError):
        ScheduleExpression.parse(text)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"expression": "every day"}, "rate"),
        ({"expression": "rate(1 day)", "catch_up": "twice"}, "catch_up"),
        ({"expression": "rate(1 day)", "owner": "me"}, "unknown"),
    ],
)
def test_a_bad_schedules_section_in_lockgate_toml_is_refused(body: dict[str, str], message: str) -> None:
    from lockgate.config import parse_config
    from lockgate.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        parse_config({"schedules": {"nightly": body}})


def test_a_schedules_section_becomes_a_job_per_task() -> None:
    from lockgate.config import parse_config
    from lockgate.jobs.registry import CatchUp, job_registry

    config = parse_config({"schedules": {"nightly": {"expression": "cron(0 1 * * ? *)", "catch_up": "once"}}})
    spec = job_registry(config)["nightly"]
    assert (spec.schedule, spec.catch_up) == ("cron(0 1 * * ? *)", CatchUp.ONCE)
