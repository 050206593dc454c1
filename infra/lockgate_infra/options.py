"""Argument types that refuse bad values while parsing, so a typo never reaches AWS or a traceback."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """A whole number of 1 or more (days, events, samples)."""
    return _whole_number(text, 1, None, "must be at least 1, not {}")


def port_number(text: str) -> int:
    """A TCP port, 0 to 65535 (0: any free port)."""
    return _whole_number(text, 0, 65_535, "a port is 0 to 65535, not {}")


def _whole_number(text: str, low: int, high: int | None, out_of_range: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < low or (high is not None and value > high):
        raise argparse.ArgumentTypeError(out_of_range.format(value))
    return value


def non_negative_float(text: str) -> float:
    """A number of 0 or more (milliseconds, seconds)."""
    return _number(text, 0.0)


def at_least_one(text: str) -> float:
    """A number of 1 or more (records per batch)."""
    return _number(text, 1.0)


def _number(text: str, low: float) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not low <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of {low:g} or more, not {text}")
    return value


def utc_time(text: str) -> str:
    """An ISO 8601 time, returned as UTC with a Z (what Scheduler sends as ``scheduled-time``)."""
    from lockgate.jobs.schedule import iso, parse_iso

    try:
        return iso(parse_iso(text))
    except (ValueError, OverflowError, OSError):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 time; use e.g. 2026-12-01T09:00:00Z"
        ) from None
