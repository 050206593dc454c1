"""Escalation on the embedded stack with a sped-up clock (``lockgate local --clock-speed``): the
template's escalate-approvals schedule fires on the compressed clock, the request nobody decided is
escalated by the schedule's time, the notifier sends the second group their links, and one of them
decides it, through their own link, and the refund runs once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lockgate_infra.testing import ScriptedModel, TestStack, when

ROOT = Path(__file__).resolve().parents[2]
LEAD = """[[approvals.reviewers]]
id = "carol"
name = "Carol (team lead)"
email = "carol@shop.example.com"
roles = ["leads"]

"""
ESCALATES = """escalate_after_minutes = 30
escalate_roles = ["leads"]
"""
REFUND = {
    "message_id": "m-escalate-1",
    "from": "grace@example.com",
    "subject": "Broken teapot",
    "text": "My order A-2001 arrived broken. Please refund it.",
}


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[TestStack]:
    # The checkout's lockgate.toml with a team lead, and refunds escalating to leads after 30 minutes
    header = "[approvals.tools.refund_order]\n"
    text = (ROOT / "lockgate.toml").read_text(encoding="utf-8").replace(header, LEAD + header + ESCALATES, 1)
    config = tmp_path / "lockgate.toml"
    config.write_text(text, encoding="utf-8")
    (tmp_path / "stages").symlink_to(ROOT / "stages")
    model = ScriptedModel(
        "support-inbox",
        when(r"message_id=(?P<message>[^\s,.]+)").call("read_email", message_id="{message}"),
        when(r"(?P<order>A-\d{4})", after="read_email").call(
            "refund_order", order_id="{order}", amount="80.00", reason="arrived broken"
        ),
        finish="Refund of {order} handled.",
        extract={"order_id": "{order}", "intent": "refund", "amount": None},
    )
    with TestStack(model, config=config) as started:
        yield started


# The schedules' clock sped up 600 times still takes ~10 s of wall time: `make slow`.
@pytest.mark.slow
def test_a_refund_nobody_decided_escalates_on_the_schedules_clock_and_a_lead_decides_it(
    stack: TestStack, capfd: pytest.CaptureFixture[str]
) -> None:
    # Given a refund waiting for the refunds team, which carol (a lead) may not decide yet
    stack.send("helpdesk", REFUND)
    (proposal,) = stack.proposals()
    assert proposal.escalated_at is None
    # When the schedules run 600 times faster than real time, until escalate-approvals marks it (a
    # generous wall deadline: on a busy machine every due job of every schedule runs slower)
    stack.local.start_scheduler(clock_speed=600)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and stack.proposals()[0].escalated_at is None:
        time.sleep(0.2)
    (escalated,) = stack.proposals()
    # Then it was escalated once its 30 minutes had passed on the schedule's clock, not on the wall's
    assert escalated.escalated_at is not None
    assert escalated.escalated_at >= proposal.created_at + 30 * 60
    # And the notifier printed carol's own link, as it prints the others'
    stack.drain()
    printed = capfd.readouterr().err
    assert "[approval] carol: refund $80.00 USD on order A-2001 -> http://127.0.0.1:" in printed
    # And carol's approval, through her link, runs the refund once
    steps = stack.approve(escalated, as_="carol")
    assert steps[-1].title == "Approved"
    assert stack.ledger.count("refund_order") == 1
