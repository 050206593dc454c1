"""`lockgate new workflow`: a workflow that works right away, wired everywhere it must be, or nothing written.

Each test scaffolds into a copy of this checkout (the files a fork has: template.yaml, lockgate.toml,
pyproject.toml, workflows/, functions/, tests/) and runs what a user would run there next.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
FILES = ("template.yaml", "lockgate.toml", "pyproject.toml")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A fork's checkout, as far as the scaffold and the tests it writes are concerned."""
    copy = tmp_path / "fork"
    copy.mkdir()
    for name in FILES:
        shutil.copy(ROOT / name, copy / name)
    for folder in ("workflows", "functions"):
        shutil.copytree(
            ROOT / folder, copy / folder, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
        )
    (copy / "tests").mkdir()
    (copy / "tests" / "__init__.py").write_text("", encoding="utf-8")
    return copy


def run(where: Path, *command: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LOCKGATE_", "ANTHROPIC_"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(  # noqa: S603 - this checkout's own tools
        list(command), cwd=where, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def scaffold(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run(where, "lockgate", "new", "workflow", *args)


def test_the_workflow_is_written_wired_and_checked(checkout: Path) -> None:
    made = scaffold(checkout, "notes", "--source", "github", "--event", "issues")

    assert made.returncode == 0, made.stdout + made.stderr
    package = checkout / "workflows" / "notes"
    assert sorted(p.name for p in package.iterdir()) == [
        "__init__.py", "evals", "items.py", "model.py", "task.py", "tools.py",
    ]  # fmt: skip
    assert (package / "evals" / "notes.toml").is_file() and (
        checkout / "tests/workflows/test_notes.py"
    ).is_file()
    for function in ("agent_worker", "scheduled_jobs", "eval_jobs"):
        assert os.readlink(checkout / "functions" / function / "notes") == "../../workflows/notes"
    assert ', "notes"]' in (checkout / "lockgate.toml").read_text(encoding="utf-8")
    template = (checkout / "template.yaml").read_text(encoding="utf-8")
    assert "  NotesItemsTable:\n    Type: AWS::DynamoDB::Table\n" in template
    assert template.count("          NOTES_ITEMS_TABLE: !Ref NotesItemsTable\n") == 2  # worker and jobs
    assert "              - Sid: NotesItems\n" in template
    assert "ok: template.yaml gives each workflow (shop, triage, notes) its 6 declared" in made.stdout
    # And lockgate check, run again by the user, agrees
    assert run(checkout, "lockgate", "check").returncode == 0


# A pytest and two ruff runs in a copy; the triage example, made by the scaffold, runs in make test.
@pytest.mark.slow
def test_its_own_test_passes_on_the_embedded_stack_and_its_code_is_lint_clean(checkout: Path) -> None:
    assert scaffold(checkout, "notes", "--source", "github", "--event", "issues").returncode == 0

    tested = run(checkout, "pytest", "tests/workflows/test_notes.py", "-p", "no:randomly", "-q")
    linted = run(
        checkout,
        "ruff",
        "check",
        "--config",
        str(ROOT / "pyproject.toml"),
        "workflows/notes",
        "tests/workflows",
    )
    formatted = run(
        checkout, "ruff", "format", "--check", "--config", str(ROOT / "pyproject.toml"), "workflows/notes"
    )

    assert tested.returncode == 0 and "2 passed" in tested.stdout, tested.stdout[-3000:]
    assert linted.returncode == 0, linted.stdout
    assert formatted.returncode == 0, formatted.stdout


@pytest.mark.slow
def test_its_code_type_checks(checkout: Path, tmp_path: Path) -> None:
    assert scaffold(checkout, "notes", "--source", "github", "--event", "issues").returncode == 0

    config, cache = str(ROOT / "pyproject.toml"), str(tmp_path / "mypy")
    checked = run(checkout, "mypy", "--config-file", config, "--cache-dir", cache, "workflows/notes")

    assert checked.returncode == 0, checked.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ("Bad-Name", "--source", "github", "--event", "issues"),
            "workflow name 'Bad-Name': use 2-31 lowercase",
        ),
        (
            ("shop", "--source", "github", "--event", "issues"),
            "workflows/shop already exists: choose another name",
        ),
        (("json", "--source", "github", "--event", "issues"), "a Python module called 'json' already exists"),
        (
            ("notes", "--source", "gitlab", "--event", "push"),
            "no source 'gitlab' in lockgate.toml (configured: ",
        ),
        (("notes", "--source", "github", "--event", "a b"), "event 'a b' is not an event type"),
        (
            ("notes", "--source", "github", "--event", "issues.opened"),
            "workflow triage's task 'triage' already starts on github 'issues.opened'",
        ),
    ],
    ids=["bad name", "taken", "a module's name", "unknown source", "bad event", "trigger taken"],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    checkout: Path, args: tuple[str, ...], says: str
) -> None:
    before = {p: p.read_bytes() for p in checkout.rglob("*") if p.is_file() and not p.is_symlink()}

    refused = scaffold(checkout, *args)

    assert refused.returncode == 2
    assert (
        refused.stderr.count("\n") == 1 and says in refused.stderr and "nothing was written" in refused.stderr
    )
    assert {p: p.read_bytes() for p in checkout.rglob("*") if p.is_file() and not p.is_symlink()} == before


def test_a_template_without_a_place_for_the_wiring_refuses_and_writes_nothing(checkout: Path) -> None:
    template = checkout / "template.yaml"
    template.write_text(template.read_text(encoding="utf-8").replace("  AgentWorkerRole:", "  WorkerRole:"))
    before = template.read_text(encoding="utf-8")

    refused = scaffold(checkout, "notes", "--source", "github", "--event", "issues")

    assert refused.returncode == 2
    assert "template.yaml has no resource AgentWorkerRole; nothing was written" in refused.stderr
    assert template.read_text(encoding="utf-8") == before and not (checkout / "workflows" / "notes").exists()
