"""How far the offline judge can be trusted for a task: its agreement with held-out labels, measured now.

A task's held-out set is every calibration file in the workflows' ``evals/`` folder with
``task`` = the task and ``split = "held-out"`` (answers a person labelled and the judge was never
tuned on). ``lockgate eval`` with the offline judge puts the line this returns in its report, so a
gate that rests on judge checks says what its judge is worth.
"""

from __future__ import annotations

from pathlib import Path

from lockgate.evals import CaseFileError, Judge, calibrate, load_calibration, wilson
from lockgate.evals.calibrate import CalibrationSet
from lockgate.evals.cases import read_file

DEFAULT_MIN_AGREEMENT = 0.75  # when a held-out file states none: at worst one verdict in four wrong


def heldout_sets(task: str, directory: Path) -> list[CalibrationSet]:
    """The task's held-out calibration files in ``directory``."""
    found = []
    for path in sorted(directory.glob("*.toml")):
        try:
            raw = read_file(path)
        except CaseFileError:
            continue  # a broken case file is reported by the suite's own loading, not here
        if raw.get("split") == "held-out" and raw.get("task") == task:
            found.append(load_calibration(path))
    return found


def judge_note(task: str, judge: Judge, directory: Path) -> str:
    """One line for the report: the judge's held-out agreement against its stated minimum."""
    sets = heldout_sets(task, directory)
    if not sets:
        return (
            f"judge: WARNING the offline judge has no held-out labelled answers for {task!r} (a calibration "
            f'file with split = "held-out" in {directory}), so its verdicts in this gate are unmeasured'
        )
    results = [calibrate(labelled, judge) for labelled in sets]
    agreement = wilson(sum(r.agree for r in results), sum(r.total for r in results))
    minimum = max(DEFAULT_MIN_AGREEMENT if s.min_agreement is None else s.min_agreement for s in sets)
    files = ", ".join(Path(s.origin).name for s in sets)
    if agreement.low < minimum:
        return (
            f"judge: WARNING the offline judge agrees with {agreement.describe()} of held-out labels "
            f"({files}): the lower bound is under {minimum:.0%}, so the judge checks in this gate mean "
            "little; grade with --judge claude-… or improve the judge"
        )
    return (
        f"judge: the offline judge agrees with {agreement.describe()} of held-out labels ({files}); "
        f"the lower bound clears its {minimum:.0%} minimum"
    )
