"""``lockgate eval``: run a task's eval cases, compare versions, calibrate a check, pick the cheapest model.

Exit codes: 0 the gate passed (or, for --compare/--retrieval, the comparison ran); 1 the gate
failed (a calibration under --gate, or no model cleared it with --cheapest); 2 the eval could not
run (unknown task or model, a malformed case file, no API key for claude-…, or a model API call
that failed: an outage scores nothing, so it is never reported as a failed gate).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from lockgate.errors import ConfigError
from lockgate.evals import CaseFileError, EvalReport, ResultsStore, calibrate, compare, load_calibration
from lockgate_infra.evals.models import EvalSetupError, Models
from lockgate_infra.evals.rig import ROOT, eval_prices, run_task_evals
from lockgate_infra.failures import one_line
from lockgate_infra.options import positive_int

RESULTS_DIR = ROOT / ".lockgate" / "evals"


def add_eval_parser(commands: Any, run: Callable[[argparse.Namespace], int]) -> None:
    """The ``eval`` subcommand."""
    # argparse %-formats help strings: a literal percent sign is written %%.
    sub = commands.add_parser(
        "eval", help="run a task's eval cases and report pass rates with 95%% intervals"
    )
    sub.add_argument("task", nargs="?", help="the task's name, e.g. support-inbox")
    sub.add_argument("--runs", type=int, default=3, help="trials per case (default 3)")
    sub.add_argument(
        "--model",
        default="shop",
        help="shop | gullible | package.module:factory (your own offline model) | shop@claude-… | task | "
        "claude-… (default shop)",
    )
    sub.add_argument(
        "--judge", default="stub", help="the judge for judge checks: stub (default), literal or claude-…"
    )
    sub.add_argument(
        "--gate", type=float, help="minimum for the overall 95%% lower bound (default: the case file's)"
    )
    sub.add_argument(
        "--cases", type=Path, help="the case file (default: the task's file in <workflows>/evals/)"
    )
    sub.add_argument("--only", action="append", metavar="NAME", help="only this case or tag (repeatable)")
    mode = sub.add_mutually_exclusive_group()
    mode.add_argument(
        "--compare", nargs=2, metavar=("A", "B"), help="two models, or prompt:FILE system prompts"
    )
    mode.add_argument("--calibrate", type=Path, metavar="FILE", help="check a check against labelled answers")
    mode.add_argument(
        "--cheapest", metavar="M1,M2,...", help="cheapest model whose lower bound clears the gate"
    )
    mode.add_argument(
        "--retrieval", action="store_true", help="the help-search retrieval eval (hit rate in top k)"
    )
    sub.add_argument(
        "--questions", type=Path, help="retrieval questions (default <workflows>/evals/retrieval.toml)"
    )
    sub.add_argument(
        "--chunk-sizes", default="10,20,40,120", help="retrieval: chunk sizes in words to compare"
    )
    sub.add_argument(
        "--k",
        type=positive_int,
        default=3,
        help="retrieval: a hit is the right passage in the top k (default 3)",
    )
    sub.add_argument(
        "--results", type=Path, default=RESULTS_DIR, help="where results are saved (.lockgate/evals)"
    )
    sub.add_argument("--no-save", action="store_true", help="do not save results")
    sub.set_defaults(run=run)


def run_eval(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Dispatch the eval modes; setup and case-file errors exit 2 with one clear line."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        if args.retrieval:
            from lockgate_infra.evals.retrieval import run_retrieval

            return run_retrieval(args.questions, _sizes(args.chunk_sizes), args.k, out)
        if args.gate is not None and not 0 <= args.gate <= 1:
            raise EvalSetupError("--gate is a fraction from 0 to 1, e.g. 0.8")
        if args.calibrate:
            return _calibrate(args, out)
        if not args.task:
            raise EvalSetupError("name the task to evaluate, e.g. `lockgate eval support-inbox`")
        if args.runs < 1:
            raise EvalSetupError("--runs must be at least 1")
        if args.compare:
            return _compare(args, out, err)
        if args.cheapest:
            return _cheapest(args, out, err)
        report = _suite(args, args.model, err)
        print(report.render(), file=out)
        return 0 if report.gate_passed else 1
    except (EvalSetupError, CaseFileError, ConfigError) as exc:  # ConfigError: e.g. a model without a price
        print(f"lockgate: {one_line(str(exc))}", file=err)
        return 2


def _suite(args: argparse.Namespace, variant: str, err: TextIO) -> EvalReport:
    model, system = args.model, None
    if variant.startswith("prompt:"):
        path = Path(variant.removeprefix("prompt:"))
        try:
            system = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise EvalSetupError(f"{variant}: cannot read the prompt file ({exc.strerror})") from exc
    else:
        model = variant
    report = run_task_evals(
        args.task,
        model=model,
        runs=args.runs,
        gate=args.gate,
        judge=args.judge,
        system=system,
        cases=args.cases,
        only=args.only,
        results_dir=None,
        progress=ProgressBar(err, variant),
    )
    if system is not None:
        report.model = f"{model} with {variant}"
    if not args.no_save:
        print(f"saved {ResultsStore(args.results).save(report)}", file=err)
    return report


def _compare(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    a, b = args.compare
    reports = [_suite(args, variant, err) for variant in (a, b)]
    for report in reports:
        print(report.render(), file=out, end="\n\n")
    versions = [f"{v} (prompt {r.prompt_version})" for v, r in zip((a, b), reports, strict=True)]
    print(compare(versions[0], reports[0].overall, versions[1], reports[1].overall).verdict(), file=out)
    return 0


def _cheapest(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    candidates = [m.strip() for m in args.cheapest.split(",") if m.strip()]
    if len(candidates) < 2:
        raise EvalSetupError("--cheapest needs at least two models, e.g. gullible@claude-haiku-5-5,shop")
    reports = [_suite(args, model, err) for model in candidates]
    width = max(len(m) for m in candidates)
    print(f"{'model':<{width}}  $/call     $/trial    pass rate (95% CI)          gate", file=out)
    for model, report in zip(candidates, reports, strict=True):
        trials = report.overall.trials or 1
        verdict = "clears" if report.gate_passed else "fails"
        print(
            f"{model:<{width}}  {report.cost_per_call:<9.5f}  {report.cost_usd / trials:<9.5f}  "
            f"{report.overall.describe():<26}  {verdict} {report.gate:.0%}",
            file=out,
        )
    good = [(r.cost_per_call, m) for m, r in zip(candidates, reports, strict=True) if r.gate_passed]
    if not good:
        print("no model is clearly good enough: none has its lower bound over the gate", file=out)
        return 1
    cost, model = min(good)
    print(f"cheapest model that is clearly good enough: {model} (${cost:.5f} per call)", file=out)
    return 0


def _calibrate(args: argparse.Namespace, out: TextIO) -> int:
    from contextlib import ExitStack

    labelled = load_calibration(args.calibrate)
    if args.task and labelled.task and args.task != labelled.task:
        raise EvalSetupError(f"{args.calibrate} calibrates task {labelled.task!r}, not {args.task!r}")
    judged = any(check.kind == "judge" for check in labelled.checks.values())
    with ExitStack() as stack:
        models = Models(stack, os.environ, eval_prices())
        result = calibrate(labelled, models.judge(args.judge) if judged else None)
        # The offline judge's figure next to the literal judge's it replaced: what calibration bought.
        before = calibrate(labelled, models.judge("literal")) if judged and args.judge == "stub" else None
    print(result.render(), file=out)
    if before is not None:
        print(f"before calibration (--judge literal): {before.agreement.describe()}", file=out)
    minimum = args.gate if args.gate is not None else labelled.min_agreement
    if minimum is not None and result.agreement.low < minimum:
        print(f"agreement lower bound {result.agreement.low:.1%} is below the gate {minimum:.0%}", file=out)
        return 1
    return 0


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise EvalSetupError(f"--chunk-sizes takes whole numbers of words, e.g. 40,80,120: {exc}") from exc
    if not sizes or any(size < 5 for size in sizes):
        raise EvalSetupError("--chunk-sizes needs at least one size of 5 words or more")
    return sizes


class ProgressBar:
    """A plain-text progress bar on stderr (redrawn in place on a terminal, else a line every 10%)."""

    def __init__(self, stream: TextIO, label: str, width: int = 24) -> None:
        self._stream = stream
        self._label = label
        self._width = width
        self._shown = -1
        self._tty = stream.isatty()

    def __call__(self, done: int, total: int, case: str) -> None:
        """Show ``done`` of ``total`` trials."""
        filled = self._width * done // max(total, 1)
        line = f"[{'#' * filled}{'.' * (self._width - filled)}] {done}/{total} {self._label}: {case[:40]}"
        if self._tty:
            self._stream.write(f"\r\x1b[K{line}" + ("\n" if done == total else ""))
        elif done == total or 10 * done // max(total, 1) > self._shown:
            self._shown = 10 * done // max(total, 1)
            self._stream.write(line + "\n")
        self._stream.flush()
