"""Calibrating a check: run it over answers a person labelled, and count where it disagrees.

A calibration file (TOML) holds one check, or several by name, and the labelled answers::

    task = "support-inbox"   # optional: the task whose checks these are
    split = "held-out"       # optional: "development" (tuned on) or "held-out" (never tuned on)
    min_agreement = 0.75     # optional: agreement's lower bound must reach this (exit 1 if not)

    [check]                  # one check (any check a case can hold), or named ones:
    kind = "judge"           #   [checks.refund-reply] ... and check = "refund-reply" on each answer
    rubric = "..."

    [[answers]]
    text = "the answer (the transcript's final text)"
    label = "pass"           # what a person decided: pass or fail
    calls = [{ tool = "refund_order", args = { order_id = "A-2001" }, status = "proposed" }]   # optional
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockgate.evals.cases import CALL_STATUSES, CaseFileError, CheckSpec, parse_check, read_file
from lockgate.evals.checks import evaluate
from lockgate.evals.evidence import ToolCall, Transcript
from lockgate.evals.judge import Judge
from lockgate.evals.stats import Interval, wilson

SPLITS = ("development", "held-out")
_FIELDS = {"check", "checks", "answers", "description", "task", "split", "min_agreement"}


@dataclass(frozen=True)
class LabelledAnswer:
    """An answer, the person's verdict on it, and which of the file's checks it is for."""

    transcript: Transcript
    label: bool
    check: str = ""  # a name from [checks.NAME]; "" for a file's single [check]


@dataclass(frozen=True)
class CalibrationSet:
    """A calibration file: its checks by name, the labelled answers, and what the set is for."""

    checks: Mapping[str, CheckSpec]
    answers: Sequence[LabelledAnswer]
    origin: str = "<memory>"
    task: str | None = None
    split: str = ""
    min_agreement: float | None = None


@dataclass(frozen=True)
class Calibration:
    """How often the check agreed with the labels, and how it went wrong."""

    label: str  # what was calibrated, e.g. "judge 'rubric'" or "2 checks (a, b)"
    agree: int
    total: int
    false_pass: int  # the check passed an answer the person failed (the dangerous kind)
    false_fail: int  # the check failed an answer the person passed
    disagreements: Sequence[str]
    per_check: Mapping[str, Interval]  # by check name, when the file names its checks
    split: str = ""

    @property
    def agreement(self) -> Interval:
        """Agreement with its Wilson interval."""
        return wilson(self.agree, self.total)

    def render(self) -> str:
        """The text report."""
        which = f" ({self.split} set)" if self.split else ""
        lines = [f"calibrating {self.label} on {self.total} labelled answers{which}"]
        lines += [f"  {name}: {interval.describe()}" for name, interval in self.per_check.items()]
        lines += [
            f"agreement: {self.agreement.describe()}",
            f"false pass (check passed, person failed): {self.false_pass}",
            f"false fail (check failed, person passed): {self.false_fail}",
        ]
        lines += [f"  disagrees: {d}" for d in self.disagreements]
        return "\n".join(lines)


def load_calibration(path: str | Path) -> CalibrationSet:
    """Read and validate a calibration file."""
    raw = read_file(path)
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise CaseFileError(
            f"{path}: unknown field(s) {', '.join(unknown)}; expected {', '.join(sorted(_FIELDS))}"
        )
    checks = _checks(raw, str(path))
    answers_raw = raw.get("answers")
    if not isinstance(answers_raw, list) or not answers_raw:
        raise CaseFileError(f"{path}: no [[answers]]; add labelled answers to calibrate against")
    answers = [_answer(a, checks, f"{path}: answers[{i}]") for i, a in enumerate(answers_raw)]
    task, split, minimum = raw.get("task"), raw.get("split", ""), raw.get("min_agreement")
    if task is not None and (not isinstance(task, str) or not task):
        raise CaseFileError(f"{path}: 'task' must be a task's name")
    if split and split not in SPLITS:
        raise CaseFileError(f"{path}: 'split' must be one of {', '.join(SPLITS)}, got {split!r}")
    if minimum is not None and (isinstance(minimum, bool) or not isinstance(minimum, (int, float))):
        raise CaseFileError(f"{path}: 'min_agreement' must be a number from 0 to 1")
    if minimum is not None and not 0 <= minimum <= 1:
        raise CaseFileError(f"{path}: 'min_agreement' must be a number from 0 to 1, got {minimum!r}")
    return CalibrationSet(
        checks, answers, str(path), task, split, None if minimum is None else float(minimum)
    )


def _checks(raw: Mapping[str, Any], origin: str) -> dict[str, CheckSpec]:
    if ("check" in raw) == ("checks" in raw):
        raise CaseFileError(f"{origin}: give either one [check] or named [checks.NAME] tables")
    if "check" in raw:
        return {"": parse_check(raw["check"], f"{origin}: [check]")}
    named = raw["checks"]
    if not isinstance(named, dict) or not named:
        raise CaseFileError(f"{origin}: [checks] must hold at least one [checks.NAME] table")
    return {name: parse_check(spec, f"{origin}: [checks.{name}]") for name, spec in named.items()}


def _answer(raw: Any, checks: Mapping[str, CheckSpec], where: str) -> LabelledAnswer:
    if not isinstance(raw, dict) or set(raw) - {"text", "label", "calls", "note", "check"}:
        raise CaseFileError(f"{where}: expected a table with text, label and optional check, calls, note")
    label = raw.get("label")
    if label not in ("pass", "fail"):
        raise CaseFileError(f'{where}: \'label\' must be "pass" or "fail", got {label!r}')
    check = raw.get("check", "")
    if check not in checks:
        known = ", ".join(repr(n) for n in checks if n) or "none: the file has one [check]"
        raise CaseFileError(f"{where}: 'check' must name one of the file's checks ({known}), got {check!r}")
    calls = []
    for j, call in enumerate(raw.get("calls", [])):
        if not isinstance(call, dict) or not isinstance(call.get("tool"), str):
            raise CaseFileError(f"{where}.calls[{j}]: needs 'tool'")
        status = call.get("status", "made")
        if status not in CALL_STATUSES[:3]:
            raise CaseFileError(f"{where}.calls[{j}]: 'status' must be made, blocked or proposed")
        calls.append(ToolCall(call["tool"], dict(call.get("args", {})), status))
    return LabelledAnswer(Transcript(str(raw.get("text", "")), tuple(calls)), label == "pass", check)


def calibrate(labelled: CalibrationSet, judge: Judge | None = None) -> Calibration:
    """Run each answer's check on it and compare with the person's label."""
    false_pass = false_fail = 0
    agreed = {name: [0, 0] for name in labelled.checks}  # name -> [agree, total]
    disagreements = []
    for answer in labelled.answers:
        passed = evaluate(labelled.checks[answer.check], answer.transcript, judge).passed
        agreed[answer.check][1] += 1
        if passed == answer.label:
            agreed[answer.check][0] += 1
            continue
        false_pass += passed
        false_fail += not passed
        kind = ("false pass" if passed else "false fail") + (f" [{answer.check}]" if answer.check else "")
        disagreements.append(f"{kind}: {answer.transcript.final_text[:80]!r}")
    names = [n for n in labelled.checks if n]
    label = labelled.checks[""].describe() if not names else f"{len(names)} checks ({', '.join(names)})"
    per_check = {n: wilson(*agreed[n]) for n in names}
    agree = sum(a for a, _ in agreed.values())
    total = len(labelled.answers)
    return Calibration(label, agree, total, false_pass, false_fail, disagreements, per_check, labelled.split)
