"""The Slack pictures in docs/approvals.md: the approval message, its edit modal, and the message once the
edited refund is approved, as the Slack stand-in renders the Block Kit the embedded stack sent.

They are renderings of the real blocks (``lockgate_infra.local.slack_render``, labelled as such on the
picture), not screenshots of Slack: the stand-in has no Slack client. Headless Chromium draws them;
`make screenshots` re-takes them (LOCKGATE_UPDATE_SCREENSHOTS=1), like the approval page's.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from lockgate_infra.local.slack_render import LABEL, message_page, modal_page
from tests.e2e.test_approval_browser import _refresh, _save_screenshot, _viewport, browser
from tests.integration.test_slack_approvals import ALICE, Stack, _refunds, _shown, slack_stack
from tests.integration.test_slack_edits import _open_edit, _submit

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser", "slack_stack"]  # the fixtures, shared

ROOT = Path(__file__).resolve().parents[2]
PICTURES = {
    "message": ROOT / "docs" / "img" / "slack-approval.png",
    "modal": ROOT / "docs" / "img" / "slack-edit-modal.png",
    "approved": ROOT / "docs" / "img" / "slack-edited.png",
}


def _show(browser: Any, page: str, folder: Path, name: str, width: int) -> str:
    """Open a rendered page at ``width`` and return its text (after checking nothing scrolls sideways)."""
    from selenium.webdriver.common.by import By

    path = folder / f"{name}.html"
    path.write_text(page, encoding="utf-8")
    _viewport(browser, (width, 100), mobile=False)  # short: the picture is as tall as its content
    browser.get(path.as_uri())
    widths = browser.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert widths[0] <= widths[1], (name, widths)
    return str(browser.find_element(By.TAG_NAME, "body").text)


def test_the_slack_message_its_edit_modal_and_the_edited_outcome_and_their_screenshots(
    browser: Any, slack_stack: Stack, tmp_path: Path
) -> None:
    stack, slack, _ = slack_stack
    refresh = _refresh(*PICTURES.values())
    shots = PICTURES if refresh else {name: tmp_path / f"{name}.png" for name in PICTURES}
    # Given grace's refund posted to the channel: the message as the stand-in holds it
    text = _show(browser, message_page(_shown(slack)), tmp_path, "message", 820)
    for shown in (
        "refund $80.00 USD on order A-2001",
        "Nothing has happened yet.",
        "Approve",
        "Edit…",
        "Reject",
    ):
        assert shown in text, shown
    assert "@U0ALICE01" in text and LABEL in text
    assert _save_screenshot(browser, shots["message"]).startswith(b"\x89PNG")
    # When alice clicks Edit…: the modal the stack asked Slack to open
    opened = _open_edit(slack_stack, ALICE)
    text = _show(browser, modal_page(opened["view"]), tmp_path, "modal", 640)
    for shown in ("Edit and approve", "amount", "80.00", "more than 0", "Cancel", "Approve changes"):
        assert shown in text, shown
    assert _save_screenshot(browser, shots["modal"]).startswith(b"\x89PNG")
    # When she submits 40.00: the message the notifier updated, and the refund that ran
    assert _submit(slack_stack, opened, ALICE, amount="40.00") == (200, None)
    assert stack.drain(timeout=30)
    (refund,) = _refunds(stack)
    assert Decimal(refund["amount"]["N"]) == Decimal("40.00")
    text = _show(browser, message_page(_shown(slack)), tmp_path, "approved", 820)
    assert (
        "Edited by alice at " in text and "amount 80.00 → 40.00" in text and "Approved by alice at " in text
    )
    assert "Nothing has happened yet." not in text
    assert "Approve changes" not in text and "Reject" not in text
    assert _save_screenshot(browser, shots["approved"]).startswith(b"\x89PNG")
