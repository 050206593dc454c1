"""The MCP chaos run's judge, on records made by hand: each invariant holds on a clean record and
reports the one thing wrong with a broken one (so a run's "0 violations" is not a formality).

The server's record is the example server's own ``Desk`` (never started: nothing is sent here);
the account's tables are plain items as the ledger, the worker and the approval desk write them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from lockgate.actions.tools import fingerprint
from lockgate_infra.chaos.mcp_faults import Change
from lockgate_infra.chaos.mcp_invariants import McpFindings, judge_mcp
from lockgate_infra.chaos.mcp_run import mcp_config
from lockgate_infra.chaos.mcp_traffic import tickets
from lockgate_infra.mcp_example import Desk, McpExample, Seen

CREDIT = {"ticket_id": "T-1", "amount_cents": 1500}
AT = 1_000  # when the server acts, on its clock


@dataclass
class Record:
    """One run's record: the server's (desk, requests seen) and the account's tables."""

    server: McpExample = field(default_factory=lambda: McpExample(desk=Desk(tickets(), clock=lambda: AT)))
    tables: dict[str, list[dict[str, Any]]] = field(
        default_factory=lambda: {"StateTable": [], "ApprovalsTable": [], "DecisionsTable": []}
    )
    change: Change | None = None

    def credit(self, key: str | None, args: dict[str, Any] = CREDIT) -> None:
        """The server credits, as a keyed call reaching it would."""
        self.server.seen.append(Seen("tools/call", "issue_credit", key, False, True))
        self.server.desk.issue_credit(args["ticket_id"], args["amount_cents"], key)

    def ledger(
        self, key: str, run: str = "run-1", args: dict[str, Any] = CREDIT, state: str = "SUCCEEDED"
    ) -> None:
        """The ledger's entry for a credit under ``key``."""
        item = {
            "pk": {"S": f"op#{run}#tickets__issue_credit"},
            "tool": {"S": "tickets__issue_credit"},
            "idempotency_key": {"S": key},
            "run_id": {"S": run},
            "fingerprint": {"S": fingerprint(args)},
            "state": {"S": state},
        }
        if state == "SUCCEEDED":
            item["result"] = {"S": json.dumps({"structuredContent": {"idempotency_key": key}})}
        else:
            item["error"] = {"S": "ToolError: nothing was done"}
        self.tables["StateTable"].append(item)

    def proposal(self, approval_id: str = "ap_1", run: str = "run-1", args: dict[str, Any] = CREDIT) -> None:
        self.tables["ApprovalsTable"].append(
            {
                "approval_id": {"S": approval_id},
                "tool": {"S": "tickets__issue_credit"},
                "run_id": {"S": run},
                "args": {"S": json.dumps(args, sort_keys=True)},
                "digest": {"S": fingerprint(args)},
                "reviewers_required": {"N": "1"},
            }
        )

    def edit(self, args: dict[str, Any], approval_id: str = "ap_1", version: int = 1) -> None:
        self.tables["DecisionsTable"].append(
            {
                "approval_id": {"S": approval_id},
                "reviewer": {"S": f"#v{version}"},
                "kind": {"S": "version"},
                "version": {"N": str(version)},
                "args": {"S": json.dumps(args, sort_keys=True)},
                "digest": {"S": fingerprint(args)},
            }
        )

    def decide(
        self,
        by: str = "alice",
        approval_id: str = "ap_1",
        args: dict[str, Any] = CREDIT,
        version: int = 0,
        at: int = AT - 60,
    ) -> None:
        self.tables["DecisionsTable"].append(
            {
                "approval_id": {"S": approval_id},
                "reviewer": {"S": by if version == 0 else f"{by}#v{version}"},
                "by": {"S": by},
                "verdict": {"S": "approve"},
                "version": {"N": str(version)},
                "digest": {"S": fingerprint(args)},
                "decided_at": {"N": str(at)},
            }
        )

    def judged(self) -> McpFindings:
        world = SimpleNamespace(config=mcp_config("2026-07-28"), scan=lambda name: self.tables[name])
        return judge_mcp(world, self.server, self.change)  # type: ignore[arg-type]


def approved_credit(record: Record) -> None:
    """alice approved a credit of 1500 on T-1 as proposed; it ran once, under its key."""
    record.proposal()
    record.decide()
    record.ledger("lg_1")
    record.credit("lg_1")


def test_given_an_approved_credit_that_ran_once_then_nothing_is_wrong() -> None:
    # Given alice (support) approved a credit as proposed, and the server acted once under its key
    record = Record()
    approved_credit(record)
    # When judged, Then nothing is wrong, and the effect counts as approved
    verdict = record.judged()
    assert verdict.violations == []
    assert verdict.counts["effects approved"] == 1 and verdict.counts["call:issue_credit"] == 1


