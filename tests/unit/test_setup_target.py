"""`make setup` installs the hashed dev lock with uv (from its own hashed lock), or pip where uv is absent.

Read from make's dry run (`make -n -B setup`: every command the recipe would run, nothing run), so a
change to the Makefile that drops the hashes, the lock or uv fails here, offline.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
from pathlib import Path

from tests.unit.test_locks import assert_locked, listed, pins

ROOT = Path(__file__).resolve().parents[2]
_BRANCHES = re.compile(r"if (?P<test>.*?); then (?P<uv>.*?); else (?P<pip>.*?); fi")


def dry_run(*assignments: str, bytecode: bool = False) -> str:
    """The setup recipe as make would run it, continuation lines joined, blanks single.

    ``bytecode``: Python may write bytecode (PYTHONDONTWRITEBYTECODE unset), as on most machines.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if not bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    shown = subprocess.run(  # noqa: S603 - make with fixed arguments
        ["make", "--no-print-directory", "-n", "-B", "setup", *assignments],  # noqa: S607
        cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    return re.sub(r"[ \t]+", " ", re.sub(r"\\\n\s*", " ", shown))


def installs(branch: str) -> list[str]:
    """The install commands of one branch of the recipe, with the echo before them left out."""
    commands = (c.strip() for c in re.split(r";|&&", branch))
    return [c for c in commands if "install" in c and not c.startswith("echo")]


def test_given_a_fresh_clone_then_uv_installs_the_dev_lock_with_every_hash_required() -> None:
    # Given the setup recipe where Python may not write bytecode (PYTHONDONTWRITEBYTECODE, as on CI)
    recipe = dry_run()
    # Then uv itself comes from its own lock, by pip, hashes required, a wheel only
    (bootstrap,) = [line for line in recipe.splitlines() if "requirements-uv.txt" in line]
    assert ".venv/bin/python -m pip install" in bootstrap
    assert "--require-hashes -r requirements-uv.txt" in bootstrap
    assert "--only-binary :all:" in bootstrap
    # And where uv is there, it installs requirements-dev.txt with every hash required, from PyPI,
    # into .venv, compiling bytecode; then the two local packages, editable, without dependencies,
    # built with the lock's own setuptools
    (branches,) = _BRANCHES.findall(recipe)
    test, uv, pip = branches
    assert test == 'test "uv" = uv && test -x .venv/bin/uv'
    lock, local = installs(uv)
    for command in (lock, local):
        assert command.startswith(".venv/bin/uv pip install ")
        for option in ("--python .venv/bin/python", "--no-config", "--compile-bytecode"):
            assert option in command
        assert "--default-index https://pypi.org/simple" in command
    assert lock.endswith("--require-hashes -r requirements-dev.txt")
    assert local.endswith("--no-build-isolation --no-deps -e layers/core -e .")
    # And pip, the fallback, installs the very same lock the same way
    lock, local = installs(pip)
    assert lock == ".venv/bin/python -m pip install --quiet --require-hashes -r requirements-dev.txt"
    assert local == (
        ".venv/bin/python -m pip install --quiet --no-build-isolation --no-deps -e layers/core -e ."
    )


def test_given_python_may_write_bytecode_then_uv_leaves_it_to_the_first_import() -> None:
    # Given PYTHONDONTWRITEBYTECODE unset: Python compiles and keeps each module when first imported
    (branches,) = _BRANCHES.findall(dry_run(bytecode=True))
    lock, local = installs(branches[1])
    # Then uv compiles nothing at install, and still requires every hash
    assert "--compile-bytecode" not in lock + local
    assert lock.endswith("--require-hashes -r requirements-dev.txt")


def test_given_installer_pip_then_uv_is_neither_installed_nor_used() -> None:
    recipe = dry_run("INSTALLER=pip")
    assert 'test "pip" != uv ||' in recipe
    assert 'if test "pip" = uv &&' in recipe


def test_given_the_uv_lock_then_it_pins_uv_alone_with_hashes() -> None:
    # Every uv wheel of the release is hashed (pip picks the one for the platform it runs on)
    locked = pins(ROOT / "requirements-uv.txt")
    assert list(locked) == ["uv"]
    assert_locked(listed(ROOT / "requirements-uv.in"), locked, "requirements-uv.txt")
    hashes = re.findall(r"--hash=sha256:[0-9a-f]{64}", (ROOT / "requirements-uv.txt").read_text())
    assert len(hashes) > 5


def test_given_the_environment_make_setup_made_then_it_runs_every_pin_of_the_dev_lock() -> None:
    # Given the dev lock and this test's own environment (.venv, which make setup installed)
    locked = pins(ROOT / "requirements-dev.txt")
    # Then every pinned package is installed at its pinned version
    installed = {name: importlib.metadata.version(name) for name in locked}
    assert {n: v for n, v in installed.items() if v != locked[n]} == {}, "run make setup"


def test_given_a_fresh_clone_then_setup_puts_the_workflows_folder_on_the_venvs_path() -> None:
    # Given the setup recipe, Then its last step writes a .pth naming the checkout's workflows/
    recipe = dry_run()
    assert '"lockgate-workflows.pth").write_text(str(pathlib.Path("workflows").resolve())' in recipe
    assert recipe.index("lockgate-workflows.pth") < recipe.index("touch .venv/.installed")


def test_given_the_venv_setup_made_then_a_plain_python_anywhere_imports_every_example_workflow(
    tmp_path: Path,
) -> None:
    # Given .venv's Python run outside the checkout, with no PYTHONPATH (as `python -m benchmarks.…`)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    program = "import shop, triage; print(shop.__file__, triage.__file__)"
    shown = subprocess.run(  # noqa: S603 - this checkout's own Python
        [str(ROOT / ".venv" / "bin" / "python"), "-c", program],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    # Then both packages are the checkout's own
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == [
        str(ROOT / "workflows" / "shop" / "__init__.py"),
        str(ROOT / "workflows" / "triage" / "__init__.py"),
    ]
