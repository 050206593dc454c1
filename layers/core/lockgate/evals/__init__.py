"""Evals: run a task's cases repeatedly, grade them with checks, report pass rates with Wilson intervals.

The entry point for code (the CLI and the weekly scheduled eval job)::

    from lockgate.evals import load_suite, run_suite

    report = run_suite(
        suite,                 # Suite: load_suite("workflows/shop/evals/support_inbox.toml")
        run_case,              # (case, attempt) -> Transcript: runs the real task for the case's events
        runs=3,                # trials per case
        gate=None,             # None: the suite file's gate (the overall Wilson lower bound minimum)
        judge=None,            # a Judge for "judge" checks (ModelJudge over a ModelClient)
        model="shop",          # labels for the saved result
        prompt_version="",     # prompt_version(task.system_prompt(), [t.schema() for t in task.tools])
        progress=None,         # (done, total, case name) -> None
    ) -> EvalReport
    report.gate_passed         # False when the overall lower bound is under the gate or a case never passed
    report.summary()           # a few lines of text; report.render() for the per-case table
    ResultsStore(directory).save(report)   # JSON with model, prompt version, date, per-case counts

``lockgate_infra.evals.rig.run_task_evals(...)`` builds ``run_case`` on an isolated moto shop.
"""

from lockgate.evals.calibrate import Calibration, calibrate, load_calibration
from lockgate.evals.cases import Case, CaseFileError, CheckSpec, Suite, load_suite, parse_suite
from lockgate.evals.checks import CheckResult, evaluate
from lockgate.evals.evidence import ToolCall, Transcript, transcript_from_runs
from lockgate.evals.judge import Grade, Judge, ModelJudge, parse_verdict
from lockgate.evals.results import ResultsStore, prompt_version
from lockgate.evals.retrieval import Question, RetrievalScore, hit_rate, load_questions
from lockgate.evals.runner import CaseResult, EvalReport, run_suite
from lockgate.evals.stats import Comparison, Interval, compare, wilson

__all__ = [
    "Calibration",
    "Case",
    "CaseFileError",
    "CaseResult",
    "CheckResult",
    "CheckSpec",
    "Comparison",
    "EvalReport",
    "Interval",
    "Judge",
    "ModelJudge",
    "Question",
    "ResultsStore",
    "RetrievalScore",
    "Suite",
    "ToolCall",
    "Transcript",
    "Grade",
    "calibrate",
    "compare",
    "evaluate",
    "hit_rate",
    "load_calibration",
    "load_questions",
    "load_suite",
    "parse_suite",
    "parse_verdict",
    "prompt_version",
    "run_suite",
    "transcript_from_runs",
    "wilson",
]
