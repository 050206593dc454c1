"""[approvals] read against the tasks' tools: a rule that cannot hold stops the worker at start, named."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from lockgate.approvals.rule_checks import require_valid_rules, rule_findings
from lockgate.config import parse_config
from lockgate.errors import ConfigError
from tests.refund_worker import refund_task

REVIEWERS = """
[[approvals.reviewers]]
id = "alice"
roles = ["refunds"]
[[approvals.reviewers]]
id = "lee"
roles = ["leads"]
"""


def findings(section: str) -> list[str]:
    config = parse_config(tomllib.loads(REVIEWERS + section)).approvals
    return rule_findings(config, [refund_task("helpdesk")])


def tool(head: str = "", rule: str = "", name: str = "refund_order") -> str:
    """``[approvals.tools.NAME]`` with ``head``'s keys, and one rule with ``rule``'s keys."""
    text = f"[approvals.tools.{name}]\n{head}"
    return text + (f"[[approvals.tools.{name}.rules]]\n{rule}" if rule else "")


AMOUNT = 'argument = "amount"\nover = 100\n'


def test_a_sound_section_has_no_findings() -> None:
    head = 'roles = ["refunds"]\nescalate_after_minutes = 60\nescalate_roles = ["leads"]\n'
    assert findings(tool(head, AMOUNT + "refuse = true\n")) == []


@pytest.mark.parametrize(
    ("section", "finding"),
    [
        (
            tool(rule='argument = "amont"\nover = 1\nrefuse = true\n'),
            "rules[0]: argument 'amont' is not one of refund_order's number arguments (amount)",
        ),
        (
            tool(rule='argument = "order_id"\nover = 1\nrefuse = true\n'),
            "argument 'order_id' is not one of refund_order's number arguments",
        ),
        (tool('roles = ["finance"]\n'), "roles: no reviewer has the role 'finance'"),
        (
            tool('roles = ["refunds"]\nreviewers_required = 2\n'),
            "reviewers_required: needs 2 reviewers with the role refunds, and only 1 reviewer(s) (alice) can",
        ),
        (
            tool('roles = ["refunds"]\n', AMOUNT + 'roles = ["leads"]\n'),
            "rules[0]: no reviewer role satisfies every rule that applies",
        ),
        (
            tool('escalate_after_minutes = 1440\nescalate_roles = ["leads"]\n'),
            "escalate_after_minutes (1440) is not before the request expires",
        ),
        (
            tool(rule=AMOUNT + "refuse = true\n", name="refund_ordr"),
            "no task offers a tool called 'refund_ordr': check the name",
        ),
    ],
)
def test_each_mistake_is_one_finding_that_names_the_setting(section: str, finding: str) -> None:
    found = findings(section)
    assert len(found) == 1, found
    assert finding in found[0] and found[0].startswith("lockgate.toml [approvals.tools.")


def test_the_worker_refuses_to_start_on_the_first_finding() -> None:
    config: Any = parse_config(
        tomllib.loads(REVIEWERS + '[approvals.tools.refund_order]\nroles = ["x"]\n')
    ).approvals
    with pytest.raises(ConfigError, match="no reviewer has the role 'x'"):
        require_valid_rules(config, [refund_task("helpdesk")])
