"""Approval rules as data: thresholds on a call's arguments, what they ask for, and how rules combine.

Table-style, on the pure types (``lockgate.config.rules``) and the parsing of ``lockgate.toml``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from lockgate import ApprovalRule
from lockgate.config import parse_config
from lockgate.config.rules import Requirement, Threshold, plain_number
from lockgate.errors import ConfigError

SHOP = {
    "approvals": {
        "reviewers": [
            {"id": "alice", "roles": ["refunds", "support"]},
            {"id": "bob", "roles": ["refunds"]},
            {"id": "carol", "roles": ["support"]},
        ],
        "tools": {
            "refund_order": {
                "roles": ["refunds", "support"],
                "rules": [
                    {
                        "name": "refunds over $100",
                        "argument": "amount",
                        "over": 100,
                        "reviewers_required": 2,
                        "roles": ["refunds"],
                    },
                    {"argument": "amount", "over": "1000.00", "refuse": True, "why": "finance does these"},
                ],
            }
        },
    }
}


@pytest.mark.parametrize(
    ("operator", "value", "argument", "matches"),
    [
        ("over", "100", "100.00", False),
        ("over", "100", "100.01", True),
        ("at_least", "100", "100", True),
        ("at_least", "100", "99.99", False),
        ("under", "10", 9, True),
        ("under", "10", 10.0, False),
        ("at_most", "10", "10.00", True),
        ("at_most", "10", "10.01", False),
        ("over", "100", None, False),  # an optional argument left out: no threshold passed
        ("over", "100", "1e3", True),  # not a plain number: asks for more, never less
        ("over", "100", "৪0.00", True),  # another script's digits: the same
        ("over", "100", True, True),  # a boolean is not a number
    ],
)
def test_given_a_threshold_then_it_matches_exactly_the_values_past_it(
    operator: str, value: str, argument: Any, matches: bool
) -> None:
    threshold = Threshold("amount", operator, Decimal(value))
    assert threshold.matches({"amount": argument}) is matches


@pytest.mark.parametrize(
    ("value", "number"),
    [
        ("12.50", Decimal("12.50")),
        (" 7 ", Decimal(7)),
        (3, Decimal(3)),
        (2.5, Decimal("2.5")),
        ("-1", Decimal(-1)),
    ],
)
def test_plain_numbers_are_ascii_digits_only(value: Any, number: Decimal) -> None:
    assert plain_number(value) == number


@pytest.mark.parametrize("value", ["1e3", "inf", "NaN", "1,000", "١٢", "", "12.", ".5", float("inf"), None])
def test_anything_else_is_not_a_plain_number(value: Any) -> None:
    assert plain_number(value) is None


def test_given_the_shops_rules_then_each_amount_needs_what_its_threshold_says() -> None:
    section = parse_config(SHOP).approvals.for_tool("refund_order")
    # Then $80 needs one reviewer of either role, by the tool's own section
    small = section.requirement({"amount": "80.00"})
    assert (small.reviewers_required, small.roles, small.applied, small.refused) == (
        1,
        ("refunds", "support"),
        (),
        "",
    )
    assert small.describe() == "1 reviewer with one of the roles refunds, support (rule: the tool's default)"
    # And $150 needs two with the refunds role, by the named rule
    large = section.requirement({"amount": "150.00"})
    assert (large.reviewers_required, large.roles, large.applied) == (2, ("refunds",), ("refunds over $100",))
    assert large.describe() == "2 reviewers with the role refunds (rule: refunds over $100)"
    assert large.needs_person
    # And $1,500 is refused outright, saying why
    huge = section.requirement({"amount": "1500.00"})
    assert huge.refused == "amount over 1000.00: finance does these" and not huge.needs_person


@pytest.mark.parametrize(
    ("base", "rule", "expected"),
    [
        # more reviewers: the larger count wins
        (Requirement(1, ()), ApprovalRule("r", reviewers_required=2), Requirement(2, (), ("r",))),
        (Requirement(3, ()), ApprovalRule("r", reviewers_required=2), Requirement(3, (), ("r",))),
        # roles only narrow: what both allow
        (Requirement(1, ("a", "b")), ApprovalRule("r", roles=("b", "c")), Requirement(1, ("b",), ("r",))),
        (Requirement(1, ()), ApprovalRule("r", roles=("a",)), Requirement(1, ("a",), ("r",))),
        (Requirement(1, ("a",)), ApprovalRule("r"), Requirement(1, ("a",), ("r",))),
    ],
)
def test_a_rule_only_ever_asks_for_more(base: Requirement, rule: ApprovalRule, expected: Requirement) -> None:
    assert base.with_rule(rule) == expected


def test_roles_that_share_nothing_leave_nobody_to_approve_so_the_call_is_refused() -> None:
    combined = Requirement(1, ("support",)).with_rule(ApprovalRule("finance only", roles=("finance",)))
    assert combined.refused.startswith("no reviewer role satisfies every rule that applies (finance only)")


def test_the_stricter_of_two_requirements_keeps_every_rule_and_any_refusal() -> None:
    worker = Requirement(2, ("refunds", "support"), ("hook: new customer",), reasons=("a new customer",))
    file = Requirement(1, ("refunds",), ("refunds over $100",), reasons=("two people",))
    both = worker.stricter(file)
    assert (both.reviewers_required, both.roles) == (2, ("refunds",))
    assert both.rules() == [("hook: new customer", "a new customer"), ("refunds over $100", "two people")]
    assert file.stricter(Requirement(refused="no")).refused == "no"


def test_a_requirement_survives_being_stored() -> None:
    requirement = parse_config(SHOP).approvals.for_tool("refund_order").requirement({"amount": "150"})
    assert Requirement.from_json(requirement.to_json()) == requirement
    assert Requirement.from_json("not stored") is None


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (
            {"argument": "amount", "reviewers_required": 2},
            "give exactly one of over, at_least, under, at_most",
        ),
        ({"argument": "amount", "over": 1, "under": 5, "refuse": True}, "give exactly one of"),
        ({"argument": "amount", "over": "lots", "refuse": True}, "is a number"),
        ({"argument": "amount", "over": 1e400, "refuse": True}, "is a number"),
        ({"argument": "amount", "over": 100}, "say what it asks for"),
        ({"argument": "my amount", "over": 1, "refuse": True}, "argument is the name"),
        ({"argument": "amount", "over": 1, "reviewers_required": 6}, "reviewers_required is 1 to 5"),
        ({"argument": "amount", "over": 1, "refuse": "yes"}, "refuse is true or false"),
        ({"argument": "amount", "over": 1, "refuse": True, "colour": "red"}, "unknown key"),
        ({"argument": "amount", "over": 1, "refuse": True, "name": ""}, "name is 1 to 120 characters"),
    ],
)
def test_a_rule_that_cannot_be_read_stops_the_config_saying_which_and_why(
    rule: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        parse_config({"approvals": {"tools": {"refund_order": {"rules": [rule]}}}})
    assert "tools.refund_order.rules[0]" in str(raised.value)


def test_escalation_needs_both_its_time_and_its_roles() -> None:
    with pytest.raises(ConfigError, match="escalate_after_minutes and escalate_roles go together"):
        parse_config({"approvals": {"tools": {"refund_order": {"escalate_after_minutes": 30}}}})
    section = parse_config(
        {"approvals": {"tools": {"x": {"escalate_after_minutes": 30, "escalate_roles": ["leads"]}}}}
    ).approvals.for_tool("x")
    assert (section.escalate_after_minutes, section.escalate_roles) == (30, ("leads",))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": " "}, "name is 1 to"),
        ({"name": "r", "reviewers_required": 0}, "reviewers_required is 1 to 5"),
        ({"name": "r", "roles": "refunds"}, "roles is a tuple"),
    ],
)
def test_a_hook_rule_is_checked_when_made(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ApprovalRule(**kwargs)
