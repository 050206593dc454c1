"""Running one check against a transcript: a pass, or a short problem that reads the same across runs."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lockgate.evals.cases import CheckSpec
from lockgate.evals.evidence import ToolCall, Transcript
from lockgate.evals.judge import Judge

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class CheckResult:
    """Whether the check passed, and what was wrong when it did not."""

    passed: bool
    problem: str = ""
    cost_usd: float = 0.0


def evaluate(check: CheckSpec, transcript: Transcript, judge: Judge | None = None) -> CheckResult:
    """Apply one check; a judge check without a judge is a configuration error."""
    label = check.describe()
    if check.kind in ("call", "no_call"):
        matching = [c for c in transcript.calls if call_matches(c, check)]
        if check.kind == "call":
            return CheckResult(True) if matching else CheckResult(False, f"{label}: no such call")
        return (
            CheckResult(True)
            if not matching
            else CheckResult(False, f"{label}: {_offence(matching[0], check)}")
        )
    text = transcript.subject(check.subject, str(check.get("status", "made")))
    if check.kind == "judge":
        if judge is None:
            raise ValueError("a judge check needs a judge")
        verdict = judge.grade(str(check.get("rubric")), text)
        if verdict.passed:
            return CheckResult(True, cost_usd=verdict.cost_usd)
        return CheckResult(False, f"{label}: judge said {verdict.outcome.upper()}", verdict.cost_usd)
    problem = _text_problem(check, text)
    return CheckResult(problem is None, f"{label}: {problem}" if problem else "")


def _offence(call: ToolCall, check: CheckSpec) -> str:
    """How a forbidden call happened, with only the arguments the check names (so problems group)."""
    how = "made" if call.status == "made" else f"{call.status} ({call.check})"
    named = [*check.get("args", {}), *check.get("args_not", {})]
    shown = ", ".join(f"{k}={str(call.args.get(k))[:60]!r}" for k in named)
    return f"{how}" + (f" with {shown}" if shown else "")


def _text_problem(check: CheckSpec, text: str) -> str | None:
    if check.kind in ("contains", "avoids"):
        wanted = check.get("text")
        needles = wanted if isinstance(wanted, list) else [wanted]
        sensitive = bool(check.get("case_sensitive", False))
        hay = text if sensitive else text.lower()
        found = [n for n in needles if (n if sensitive else n.lower()) in hay]
        if check.kind == "contains":
            missing = [n for n in needles if n not in found]
            return f"missing {', '.join(map(repr, missing))}" if missing else None
        return f"found {', '.join(map(repr, found))}" if found else None
    if check.kind == "word_count":
        words = len(text.split())
        low, high = check.get("min"), check.get("max")
        if low is not None and words < low:
            return f"too short ({_bucket(words)} words)"
        if high is not None and words > high:
            return f"too long ({_bucket(words)} words)"
        return None
    if check.kind == "regex":
        matched = re.search(str(check.get("pattern")), text) is not None
        if matched == bool(check.get("must_match", True)):
            return None
        return "no match" if not matched else "matched"
    if check.kind == "json_keys":
        value = extract_json(text)
        if not isinstance(value, dict):
            return "no JSON object"
        missing = [k for k in check.get("keys") if k not in value]
        return f"missing keys {', '.join(missing)}" if missing else None
    raise ValueError(f"unknown check kind {check.kind!r}")  # pragma: no cover - validated on load


def _bucket(words: int) -> str:
    """Word counts rounded to tens, so "too long" problems group across runs."""
    return str(words) if words < 10 else f"~{round(words, -1)}"


def extract_json(text: str) -> Any:
    """The first JSON object in the text: inside a code fence, or anywhere (chatty text around it)."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for candidate in candidates:
        for start, char in enumerate(candidate):
            if char != "{":
                continue
            try:
                value, _ = _DECODER.raw_decode(candidate, start)
            except ValueError:
                continue
            return value
    return None


def call_matches(call: ToolCall, check: CheckSpec) -> bool:
    """Tool, status and arguments as the check asks (``args`` equal, ``args_not`` present and different)."""
    default = "made" if check.kind == "call" else "attempted"
    status = check.get("status", default)
    statuses = status if isinstance(status, list) else [status]
    if call.tool != check.get("tool") or not ("attempted" in statuses or call.status in statuses):
        return False
    wanted: Mapping[str, Any] = check.get("args", {})
    unwanted: Mapping[str, Any] = check.get("args_not", {})
    return all(same(call.args.get(k), v) for k, v in wanted.items()) and all(
        k in call.args and not same(call.args[k], v) for k, v in unwanted.items()
    )


def same(actual: Any, expected: Any) -> bool:
    """Equal as the model would mean it: strings without case or surrounding space, numbers by value."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return actual is expected
    if isinstance(expected, (int, float)) or isinstance(actual, (int, float)):
        try:
            return float(actual) == float(expected)
        except (TypeError, ValueError):
            return False
    if isinstance(expected, str) and isinstance(actual, str):
        return actual.strip().lower() == expected.strip().lower()
    return bool(actual == expected)
