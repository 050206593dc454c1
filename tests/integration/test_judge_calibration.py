"""The offline judge's calibration end to end: `lockgate eval --calibrate` on the shipped labelled sets,
the figures the README quotes, and the `judge:` line an eval report carries about its judge."""

from __future__ import annotations

import re
import shlex
from contextlib import ExitStack
from pathlib import Path

import pytest

from lockgate.evals import Grade, load_calibration
from lockgate_infra.cli.main import main
from lockgate_infra.evals.judge_trust import judge_note
from lockgate_infra.evals.models import Models
from lockgate_infra.evals.rig import ROOT, evals_dir
from tests.support import PRICES

HELD_OUT = "workflows/shop/evals/judge_heldout.toml"
README = (ROOT / "docs" / "evals.md").read_text(encoding="utf-8")  # the Evals page quotes the figures
_COMMAND = re.compile(r"^(?:\$ )?\.venv/bin/lockgate (eval [^\n#]*--calibrate [^\n#]*?)\s*$", re.MULTILINE)
_ROW = re.compile(r"^\| `(stub|literal)` [^|]*\| (\d+)/(\d+) = [^|]*\| (\d+)/(\d+) = [^|]*\|$", re.MULTILINE)


def run(capsys: pytest.CaptureFixture[str], command: str) -> tuple[int, str, str]:
    code = main(shlex.split(command))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def quoted() -> dict[str, tuple[int, int, int, int]]:
    """The README's table: judge -> (held-out agreed, held-out total, development agreed, total)."""
    rows = {m.group(1): tuple(int(g) for g in m.groups()[1:]) for m in _ROW.finditer(README)}
    assert set(rows) == {"stub", "literal"}, "the README's judge table is missing or reshaped"
    return rows  # type: ignore[return-value]


def agreement(out: str) -> tuple[int, int]:
    found = re.search(r"^agreement: (\d+)/(\d+) = ", out, re.MULTILINE)
    assert found, out
    return int(found.group(1)), int(found.group(2))


def test_every_calibrate_command_in_the_readme_runs_and_agrees_at_least_as_quoted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given the README's calibrate commands (held-out first) and its table of figures
    commands = _COMMAND.findall(README)
    assert [Path(c.split()[-1]).name for c in commands] == ["judge_heldout.toml", "judge_development.toml"]
    stub, literal = quoted()["stub"], quoted()["literal"]
    for command, (agreed, total), (was, _) in zip(
        commands, ((stub[0], stub[1]), (stub[2], stub[3])), ((literal[0], 0), (literal[2], 0)), strict=True
    ):
        # When each runs, Then it exits 0 and the offline judge agrees at least as often as the README says
        code, out, _ = run(capsys, command)
        assert code == 0, out
        measured = agreement(out)
        assert measured[1] == total and measured[0] >= agreed, (
            f"{command}: {measured} < README {agreed}/{total}"
        )
        # And the literal judge it replaced is shown next to it, at the README's figure
        assert f"before calibration (--judge literal): {was}/{total} = " in out


def test_the_held_out_report_names_each_rubric_and_every_disagreement(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, f"eval support-inbox --calibrate {HELD_OUT}")
    lines = out.splitlines()
    assert code == 0
    assert (
        lines[0]
        == "calibrating 2 checks (where-is-my-order, refund-reply) on 62 labelled answers (held-out set)"
    )
    assert lines[1].startswith("  where-is-my-order: ") and lines[2].startswith("  refund-reply: ")
    passes, fails = (
        int(line.rsplit(": ", 1)[1]) for line in lines if line.startswith(("false pass", "false fail"))
    )
    disagreements = [line for line in lines if line.startswith("  disagrees: ")]
    assert len(disagreements) == passes + fails == 62 - agreement(out)[0]


def test_the_files_minimum_agreement_is_a_gate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # Given a copy of the held-out set that demands more than the judge's lower bound
    strict = tmp_path / "strict.toml"
    strict.write_text((ROOT / HELD_OUT).read_text().replace("min_agreement = 0.75", "min_agreement = 0.99"))
    # When it is calibrated, Then it exits 1 saying so
    code, out, _ = run(capsys, f"eval support-inbox --calibrate {strict}")
    assert code == 1 and "is below the gate 99%" in out


def test_a_set_for_another_task_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, f"eval other-task --calibrate {HELD_OUT}")
    assert code == 2 and err == f"lockgate: {HELD_OUT} calibrates task 'support-inbox', not 'other-task'\n"


class AlwaysPass:
    """A judge that passes everything (agrees only with the 'pass' labels)."""

    def grade(self, rubric: str, answer: str) -> Grade:
        return Grade("pass")


def test_the_judge_note_says_what_the_judge_is_worth_and_warns_under_the_minimum(tmp_path: Path) -> None:
    # Given the shipped held-out set, When the offline judge is measured on it, Then it clears the minimum
    with ExitStack() as stack:
        note = judge_note("support-inbox", Models(stack, {}, PRICES).judge("stub"), evals_dir())
    assert re.fullmatch(
        r"judge: the offline judge agrees with \d+/62 = .* of held-out labels \(judge_heldout.toml\); "
        r"the lower bound clears its 75% minimum",
        note,
    ), note
    # Given a judge that passes everything, Then the note is a warning: the gate's judge checks mean little
    warning = judge_note("support-inbox", AlwaysPass(), evals_dir())
    labelled_pass = sum(a.label for a in load_calibration(ROOT / HELD_OUT).answers)
    assert warning.startswith(f"judge: WARNING the offline judge agrees with {labelled_pass}/62 = ")
    assert "the lower bound is under 75%, so the judge checks in this gate mean little" in warning
    # Given a task with no held-out set, Then the note says its judge is unmeasured
    assert "has no held-out labelled answers for 'other-task'" in judge_note(
        "other-task", AlwaysPass(), tmp_path
    )
