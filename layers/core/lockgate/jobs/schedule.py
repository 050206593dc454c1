"""EventBridge Scheduler expressions (``rate(...)``, ``cron(...)``, UTC): occurrences and gaps.

Used for catch-up (which occurrences fell between the last success and now), for the overdue
threshold of a job's heartbeat, and by the local scheduler. ``L``, ``W`` and ``#`` are not
supported: a schedule that needs them raises ValueError here, and a test reads every schedule.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_RATE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")
_CRON = re.compile(r"^cron\((.+)\)$")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86_400}
_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")  # EventBridge: 1 = Sunday
_SEARCH_DAYS = 800  # a cron with no occurrence in this many days is treated as never firing


@dataclass(frozen=True)
class _Field:
    low: int
    high: int
    names: tuple[str, ...] = ()

    def parse(self, text: str) -> frozenset[int] | None:
        """The allowed values; None for ``?`` (no constraint)."""
        if text == "?":
            return None
        values: set[int] = set()
        for part in text.split(","):
            base, _, step_text = part.partition("/")
            step = int(step_text) if step_text else 1
            if base == "*":
                start, end = self.low, self.high
            elif "-" in base:
                first, _, last = base.partition("-")
                start, end = self._value(first), self._value(last)
            else:
                start = self._value(base)
                end = self.high if step_text else start
            if step < 1 or start > end:
                raise ValueError(f"bad cron field {text!r}")
            values.update(range(start, end + 1, step))
        return frozenset(values)

    def _value(self, token: str) -> int:
        upper = token.upper()
        if upper in self.names:
            return self.names.index(upper) + self.low
        if not token.isdigit():
            raise ValueError(f"unsupported cron value {token!r} (L, W and # are not supported)")
        value = int(token)
        if not self.low <= value <= self.high:
            raise ValueError(f"cron value {value} outside {self.low}-{self.high}")
        return value


_FIELDS = (
    _Field(0, 59),
    _Field(0, 23),
    _Field(1, 31),
    _Field(1, 12, _MONTHS),
    _Field(1, 7, _DAYS),
    _Field(1970, 2199),
)


@dataclass(frozen=True)
class ScheduleExpression:
    """A parsed ``rate(...)`` or ``cron(...)`` expression, evaluated in UTC."""

    text: str
    interval: int | None = None  # seconds, for rate()
    fields: tuple[frozenset[int] | None, ...] = ()

    @classmethod
    def parse(cls, text: str) -> ScheduleExpression:
        """Parse an expression; ValueError says what is wrong."""
        text = text.strip()
        rate = _RATE.match(text)
        if rate:
            count = int(rate.group(1))
            if count < 1:
                raise ValueError(f"{text}: a rate must be at least 1")
            return cls(text, interval=count * _UNIT_SECONDS[rate.group(2).rstrip("s")])
        cron = _CRON.match(text)
        if not cron:
            raise ValueError(f"{text!r} is not a rate(...) or cron(...) expression")
        parts = cron.group(1).split()
        if len(parts) != 6:
            raise ValueError(f"{text}: cron needs 6 fields (minutes hours day month weekday year)")
        fields = tuple(spec.parse(part) for spec, part in zip(_FIELDS, parts, strict=True))
        if fields[0] is None or fields[1] is None or fields[3] is None or fields[5] is None:
            raise ValueError(f"{text}: '?' is only allowed in the day-of-month or day-of-week field")
        if (fields[2] is None) == (fields[4] is None):
            raise ValueError(f"{text}: exactly one of day-of-month and day-of-week must be '?'")
        return cls(text, fields=fields)

    def occurrences(self, after: float, until: float, *, anchor: float | None = None) -> Iterator[float]:
        """Epoch seconds of each occurrence with ``after < t <= until``, oldest first.

        A rate schedule has no fixed phase (Scheduler counts from when it was created), so its
        occurrences are counted from ``anchor`` (default ``after``): anchor + k × interval.
        """
        if self.interval is not None:
            start = after if anchor is None else anchor
            k = max(1, int((after - start) // self.interval) + 1)
            while start + k * self.interval <= until:
                if start + k * self.interval > after:
                    yield start + k * self.interval
                k += 1
            return
        yield from self._cron_between(after, until)

    def next_after(self, moment: float) -> float | None:
        """The first occurrence after ``moment`` (None if the cron never fires again)."""
        return next(self.occurrences(moment, moment + _SEARCH_DAYS * 86_400), None)

    def longest_gap(self) -> int:
        """The longest wait between two occurrences, in seconds (e.g. Friday to Monday for weekdays)."""
        if self.interval is not None:
            return self.interval
        start = datetime(2026, 1, 1, tzinfo=UTC).timestamp()  # any fixed fortnight-plus sample works
        times = list(self.occurrences(start, start + 35 * 86_400))
        if len(times) < 2:
            return 366 * 86_400
        return int(max(b - a for a, b in zip(times, times[1:], strict=False)))

    def _cron_between(self, after: float, until: float) -> Iterator[float]:
        minutes, hours, days, months, weekdays, years = self.fields
        assert minutes is not None and hours is not None and months is not None and years is not None
        moment = datetime.fromtimestamp(after, UTC).replace(second=0, microsecond=0)
        day = moment.replace(hour=0, minute=0)
        end = datetime.fromtimestamp(until, UTC)
        while day <= end:
            eventbridge_weekday = (day.isoweekday() % 7) + 1  # Sunday = 1
            if (
                day.year in years
                and day.month in months
                and (days is None or day.day in days)
                and (weekdays is None or eventbridge_weekday in weekdays)
            ):
                for hour in sorted(hours):
                    for minute in sorted(minutes):
                        at = day.replace(hour=hour, minute=minute).timestamp()
                        if after < at <= until:
                            yield at
            day += timedelta(days=1)


def iso(moment: float) -> str:
    """Epoch seconds as ISO 8601 UTC with a Z, as Scheduler writes ``scheduled-time``."""
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> float:
    """An ISO 8601 time (``...Z`` or with an offset) as epoch seconds; ValueError if it is not one."""
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
