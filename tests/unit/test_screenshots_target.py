"""`make screenshots` (shown in the README) re-takes the approval page's screenshots: the browser tests."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_make_screenshots_runs_the_browser_test_that_takes_the_readmes_screenshots() -> None:
    # Given the Makefile's recipe, as make would run it
    # (under `make test` this is a sub-make: no "Entering/Leaving directory" lines, please)
    shown = subprocess.run(
        ["make", "--no-print-directory", "-n", "screenshots"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    recipe = [line for line in shown if not line.startswith("make")][-1]
    # Then it runs the browser test file, asking it to rewrite the screenshots, for one test that exists
    assert recipe.startswith(
        "LOCKGATE_UPDATE_SCREENSHOTS=1 .venv/bin/pytest tests/e2e/test_approval_browser.py"
    )
    (selected,) = re.findall(r"-k (\w+)", recipe)
    tests = re.findall(r"^def (test_\w+)", (ROOT / "tests/e2e/test_approval_browser.py").read_text(), re.M)
    assert [t for t in tests if selected in t] == [
        "test_the_page_fits_a_phone_and_a_desktop_and_its_screenshots_are_taken",
        "test_a_person_changes_the_amount_before_approving_and_only_the_changed_refund_runs_and_its_screenshot",
    ]
    # And the README shows the two images the first writes, docs/approvals.md the second's, all committed
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for image in ("docs/img/approval-desktop.png", "docs/img/approval-phone.png"):
        assert f"]({image})" in readme and (ROOT / image).read_bytes().startswith(b"\x89PNG")
    assert "`make screenshots`" in readme
    approvals = (ROOT / "docs" / "approvals.md").read_text(encoding="utf-8")
    assert "](img/approval-edit.png)" in approvals
    assert (ROOT / "docs" / "img" / "approval-edit.png").read_bytes().startswith(b"\x89PNG")
