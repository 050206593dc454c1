"""Calibrating a check: run it over answers a person labelled, and count where it disagrees.

A calibration file (TOML)::

    [check]                  # any check a case can hold
    kind = "judge"
    rubric = "..."

    [[answers]]
    text = "the answer (the transcript's final text)"
    label = "pass"           # what a person decided: pass or fail
    calls = [{ tool = "refund_order", args = { order_id = "A-2001" }, status = "proposed" }]   # optional
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockgate.evals.cases import CALL_STATUSES, CaseFileError, CheckSpec, parse_check, read_file
from lockgate.evals.checks import evaluate
from lockgate.evals.evidence import ToolCall, Transcript
from lockgate.evals.judge import Judge
from lockgate.evals.stats import Interval, wilson


@dataclass(frozen=True)
class LabelledAnswer:
    """An answer and the person's verdict on it."""

    transcript: Transcript
    label: bool


@dataclass(frozen=True)
class Calibration:
    """How often the check agreed with the labels, and how it went wrong."""

    check: CheckSpec
    agree: int
    total: int
    false_pass: int  # the check passed an answer the person failed (the dangerous kind)
    false_fail: int  # the check failed an answer the person passed
    disagreements: Sequence[str]

    @property
    def agreement(self) -> Interval:
        """Agreement with its Wilson interval."""
        return wilson(self.agree, self.total)

    def render(self) -> str:
        """The text report."""
        lines = [
            f"calibrating {self.check.describe()} on {self.total} labelled answers",
            f"agreement: {self.agreement.describe()}",
            f"false pass (check passed, person failed): {self.false_pass}",
            f"false fail (check failed, person passed): {self.false_fail}",
        ]
        lines += [f"  disagrees: {d}" for d in self.disagreements]
        return "\n".join(lines)


def load_calibration(path: str | Path) -> tuple[CheckSpec, list[LabelledAnswer]]:
    """Read and validate a calibration file."""
    raw = read_file(path)
    unknown = sorted(set(raw) - {"check", "answers", "description"})
    if unknown:
        raise CaseFileError(f"{path}: unknown field(s) {', '.join(unknown)}; expected check, answers")
    check = parse_check(raw.get("check"), f"{path}: [check]")
    answers_raw = raw.get("answers")
    if not isinstance(answers_raw, list) or not answers_raw:
        raise CaseFileError(f"{path}: no [[answers]]; add labelled answers to calibrate against")
    return check, [_answer(a, f"{path}: answers[{i}]") for i, a in enumerate(answers_raw)]


def _answer(raw: Any, where: str) -> LabelledAnswer:
    if not isinstance(raw, dict) or set(raw) - {"text", "label", "calls", "note"}:
        raise CaseFileError(f"{where}: expected a table with text, label and optional calls, note")
    label = raw.get("label")
    if label not in ("pass", "fail"):
        raise CaseFileError(f'{where}: \'label\' must be "pass" or "fail", got {label!r}')
    calls = []
    for j, call in enumerate(raw.get("calls", [])):
        if not isinstance(call, dict) or not isinstance(call.get("tool"), str):
            raise CaseFileError(f"{where}.calls[{j}]: needs 'tool'")
        status = call.get("status", "made")
        if status not in CALL_STATUSES[:3]:
            raise CaseFileError(f"{where}.calls[{j}]: 'status' must be made, blocked or proposed")
        calls.append(ToolCall(call["tool"], dict(call.get("args", {})), status))
    return LabelledAnswer(Transcript(str(raw.get("text", "")), tuple(calls)), label == "pass")


def calibrate(check: CheckSpec, answers: Sequence[LabelledAnswer], judge: Judge | None = None) -> Calibration:
    """Run the check on each labelled answer and compare."""
    agree = false_pass = false_fail = 0
    disagreements = []
    for answer in answers:
        passed = evaluate(check, answer.transcript, judge).passed
        if passed == answer.label:
            agree += 1
            continue
        if passed:
            false_pass += 1
        else:
            false_fail += 1
        kind = "false pass" if passed else "false fail"
        disagreements.append(f"{kind}: {answer.transcript.final_text[:80]!r}")
    return Calibration(check, agree, len(answers), false_pass, false_fail, disagreements)
