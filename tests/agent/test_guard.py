"""The per-call checks, table-style: allowed → schema → policy → taint → approval."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from lockgate.actions.facts import RunFacts
from lockgate.actions.guard import Check, NeedsPerson, RunState, policy_refusal, rule_on
from lockgate.actions.tools import Tool, Verdict
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
        ("nope", {}, state(), Check.OFFERED, "No tool called 'nope'"),
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


# ------------------------------------------------------------------ policies that ask for a person


def no_numbers(args: Any, facts: RunFacts) -> Verdict:
    """Asks for a person when the text has a digit, only in a run that read untrusted content."""
    return (
        Verdict.ask("the text has a number", when_tainted=True)
        if any(c.isdigit() for c in args.text)
        else Verdict.allow()
    )


def no_shouting(args: Any, facts: RunFacts) -> Verdict:
    """Asks for a person for an all-caps text, in any run."""
    return Verdict.ask("the text shouts") if args.text.isupper() else Verdict.allow()


def asking_send() -> list[Tool[Any]]:
    tools = make_task(Effects()).tools
    return [
        replace(t, policies=(*t.policies, no_numbers, no_shouting)) if t.name == "send" else t for t in tools
    ]


@pytest.mark.parametrize(
    ("text", "run", "check", "reasons"),
    [
        ("hi", state(), Check.CLEARED, ()),
        ("call 555", state(), Check.CLEARED, ()),  # asks only after untrusted content
        ("hi", state(tainted=True), Check.CLEARED, ()),
        # tainted: the reason, then what the run read
        (
            "call 555",
            state(tainted=True),
            Check.TAINT,
            ("the text has a number", "untrusted content (fetch_page"),
        ),
        ("HI", state(), Check.APPROVAL, ("the text shouts",)),
        # every reason a person is asked is given
        (
            "CALL 555",
            state(tainted=True),
            Check.TAINT,
            ("the text has a number", "the text shouts", "this run read"),
        ),
    ],
)
def test_given_a_policy_that_asks_for_a_person_then_the_call_needs_one_with_its_reasons(
    text: str, run: RunState, check: Check, reasons: tuple[str, ...]
) -> None:
    ruling = rule_on(asking_send(), "send", {"to": "owner@example.com", "text": text}, run)
    assert ruling.check is check, ruling.reason
    if reasons:
        assert isinstance(ruling, NeedsPerson)
        assert len(ruling.reasons) == len(reasons)
        assert all(want in got for want, got in zip(reasons, ruling.reasons, strict=True)), ruling.reasons


def test_given_a_refusing_and_an_asking_policy_then_the_refusal_rules() -> None:
    ruling = rule_on(
        asking_send(), "send", {"to": "thief@evil.example", "text": "CALL 555"}, state(tainted=True)
    )
    assert ruling.check is Check.POLICY and "only go to" in ruling.reason


def test_given_an_approved_call_when_rechecked_then_a_policy_that_asks_does_not_refuse_it() -> None:
    # The executor re-checks hard rules after a person approved: an "ask" is what the person answered.
    send = next(t for t in asking_send() if t.name == "send")
    args = send.validate({"to": "owner@example.com", "text": "CALL 555"})
    assert policy_refusal(send, args, FACTS) is None


# ------------------------------------------------------------------ every reason reaches the person


@pytest.mark.parametrize(
    ("tool", "args", "run", "draft", "reasons"),
    [
        # over the threshold in a run that read untrusted content: both, taint first
        ("pay", {"amount": 80}, state(tainted=True), False, ("this run read", "over $50")),
        # a screen's flag, what the run read, and the threshold
        (
            "pay",
            {"amount": 80},
            state(tainted=True, suspicious=True),
            False,
            ("screen", "this run read", "over $50"),
        ),
        # a tool that always needs a person says so even after untrusted content
        ("wipe", {}, state(tainted=True), False, ("this run read", "always needs a person")),
        # a draft-only tool adds why it waits to whatever else asked
        ("pay", {"amount": 80}, state(), True, ("over $50", "draft only")),
        ("pay", {"amount": 10}, state(), True, ("draft only",)),
    ],
)
def test_given_several_reasons_to_ask_then_the_ruling_carries_every_one(
    tool: str, args: dict[str, Any], run: RunState, draft: bool, reasons: tuple[str, ...]
) -> None:
    # Given a call that needs a person for more than one reason
    # When the guard rules on it
    ruling = rule_on(make_task(Effects()).tools, tool, args, run, (lambda name: draft))
    # Then each reason is there, in order, and none is dropped
    assert isinstance(ruling, NeedsPerson)
    assert len(ruling.reasons) == len(reasons), ruling.reasons
    assert all(want in got for want, got in zip(reasons, ruling.reasons, strict=True)), ruling.reasons


def test_given_two_untrusted_reads_then_the_reason_names_both_sources() -> None:
    run = RunState(FACTS, ["an email from a@example.com", "a web page", "a web page"])
    ruling = rule_on(make_task(Effects()).tools, "pay", {"amount": 10}, run)
    assert isinstance(ruling, NeedsPerson)
    assert ruling.reasons == ("this run read an email from a@example.com and a web page",)
