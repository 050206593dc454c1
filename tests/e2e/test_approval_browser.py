"""The approval page in a real browser: headless Chromium opens alice's link and approves a refund.

The embedded stack runs with the offline demo model; grace's signed helpdesk email asks for a refund
of A-2001, the agent proposes it, and a person decides on the server-rendered page. Chromium and its
WebDriver come from Debian (``.ci/install-browser``); without them the test skips, except under
CI=true, where it fails.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from lockgate.config import LockgateConfig, load_config
from lockgate_infra.local.approval_walk import local_signer, pending_proposals
from lockgate_infra.local.demo import _send, samples
from lockgate_infra.local.model import local_model
from lockgate_infra.local.run import seed_secrets
from lockgate_infra.local.stack import LocalStack
from lockgate_infra.local.workflows import seed_workflows

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
# The README's screenshots: `make screenshots` re-takes them (LOCKGATE_UPDATE_SCREENSHOTS=1).
SCREENSHOTS = {
    "desktop": ROOT / "docs" / "img" / "approval-desktop.png",
    "phone": ROOT / "docs" / "img" / "approval-phone.png",
}
# docs/approvals.md's: the page with "Change it before approving" open and the amount changed.
EDIT_SCREENSHOT = ROOT / "docs" / "img" / "approval-edit.png"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
PHONE = (390, 844)  # CSS pixels: a common phone width
DESKTOP = (1280, 900)
SUMMARY = "refund $80.00 USD on order A-2001"
REFUND_EMAIL = "msg-demo-2"  # grace: "My order A-2001 arrived broken. Please refund it."
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",  # root, in a container
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--no-proxy-server",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",  # only the loopback gateway
)


def _unavailable(reason: str) -> NoReturn:
    """No browser here: skip, but under CI a missing browser is a broken CI, not a skipped test."""
    message = f"{reason}; run .ci/install-browser (Debian's chromium + chromium-driver)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and {message}", pytrace=False)
    pytest.skip(message)


@pytest.fixture
def browser() -> Iterator[Any]:
    """Headless Chromium through Debian's chromedriver (never Selenium Manager: it would download)."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _unavailable("selenium is not installed (pip install -e '.[dev]')")
    for binary in (CHROMIUM, CHROMEDRIVER):
        if not os.access(binary, os.X_OK):
            _unavailable(f"{binary} is not installed")
    profile = tempfile.mkdtemp(prefix="lockgate-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    try:
        driver.set_page_load_timeout(15)
        # A phone's viewport: headless windows are never narrower than 500 px, so emulate it.
        _viewport(driver, PHONE, mobile=True)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _viewport(driver: Any, size: tuple[int, int], *, mobile: bool) -> None:
    """Emulate a viewport: headless windows are never narrower than 500 px."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": mobile},
    )


@pytest.fixture
def demo_stack() -> Iterator[tuple[LocalStack, str, LockgateConfig]]:
    """The embedded stack as `lockgate demo` starts it: demo model, print-only approval channel."""
    quiet = {
        "POWERTOOLS_LOG_LEVEL": "ERROR",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "APPROVAL_CHANNELS": "print",
    }
    with (
        local_model("demo", os.environ) as model,
        LocalStack(environment={**quiet, **model.environment}) as stack,
    ):
        secrets = seed_secrets(stack)
        seed_workflows(stack)
        gateway = stack.start_gateway(0)
        stack.start_pollers(wait_seconds=0)
        config = load_config(stack.config_path)
        (refund,) = [s for r in samples(int(time.time())) for s in r if s.delivery_id == REFUND_EMAIL]
        status, reply = _send(refund, gateway.url, config, secrets, int(time.time()))
        assert status == 200, reply
        assert stack.drain(timeout=30)
        yield stack, gateway.url, config


def _refresh(*paths: Path) -> bool:
    """Whether to (re)write these screenshots: on request, or when one is missing."""
    return os.environ.get("LOCKGATE_UPDATE_SCREENSHOTS") == "1" or not all(p.exists() for p in paths)


def _refunds(stack: LocalStack) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = stack.client("dynamodb").scan(
        TableName=stack.resources["ShopPaymentsTable"]
    )["Items"]
    return items


def _heading(driver: Any) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.TAG_NAME, "h1").text)


def _heading_after_submit(driver: Any, old: str, timeout: float = 15) -> str:
    """The next page's heading: a click on a submit button returns before that page has loaded."""
    from selenium.common.exceptions import WebDriverException

    deadline = time.monotonic() + timeout
    heading = old
    while time.monotonic() < deadline:
        try:  # mid-navigation, the old document's elements vanish with assorted errors
            if driver.execute_script("return document.readyState") == "complete":
                heading = _heading(driver)
                if heading != old:
                    return heading
        except WebDriverException:
            pass
        time.sleep(0.05)
    return heading


def _save_screenshot(driver: Any, path: Path) -> bytes:
    """The whole confirmation page at phone width, buttons included (a viewport shot would cut them)."""
    import base64

    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    width = int(driver.execute_script("return document.documentElement.clientWidth"))
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
        },
    )
    png = base64.b64decode(shot["data"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)
    return png


@pytest.mark.slow
def test_a_person_approves_a_refund_in_the_browser_and_it_runs_once(
    browser: Any, demo_stack: tuple[LocalStack, str, LockgateConfig]
) -> None:
    from selenium.webdriver.common.by import By

    stack, gateway_url, config = demo_stack
    # Given grace's refund waiting for a person, and alice's signed link to it
    (proposal,) = pending_proposals(stack)
    assert proposal.summary == SUMMARY
    link = local_signer(stack, config.approvals, f"{gateway_url}/approvals").links_for(proposal)["alice"]
    assert _refunds(stack) == []

    # When alice opens her link
    browser.get(link)
    # Then the page says what would happen and that the assistant's reason is unverified
    assert _heading(browser) == SUMMARY
    page = browser.find_element(By.TAG_NAME, "main").text
    assert "Nothing has happened yet." in page
    assert "unverified" in page
    approve = browser.find_element(By.CSS_SELECTOR, "button[name=decision][value=approve]")
    reject = browser.find_element(By.CSS_SELECTOR, "button[name=decision][value=reject]")
    assert (approve.text, reject.text) == ("Approve", "Reject")
    assert approve.is_displayed() and reject.is_displayed()
    # ...and opening it changed nothing
    assert stack.drain(timeout=30)
    assert _refunds(stack) == []

    # When she clicks Approve
    approve.click()
    # Then she sees the outcome, and the refund runs exactly once
    assert _heading_after_submit(browser, SUMMARY) == "Approved"
    assert SUMMARY in browser.find_element(By.TAG_NAME, "main").text
    assert stack.drain(timeout=30)
    (refund,) = _refunds(stack)
    assert refund["order_id"]["S"] == "A-2001"

    # When she goes back to the page and submits the same form again
    browser.back()
    assert _heading(browser) == SUMMARY, "going back no longer shows the form: nothing to submit again"
    again = browser.find_element(By.CSS_SELECTOR, "button[name=decision][value=approve]")
    again.click()
    # Then nothing more happens: the refund is still recorded once
    assert _heading_after_submit(browser, SUMMARY) == "Already approved"
    assert stack.drain(timeout=30)
    assert len(_refunds(stack)) == 1
    # And her link, opened again, says who approved it, when, and that it ran
    browser.get(link)
    assert _heading(browser) == "Already approved"
    decided = browser.find_element(By.TAG_NAME, "main").text
    assert "alice: approve at" in decided and "It ran at" in decided


@pytest.mark.slow
def test_a_valid_form_posted_from_another_site_decides_nothing(
    browser: Any, demo_stack: tuple[LocalStack, str, LockgateConfig]
) -> None:
    import html
    from urllib.parse import quote

    from selenium.webdriver.common.by import By

    stack, gateway_url, config = demo_stack
    # Given alice's page, and its form with the real token (as if another site had learned it)
    (proposal,) = pending_proposals(stack)
    link = local_signer(stack, config.approvals, f"{gateway_url}/approvals").links_for(proposal)["alice"]
    browser.get(link)
    form = browser.find_element(By.TAG_NAME, "form")
    fields = {
        str(field.get_attribute("name")): str(field.get_attribute("value"))
        for field in form.find_elements(By.CSS_SELECTOR, "input[type=hidden]")
    }
    hidden = "".join(
        f'<input type=hidden name="{html.escape(k)}" value="{html.escape(v)}">' for k, v in fields.items()
    )
    attack = (
        f'<form method=post action="{html.escape(str(form.get_attribute("action")))}">{hidden}'
        "<button name=decision value=approve>Claim your prize</button></form>"
    )
    # When another site (here a data: URL, an opaque origin) makes her browser post it
    browser.get("data:text/html;charset=utf-8," + quote(attack))
    browser.find_element(By.TAG_NAME, "button").click()
    # Then the neutral page, no decision and no refund
    assert _heading_after_submit(browser, "") == "This link cannot be used"
    decisions = stack.client("dynamodb").scan(TableName=stack.resources["DecisionsTable"])["Items"]
    assert decisions == []
    assert stack.drain(timeout=30)
    assert _refunds(stack) == []
    # And from her own page the same link still decides
    browser.get(link)
    browser.find_element(By.CSS_SELECTOR, "button[name=decision][value=approve]").click()
    assert _heading_after_submit(browser, SUMMARY) == "Approved"


@pytest.mark.slow
def test_the_digest_page_lists_without_links_and_resends_a_link_privately(
    browser: Any, demo_stack: tuple[LocalStack, str, LockgateConfig]
) -> None:
    from selenium.webdriver.common.by import By

    from lockgate.approvals.digest import DIGEST_ID, reviewer_fingerprint
    from lockgate.approvals.links import new_claims, sign_link
    from lockgate.approvals.reissue import ReissueAudit

    stack, gateway_url, _ = demo_stack
    # Given alice's digest link, signed with the stack's key
    secret = stack.client("secretsmanager").get_secret_value(SecretId=stack.resources["ApprovalLinkSecret"])
    claims = new_claims(DIGEST_ID, "alice", reviewer_fingerprint("alice"), time.time(), 3600)
    browser.get(f"{gateway_url}/approvals?" + sign_link(secret["SecretString"].encode(), claims))
    # Then it lists the refund, with no link to decide it
    assert _heading(browser) == "1 waiting for Alice (support lead)"
    assert SUMMARY in browser.find_element(By.TAG_NAME, "main").text
    assert browser.find_elements(By.CSS_SELECTOR, "a[href]") == []
    # When she asks for its link again
    browser.find_element(By.CSS_SELECTOR, "button[name=approval]").click()
    # Then the page says it was sent (privately; the embedded stack prints it) and the audit has it
    assert (
        _heading_after_submit(browser, "1 waiting for Alice (support lead)") == "A fresh link is on its way"
    )
    (proposal,) = pending_proposals(stack)
    (entry,) = ReissueAudit(stack.client("dynamodb"), stack.resources["StateTable"]).entries()
    assert (entry.reviewer, entry.approval_id, entry.outcome) == ("alice", proposal.approval_id, "sent")
    assert stack.drain(timeout=30)
    assert _refunds(stack) == []


@pytest.mark.slow
def test_the_page_fits_a_phone_and_a_desktop_and_its_screenshots_are_taken(
    browser: Any, demo_stack: tuple[LocalStack, str, LockgateConfig], tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    stack, gateway_url, config = demo_stack
    # Given grace's refund waiting for a person, and alice's link
    (proposal,) = pending_proposals(stack)
    link = local_signer(stack, config.approvals, f"{gateway_url}/approvals").links_for(proposal)["alice"]
    # (docs/img is refreshed only on request: every run would otherwise rewrite it)
    refresh = _refresh(*SCREENSHOTS.values())
    for name, size, mobile in (("phone", PHONE, True), ("desktop", DESKTOP, False)):
        # When she opens it at this width
        _viewport(browser, size, mobile=mobile)
        browser.get(link)
        # Then nothing scrolls sideways, and the whole page is there: the facts, who decides, the form
        widths = browser.execute_script(
            "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        assert widths[0] <= widths[1] == size[0], (name, widths)
        page = browser.find_element(By.TAG_NAME, "main").text
        assert _heading(browser) == SUMMARY
        for shown in ("UNVERIFIED", "My order A-2001 arrived broken", "Order status", "Who may decide"):
            assert shown in page, (name, shown)
        assert browser.find_element(By.CSS_SELECTOR, "textarea[name=reason]").is_displayed()
        png = _save_screenshot(browser, SCREENSHOTS[name] if refresh else tmp_path / f"{name}.png")
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
    # And looking changed nothing
    assert stack.client("dynamodb").scan(TableName=stack.resources["DecisionsTable"])["Items"] == []


@pytest.mark.slow
def test_a_person_changes_the_amount_before_approving_and_only_the_changed_refund_runs_and_its_screenshot(
    browser: Any, demo_stack: tuple[LocalStack, str, LockgateConfig], tmp_path: Path
) -> None:
    from decimal import Decimal

    from selenium.webdriver.common.by import By

    stack, gateway_url, config = demo_stack
    # Given grace's $80.00 refund waiting for a person, and alice's link, on a desktop
    (proposal,) = pending_proposals(stack)
    link = local_signer(stack, config.approvals, f"{gateway_url}/approvals").links_for(proposal)["alice"]
    _viewport(browser, DESKTOP, mobile=False)
    browser.get(link)
    assert _heading(browser) == SUMMARY
    # When she opens "Change it before approving": its field shows the amount the assistant proposed
    section = browser.find_element(By.TAG_NAME, "details")
    amount = section.find_element(By.CSS_SELECTOR, "input[name='edit.amount']")
    assert not amount.is_displayed()
    section.find_element(By.TAG_NAME, "summary").click()
    assert section.get_attribute("open") is not None and amount.is_displayed()
    assert amount.get_attribute("value") == "80.00"
    # ...and changes it to $40.00
    amount.clear()
    amount.send_keys("40.00")
    change = section.find_element(By.CSS_SELECTOR, "button[name=decision][value=edit]")
    assert change.text == "Approve with these changes" and change.is_displayed()
    browser.execute_script("arguments[0].blur()", amount)  # no blinking caret in the picture
    shot = EDIT_SCREENSHOT if _refresh(EDIT_SCREENSHOT) else tmp_path / "edit.png"
    assert _save_screenshot(browser, shot).startswith(b"\x89PNG\r\n\x1a\n")
    # (looking and typing changed nothing)
    assert stack.client("dynamodb").scan(TableName=stack.resources["DecisionsTable"])["Items"] == []
    # When she approves with these changes
    change.click()
    # Then the page says it is approved and will run once
    assert _heading_after_submit(browser, SUMMARY) == "Approved"
    assert "it will run once" in browser.find_element(By.TAG_NAME, "main").text
    # And the refund that ran is the changed one, $40.00, exactly once
    assert stack.drain(timeout=30)
    (refund,) = _refunds(stack)
    assert refund["order_id"]["S"] == "A-2001" and Decimal(refund["amount"]["N"]) == Decimal("40.00")
    # And the decision is hers, on version 1, the version she made
    decisions = stack.client("dynamodb").scan(TableName=stack.resources["DecisionsTable"])["Items"]
    (mine,) = [d for d in decisions if "verdict" in d]
    assert (mine["by"]["S"], mine["verdict"]["S"], mine["version"]["N"], mine["via"]["S"]) == (
        "alice",
        "approve",
        "1",
        "link",
    )
    # And her link, opened again, says it was approved, by whom, and what she changed
    browser.get(link)
    assert _heading(browser) == "Already approved"
    decided = browser.find_element(By.TAG_NAME, "main").text
    assert "alice: approve (version 1) at" in decided
    assert "Changed by a reviewer" in decided and "80.00 → 40.00" in decided
