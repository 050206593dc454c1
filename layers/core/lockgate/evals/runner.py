"""Running a suite: each case N times, pass counts with Wilson intervals, common problems, the gate."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lockgate.clock import Clock, SystemClock
from lockgate.errors import LockgateError
from lockgate.evals.cases import Case, Suite
from lockgate.evals.checks import evaluate
from lockgate.evals.evidence import Transcript
from lockgate.evals.judge import Judge
from lockgate.evals.stats import Interval, wilson

# (case, attempt number from 0) -> what the run produced
RunCase = Callable[[Case, int], Transcript]
# (trials done, trials in all, case name)
Progress = Callable[[int, int, str], None]


@dataclass
class CaseResult:
    """One case over its runs."""

    name: str
    tags: Sequence[str]
    passes: int = 0
    trials: int = 0
    problems: Counter[str] = field(default_factory=Counter)
    cost_usd: float = 0.0
    model_calls: int = 0

    @property
    def interval(self) -> Interval:
        """Passes out of runs, with the 95% Wilson interval."""
        return wilson(self.passes, self.trials)

    def common_problems(self, n: int = 3) -> list[tuple[str, int]]:
        """The most frequent problems, most common first."""
        return self.problems.most_common(n)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "name": self.name,
            "tags": list(self.tags),
            **self.interval.as_dict(),
            "problems": dict(self.problems.most_common()),
            "cost_usd": round(self.cost_usd, 6),
            "model_calls": self.model_calls,
        }


@dataclass
class EvalReport:
    """A suite's results: what ``lockgate eval`` prints and saves, and what a scheduled job checks."""

    task: str
    model: str
    prompt_version: str
    date: str
    runs: int
    gate: float
    cases: list[CaseResult]
    judge: str = ""
    judge_cost_usd: float = 0.0
    notes: list[str] = field(default_factory=list)  # e.g. how far the judge can be trusted

    @property
    def overall(self) -> Interval:
        """Every trial of every case together."""
        return wilson(sum(c.passes for c in self.cases), sum(c.trials for c in self.cases))

    @property
    def gate_failures(self) -> list[str]:
        """Why the gate fails: the overall lower bound under the minimum, or a case that never passed."""
        reasons = []
        overall = self.overall
        if overall.low < self.gate:
            reasons.append(f"overall lower bound {overall.low:.1%} is below the gate {self.gate:.0%}")
        reasons += [
            f"case {c.name!r} passed 0 of {c.trials} runs" for c in self.cases if c.trials and not c.passes
        ]
        return reasons

    @property
    def gate_passed(self) -> bool:
        """True when the suite clears the gate."""
        return not self.gate_failures

    @property
    def cost_usd(self) -> float:
        """What the task's model calls cost (the judge's are in ``judge_cost_usd``)."""
        return round(sum(c.cost_usd for c in self.cases), 6)

    @property
    def model_calls(self) -> int:
        """The task's model calls over every trial."""
        return sum(c.model_calls for c in self.cases)

    @property
    def cost_per_call(self) -> float:
        """Average dollars per model call (0 when none were made)."""
        return self.cost_usd / self.model_calls if self.model_calls else 0.0

    def summary(self) -> str:
        """A few lines: the overall rate and interval, the gate, and why it failed."""
        verdict = "PASSED" if self.gate_passed else "FAILED"
        lines = [
            f"eval {self.task} [{self.model}, prompt {self.prompt_version}]: {self.overall.describe()}; "
            f"gate {self.gate:.0%} {verdict}",
        ]
        lines += [f"  - {reason}" for reason in self.gate_failures]
        return "\n".join(lines)

    def render(self) -> str:
        """The full text report: one line per case with its most common problems, then the summary."""
        width = max((len(c.name) for c in self.cases), default=4)
        lines = [f"{'case':<{width}}  passes  95% interval   problems (most common)"]
        for case in self.cases:
            ci = case.interval
            lines.append(
                f"{case.name:<{width}}  {case.passes:>2}/{case.trials:<3}  {ci.low:>4.0%} - {ci.high:<4.0%}"
            )
            lines += [f"{'':<{width}}      {count}x {problem}" for problem, count in case.common_problems()]
        lines.append(
            f"cost: ${self.cost_usd:.4f} over {self.model_calls} model calls "
            f"(${self.cost_per_call:.5f} per call); judge ${self.judge_cost_usd:.4f}"
        )
        lines += self.notes
        lines.append(self.summary())
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: what the results store saves."""
        return {
            "task": self.task,
            "model": self.model,
            "prompt_version": self.prompt_version,
            "date": self.date,
            "runs": self.runs,
            "gate": self.gate,
            "gate_passed": self.gate_passed,
            "gate_failures": self.gate_failures,
            "overall": self.overall.as_dict(),
            "cost_usd": self.cost_usd,
            "model_calls": self.model_calls,
            "cost_per_call_usd": round(self.cost_per_call, 8),
            "judge": self.judge,
            "judge_cost_usd": round(self.judge_cost_usd, 6),
            "notes": list(self.notes),
            "cases": [c.as_dict() for c in self.cases],
        }


def run_suite(
    suite: Suite,
    run_case: RunCase,
    *,
    runs: int = 3,
    gate: float | None = None,
    judge: Judge | None = None,
    model: str = "",
    prompt_version: str = "",
    judge_name: str = "",
    progress: Progress | None = None,
    clock: Clock | None = None,
) -> EvalReport:
    """Run every case ``runs`` times through ``run_case`` and grade each trial with its checks.

    A trial passes when every check passes. A run that fails with a Lockgate error (a model
    outage, a store error) is a failed trial with that error as its problem; anything else is a
    bug in the rig and propagates.
    """
    if runs < 1:
        raise ValueError("runs must be at least 1")
    clock = clock or SystemClock()
    report = EvalReport(
        task=suite.task,
        model=model,
        prompt_version=prompt_version,
        date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock.now())),
        runs=runs,
        gate=suite.gate if gate is None else gate,
        cases=[],
        judge=judge_name,
    )
    total, done = runs * len(suite.cases), 0
    for case in suite.cases:
        result = CaseResult(case.name, case.tags)
        report.cases.append(result)
        for attempt in range(runs):
            problems = _trial(case, attempt, run_case, judge, result, report)
            result.trials += 1
            result.passes += not problems
            result.problems.update(problems)
            done += 1
            if progress is not None:
                progress(done, total, case.name)
    return report


def _trial(
    case: Case, attempt: int, run_case: RunCase, judge: Judge | None, result: CaseResult, report: EvalReport
) -> list[str]:
    try:
        transcript = run_case(case, attempt)
    except LockgateError as exc:
        return [f"run failed: {type(exc).__name__}: {str(exc)[:120]}"]
    result.cost_usd += transcript.cost_usd
    result.model_calls += transcript.model_calls
    problems = []
    for check in case.checks:
        outcome = evaluate(check, transcript, judge)
        report.judge_cost_usd += outcome.cost_usd
        if not outcome.passed:
            problems.append(outcome.problem)
    if problems and not transcript.calls:
        # "no such call" alone does not say why: the model's last words usually do (e.g. an offline
        # model saying it was written for another task).
        problems.append(f"the model called no tool; it said: {transcript.final_text[:160]!r}")
    return problems