def test_given_a_reviewer_edited_the_amount_then_the_edited_amount_is_the_one_that_may_run() -> None:
    # Given alice approved the credit edited down to 1000
    edited = {"ticket_id": "T-1", "amount_cents": 1000}
    record = Record()
    record.proposal()
    record.edit(edited)
    record.decide(args=edited, version=1)
    # When the server credited 1000 under the ledger's key, Then that is approved, as an edit
    record.ledger("lg_1", args=edited)
    record.credit("lg_1", edited)
    verdict = record.judged()
    assert verdict.violations == [] and verdict.counts["effects of an edit"] == 1
    # And had it credited the 1500 first proposed, nobody approved that
    record = Record()
    record.proposal()
    record.edit(edited)
    record.decide(args=edited, version=1)
    record.ledger("lg_1")
    record.credit("lg_1")
    assert record.judged().violations == [
        "issue_credit effect E-1 {'ticket_id': 'T-1', 'amount_cents': 1500} matches no version a person "
        "approved for run run-1"
    ]


BROKEN: list[tuple[str, Callable[[Record], None], str]] = [
    (
        "approved by a reviewer without the support role",
        lambda r: (r.proposal(), r.decide(by="bob"), r.ledger("lg_1"), r.credit("lg_1")),
        "matches no version a person approved for run run-1",
    ),
    (
        "approved only after the server acted",
        lambda r: (r.proposal(), r.decide(at=AT + 30), r.ledger("lg_1"), r.credit("lg_1")),
        "matches no version a person approved for run run-1",
    ),
    (
        "an effect under a key the ledger never issued",
        lambda r: (approved_credit(r), r.credit("lg_made_up", {"ticket_id": "T-2", "amount_cents": 5})),
        "issue_credit effect E-2 under a key no ledger entry holds (lg_made_up)",
    ),
    (
        "acted twice under one key",
        lambda r: (approved_credit(r), r.server.desk._by_key.clear(), r.credit("lg_1")),
        "the server acted 2 times under one key lg_1",
    ),  # noqa: SLF001 - a desk that forgot its keys
    (
        "two credits for one ticket (its business identity)",
        lambda r: (
            approved_credit(r),
            r.proposal("ap_2", "run-2"),
            r.decide(approval_id="ap_2"),
            r.ledger("lg_2", "run-2"),
            r.credit("lg_2"),
        ),
        "2 issue_credit effects for one business identity ('T-1',)",
    ),
    (
        "an effect with no key",
        lambda r: (approved_credit(r), r.credit(None)),
        "1 effects made under no idempotency key",
    ),
    (
        "a write sent without its key",
        lambda r: (
            approved_credit(r),
            r.server.seen.append(Seen("tools/call", "add_comment", None, False, True)),
        ),
        "a add_comment call arrived without its idempotency key",
    ),
    (
        "a write sent again after it acted",
        lambda r: (approved_credit(r), r.credit("lg_1")),
        "issue_credit sent again under lg_1 after the server had acted on it",
    ),
    (
        "a refused tool called",
        lambda r: (
            approved_credit(r),
            r.server.seen.append(Seen("tools/call", "list_tickets", None, False, True)),
        ),
        "list_tickets, which lockgate.toml refuses, was called",
    ),
    (
        "the ledger says FAILED, the server acted",
        lambda r: (r.proposal(), r.decide(), r.ledger("lg_1", state="FAILED"), r.credit("lg_1")),
        "the ledger says issue_credit under lg_1 FAILED (ToolError: nothing was done); the server did it",
    ),
    (
        "the ledger says SUCCEEDED, the server never acted",
        lambda r: (approved_credit(r), r.ledger("lg_2", "run-2")),
        "the ledger says issue_credit under lg_2 SUCCEEDED",
    ),
    (
        "a tool called after its definition changed",
        lambda r: (setattr(r, "change", Change("issue_credit", 0, 5)), approved_credit(r)),
        "issue_credit was called 1 times after its definition changed",
    ),
]


@pytest.mark.parametrize(("break_it", "violation"), [b[1:] for b in BROKEN], ids=[b[0] for b in BROKEN])
def test_given_one_thing_wrong_in_the_record_then_the_judge_names_it(
    break_it: Callable[[Record], None], violation: str
) -> None:
    # Given a clean record, When one thing goes wrong in it
    record = Record()
    break_it(record)
    # Then the judge names it (a double effect may break more than one invariant: each is named)
    violations = record.judged().violations
    assert any(violation in v for v in violations), violations


def test_given_a_change_after_the_last_call_then_nothing_was_called_after_it() -> None:
    # Given the credit's definition changed once every call had been made
    record = Record()
    approved_credit(record)
    record.change = Change("issue_credit", len(record.server.seen), 9)
    # Then the calls before it are no violation
    assert record.judged().violations == []
