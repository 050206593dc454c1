"""The per-call checks, table-style: allowed → schema → policy → taint → approval."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.actions.guard import Check, RunState, rule_on
from lockgate.actions.tools import RunFacts
from tests.agent.toolkit import Effects, make_task

FACTS = RunFacts(values={"owner": "owner@example.com"})


def state(tainted: bool = False, suspicious: bool = False) -> RunState:
    return RunState(
        FACTS,
        ["untrusted content (fetch_page: fetch https://x)"] if tainted else [],
        ["screen flagged"] if suspicious else [],
    )


@pytest.mark.parametrize(
    ("tool", "args", "run", "check", "reason"),
    [
        ("nope", {}, state(), Check.ALLOWED, "No tool called 'nope'"),
        ("lookup", {"item_id": "Z-9999"}, state(), Check.SCHEMA, "item_id: String should match pattern"),
        ("lookup", {}, state(), Check.SCHEMA, "item_id: Field required"),
        ("lookup", {"item_id": "I-123"}, state(tainted=True), Check.CLEARED, ""),
        ("send", {"to": "thief@evil.example", "text": "hi"}, state(), Check.POLICY, "only go to"),
        ("send", {"to": "OWNER@example.com", "text": "hi"}, state(), Check.CLEARED, ""),
        # hard policies pin send down, so reading untrusted content does not block it...
        ("send", {"to": "owner@example.com", "text": "hi"}, state(tainted=True), Check.CLEARED, ""),
        # ...but a positive injection screen makes every side effect need a person
        ("send", {"to": "owner@example.com", "text": "hi"}, state(suspicious=True), Check.TAINT, "screen"),
        ("pay", {"amount": 10}, state(), Check.CLEARED, ""),
        ("pay", {"amount": 80}, state(), Check.APPROVAL, "over $50"),
        ("pay", {"amount": 10}, state(tainted=True), Check.TAINT, "untrusted content"),
        ("pay", {"amount": -1}, state(), Check.SCHEMA, "greater than 0"),
        ("wipe", {}, state(), Check.APPROVAL, "always needs a person"),
        # policy comes before taint: a forbidden call is refused outright, not queued for a person
        ("send", {"to": "thief@evil.example", "text": "x"}, state(tainted=True), Check.POLICY, "only go to"),
    ],
)
def test_checks_in_order(tool: str, args: dict[str, Any], run: RunState, check: Check, reason: str) -> None:
    ruling = rule_on(make_task(Effects()).tools, tool, args, run)
    assert ruling.check is check
    assert reason in ruling.reason
