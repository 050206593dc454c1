"""`lockgate approvals list|show|approve|reject` on moto: an operator decides under the POST's rules."""

from __future__ import annotations

import io
import json
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from lockgate.actions.facts import Fact
from lockgate.actions.tools import fingerprint
from lockgate.approvals.proposals import HOUR, Proposal, ProposalStore
from lockgate.config import parse_config
from lockgate.inbox.store import InboxStore
from lockgate_infra.cli import approvals as approvals_cli
from lockgate_infra.cli import main as cli
from lockgate_infra.cli.targets import Target
from tests.refund_worker import refund_worker
from tests.support import Aws

CONFIG = """
[approvals]
[[approvals.reviewers]]
id = "alice"
roles = ["refunds"]
[[approvals.reviewers]]
id = "bob"
roles = ["refunds"]
[[approvals.reviewers]]
id = "carol"
roles = ["support"]

[approvals.tools.refund_order]
roles = ["refunds"]

[approvals.tools.wire_transfer]
roles = ["refunds"]
reviewers_required = 2
"""


class Stack:
    """The moto stack the CLI is pointed at, with helpers to seed and read it."""

    def __init__(self, aws: Aws, config: Path) -> None:
        self.aws, self.config = aws, config
        self.proposals = ProposalStore(aws.client("dynamodb"), aws.names["ApprovalsTable"])

    def propose(self, n: int = 1, *, tool: str = "refund_order", age: int = 60, **changes: Any) -> Proposal:
        """A stored proposal, created ``age`` seconds ago, deciding within a day of that."""
        args = {"order_id": f"A-{2000 + n}", "amount": "80.00"}
        created = int(time.time()) - age
        proposal = Proposal(
            approval_id=f"ap_{n:024x}",
            task="helpdesk",
            run_id=f"helpdesk#msg_{n}",
            tool=tool,
            args=args,
            fingerprint=fingerprint(args),
            summary=f"refund $80.00 on order A-{2000 + n}",
            unverified_reason="The parcel never arrived.",
            why=("this run read an email from customer@example.com",),
            created_at=created,
            expires_at=created + 24 * HOUR,
            run_within_seconds=HOUR,
            requester="agent:helpdesk",
            call_id=f"toolu_{n}",
        )
        proposal = Proposal(**{**proposal.__dict__, **changes})
        self.proposals.propose(proposal)
        return proposal

    def decisions(self) -> list[dict[str, Any]]:
        table = self.aws.names["DecisionsTable"]
        items = self.aws.client("dynamodb").scan(TableName=table, ConsistentRead=True)["Items"]
        return [i for i in items if "verdict" in i]  # decision rows, not the #state item

    def inbox_ids(self) -> list[str]:
        return sorted(i["pk"]["S"] for i in self.aws.inbox_items())

    def queued(self) -> list[str]:
        return [json.loads(m["Body"])["pk"] for m in self.aws.drain(self.aws.queue_url)]


@pytest.fixture
def stack(aws: Aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Stack:
    """`--local` resolves to the moto stack; the reviewers come from a test lockgate.toml."""
    config = tmp_path / "lockgate.toml"
    config.write_text(CONFIG)
    monkeypatch.setattr(
        cli, "local_target", lambda root, port=None: Target(aws.session, None, aws.names, "the test stack")
    )
    monkeypatch.delenv("LOCKGATE_REVIEWER", raising=False)
    stack = Stack(aws, config)
    rules = parse_config(tomllib.loads(CONFIG)).approvals
    checks = refund_worker("helpdesk", rules, stack.proposals)
    monkeypatch.setattr(approvals_cli, "worker_checks", lambda target: checks)
    return stack


def lockgate(stack: Stack, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main([*args, "--config", str(stack.config)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


class Terminal(io.StringIO):
    """A person at a terminal who will type ``typed``."""

    def isatty(self) -> bool:
        return True


def test_list_shows_the_pending_proposals_and_all_shows_the_expired_too(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given one pending and one expired proposal
    pending = stack.propose(1)
    expired = stack.propose(2, age=25 * HOUR)
    # When the operator lists them
    code, out, _ = lockgate(stack, capsys, "approvals", "list")
    # Then only the pending one is shown, with its task, summary, why and decisions so far
    assert code == 0
    assert pending.approval_id in out and expired.approval_id not in out
    assert "helpdesk" in out and "refund $80.00 on order A-2001" in out
    assert "this run read an email from customer@example.com" in out
    assert "none (1 needed)" in out
    # And --all --json lists both, with their states
    code, out, _ = lockgate(stack, capsys, "approvals", "list", "--all", "--json")
    states = {p["approval_id"]: p["state"] for p in json.loads(out)}
    assert states == {pending.approval_id: "pending", expired.approval_id: "expired"}
    # And --ids prints only the pending one's id, for a script (or the next command) to use
    assert lockgate(stack, capsys, "approvals", "list", "--ids")[:2] == (0, f"{pending.approval_id}\n")


def test_show_prints_the_real_arguments_the_unverified_reason_labelled_and_why(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    proposal = stack.propose(1, summary="refund \x1b[2J$80.00 on order A-2001")
    code, out, _ = lockgate(stack, capsys, "approvals", "show", proposal.approval_id)
    assert code == 0
    assert '"order_id": "A-2001"' in out and '"amount": "80.00"' in out
    assert "unverified — the assistant's own words, not checked:\n  The parcel never arrived." in out
    assert "why a person is asked:\n  - this run read an email from customer@example.com" in out
    assert "PENDING" in out and "decisions: none yet" in out
    # Text from the stored proposal cannot drive the terminal: control characters are shown, not sent
    assert "\x1b" not in out and "\\u001b[2J" in out
    code, out, _ = lockgate(stack, capsys, "approvals", "show", proposal.approval_id, "--json")
    assert json.loads(out)["args"] == proposal.args


def test_approve_as_a_reviewer_records_a_cli_decision_settles_it_and_enqueues_the_event(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    proposal = stack.propose(1)
    # When alice approves from the CLI without the typed confirmation
    code, out, _ = lockgate(
        stack, capsys, "approvals", "approve", proposal.approval_id, "--as", "alice", "--yes"
    )
    # Then her decision is recorded via the CLI, bound to the proposal's digest
    assert code == 0 and "approved" in out and "it will run once" in out
    ((row,),) = [stack.decisions()]
    assert row["approval_id"]["S"] == proposal.approval_id and row["reviewer"]["S"] == "alice"
    stored = (row["verdict"]["S"], row["via"]["S"], row["digest"]["S"])
    assert stored == ("approve", "cli", proposal.fingerprint)
    # And the worker is told: the inbox event is stored and queued
    key = f"approval#{proposal.approval_id}#approved"
    assert stack.inbox_ids() == [key]
    assert stack.queued() == [key]
    # And show reports it approved, with who and how
    code, out, _ = lockgate(stack, capsys, "approvals", "show", proposal.approval_id)
    assert "APPROVED" in out and "alice  approve" in out and "via cli" in out
    # And a second reviewer cannot decide a settled proposal
    code, _, err = lockgate(
        stack, capsys, "approvals", "approve", proposal.approval_id, "--as", "bob", "--yes"
    )
    assert code == 2 and "approved; nothing was decided" in err
    assert len(stack.decisions()) == 1


@pytest.mark.parametrize(
    ("who", "message"),
    [
        ("mallory", "not a reviewer in the config"),
        (
            "carol",
            "it needs 1 reviewer with the role refunds (rule: the tool's default) (allowed: alice, bob)",
        ),
    ],
)
def test_a_reviewer_who_is_unknown_or_not_allowed_for_the_tool_is_refused(
    stack: Stack, capsys: pytest.CaptureFixture[str], who: str, message: str
) -> None:
    proposal = stack.propose(1)
    code, _, err = lockgate(stack, capsys, "approvals", "approve", proposal.approval_id, "--as", who, "--yes")
    assert code == 2 and message in err
    assert stack.decisions() == [] and stack.inbox_ids() == []


def test_approve_without_saying_who_you_are_is_refused(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    proposal = stack.propose(1)
    code, _, err = lockgate(stack, capsys, "approvals", "approve", proposal.approval_id, "--yes")
    assert code == 2 and "--as REVIEWER_ID or LOCKGATE_REVIEWER" in err
    assert stack.decisions() == []


def test_without_yes_and_without_a_terminal_nothing_is_decided(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    proposal = stack.propose(1)
    # pytest's stdin is not a terminal: there is no person to confirm
    code, _, err = lockgate(stack, capsys, "approvals", "approve", proposal.approval_id, "--as", "alice")
    assert code == 2 and "--yes" in err
    assert stack.decisions() == [] and stack.inbox_ids() == []


def test_the_typed_confirmation_must_match_the_end_of_the_approval_id(
    stack: Stack, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    proposal = stack.propose(1)
    # Given a person who mistypes
    monkeypatch.setattr("sys.stdin", Terminal("nope\n"))
    code, out, err = lockgate(stack, capsys, "approvals", "approve", proposal.approval_id, "--as", "alice")
    assert code == 2 and "did not match" in err
    assert f"type {proposal.approval_id[-6:]}" in out and "refund $80.00 on order A-2001" in out
    assert stack.decisions() == []
    # When they type it right, it is approved
    monkeypatch.setattr("sys.stdin", Terminal(proposal.approval_id[-6:] + "\n"))
    code, _, _ = lockgate(stack, capsys, "approvals", "approve", proposal.approval_id, "--as", "alice")
    assert code == 0 and [r["via"]["S"] for r in stack.decisions()] == ["cli"]


def test_reject_records_the_rejection_and_tells_the_worker(
    stack: Stack, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    proposal = stack.propose(1)
    monkeypatch.setenv("LOCKGATE_REVIEWER", "bob")  # the caller's identity from the environment
    code, out, _ = lockgate(stack, capsys, "approvals", "reject", proposal.approval_id, "--yes")
    assert code == 0 and "it will not happen" in out
    ((row,),) = [stack.decisions()]
    assert (row["reviewer"]["S"], row["verdict"]["S"], row["via"]["S"]) == ("bob", "reject", "cli")
    assert stack.inbox_ids() == [f"approval#{proposal.approval_id}#rejected"]
    delivery = InboxStore(stack.aws.client("dynamodb"), stack.aws.inbox_table).get(stack.inbox_ids()[0])
    assert json.loads(delivery.body or b"") == {"approval_id": proposal.approval_id, "state": "rejected"}


def test_reject_with_a_reason_stores_it_and_show_prints_it_with_the_facts(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a proposal whose facts were captured when it was made (one of them the customer's words)
    facts = (Fact("Order status", "delivered"), Fact("The customer's message", "Refund \x1b[2Jnow", False))
    proposal = stack.propose(1, facts=facts)
    # When bob rejects it from the terminal with a reason
    code, out, _ = lockgate(
        stack, capsys, "approvals", "reject", proposal.approval_id, "--as", "bob", "--yes",
        "--reason", "Already replaced in ticket #88",
    )  # fmt: skip
    # Then the Decisions row holds the reason
    assert code == 0
    ((row,),) = [stack.decisions()]
    assert (row["verdict"]["S"], row["reason"]["S"]) == ("reject", "Already replaced in ticket #88")
    # And `show` prints it under bob's decision, and the facts (the unverified one marked, escaped)
    code, out, _ = lockgate(stack, capsys, "approvals", "show", proposal.approval_id)
    assert "bob  reject" in out and "\n    reason: Already replaced in ticket #88" in out
    assert "facts when proposed:\n  Order status: delivered" in out
    assert "The customer's message (UNVERIFIED): Refund \\u001b[2Jnow" in out and "\x1b" not in out
    shown = json.loads(lockgate(stack, capsys, "approvals", "show", proposal.approval_id, "--json")[1])
    assert shown["decisions"][0]["reason"] == "Already replaced in ticket #88"
    assert shown["facts"][1] == {
        "label": "The customer's message",
        "value": "Refund \x1b[2Jnow",
        "verified": False,
    }


def test_a_reason_too_long_decides_nothing(stack: Stack, capsys: pytest.CaptureFixture[str]) -> None:
    proposal = stack.propose(1)
    too_long = "x" * 501
    command = ("approvals", "reject", proposal.approval_id, "--as", "bob", "--yes", "--reason", too_long)
    code, _, err = lockgate(stack, capsys, *command)
    assert code == 2 and "at most 500 characters; nothing was decided" in err
    assert "Traceback" not in err and stack.decisions() == []


def test_approve_after_expiry_is_refused_and_records_nothing(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    proposal = stack.propose(1, age=25 * HOUR)
    code, _, err = lockgate(
        stack, capsys, "approvals", "approve", proposal.approval_id, "--as", "alice", "--yes"
    )
    assert code == 2 and "expired" in err
    assert stack.decisions() == [] and stack.inbox_ids() == []


def test_a_two_reviewer_tool_settles_only_on_the_second_distinct_approval(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    proposal = stack.propose(1, tool="wire_transfer", reviewers_required=2)
    code, out, _ = lockgate(
        stack, capsys, "approvals", "approve", proposal.approval_id, "--as", "alice", "--yes"
    )
    assert code == 0 and "another reviewer must also approve" in out
    assert stack.inbox_ids() == []
    # The same person cannot count twice
    code, _, err = lockgate(
        stack, capsys, "approvals", "approve", proposal.approval_id, "--as", "alice", "--yes"
    )
    assert code == 2 and "already decided" in err
    code, out, _ = lockgate(
        stack, capsys, "approvals", "approve", proposal.approval_id, "--as", "bob", "--yes"
    )
    assert code == 0 and "it will run once" in out
    assert stack.inbox_ids() == [f"approval#{proposal.approval_id}#approved"]
    assert len(stack.decisions()) == 2


def test_a_changed_proposal_or_an_unknown_id_is_refused(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    tampered = stack.propose(1, args={"order_id": "A-9999", "amount": "8000.00"})  # arguments changed
    code, _, err = lockgate(
        stack, capsys, "approvals", "approve", tampered.approval_id, "--as", "alice", "--yes"
    )
    assert code == 2 and "changed since they were proposed" in err
    code, _, err = lockgate(stack, capsys, "approvals", "approve", "ap_nosuch", "--as", "alice", "--yes")
    assert code == 2 and "no proposal 'ap_nosuch'" in err
    assert stack.decisions() == [] and stack.inbox_ids() == []


EDITABLE = {"amount": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.01}}


def test_edit_approves_a_changed_amount_as_a_new_version_and_show_prints_the_difference(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a two-reviewer proposal whose amount a reviewer may change, approved by alice as proposed
    proposal = stack.propose(1, tool="wire_transfer", reviewers_required=2, extra={"editable": EDITABLE})
    assert (
        lockgate(stack, capsys, "approvals", "approve", proposal.approval_id, "--as", "alice", "--yes")[0]
        == 0
    )
    # When bob approves it with the amount changed
    code, out, _ = lockgate(
        stack,
        capsys,
        "approvals",
        "edit",
        proposal.approval_id,
        "--set",
        "amount=40.00",
        "--as",
        "bob",
        "--yes",
    )
    # Then his approval counts for version 1 only, so it still waits for a second approval of it
    # and the line names the version that will run, what it needs, who edited it and what was proposed
    assert code == 0 and "another reviewer must also approve" in out
    assert "wire transfer $40.00 on order A-2001" in out and "edited by bob; proposed:" in out
    assert "it needs 2 reviewers with the role refunds" in out
    assert stack.inbox_ids() == []
    code, out, _ = lockgate(stack, capsys, "approvals", "show", proposal.approval_id)
    assert "PENDING" in out and "edited:     version 1 by bob" in out and "amount 80.00 -> 40.00" in out
    assert '"amount": "40.00"' in out and "bob  approve version 1" in out
    # The proposed arguments are not called what will run: the edited version is
    assert "exactly what will run" not in out
    assert "arguments as proposed (an edited version below replaces them):" in out
    code, out, _ = lockgate(stack, capsys, "approvals", "show", proposal.approval_id, "--json")
    shown = json.loads(out)
    assert shown["versions"][0]["changes"] == {"amount": {"from": "80.00", "to": "40.00"}}
    assert shown["editable"] == ["amount"]
    # When alice approves the edited version
    code, out, _ = lockgate(
        stack, capsys, "approvals", "approve", proposal.approval_id, "--as", "alice", "--yes"
    )
    # Then it is approved, and the worker is told
    assert code == 0 and "it will run once" in out
    assert stack.inbox_ids() == [f"approval#{proposal.approval_id}#approved"]
    assert sorted((d["reviewer"]["S"], d["version"]["N"]) for d in stack.decisions()) == [
        ("alice", "0"),
        ("alice#v1", "1"),
        ("bob#v1", "1"),
    ]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (["--set", "order_id=A-9"], "order_id cannot be edited (editable: amount)"),
        (["--set", "amount=-1"], "amount: more than 0"),
        (["--set", "amount"], "--set takes FIELD=VALUE"),
        (["--set", "amount=1", "--set", "amount=2"], "amount is set twice"),
    ],
)
def test_an_edit_that_is_not_allowed_decides_nothing(
    stack: Stack, capsys: pytest.CaptureFixture[str], changes: list[str], message: str
) -> None:
    proposal = stack.propose(1, extra={"editable": EDITABLE})
    code, out, err = lockgate(
        stack, capsys, "approvals", "edit", proposal.approval_id, *changes, "--as", "alice", "--yes"
    )
    assert code == 2 and message in err and "nothing was decided" in err and out == ""
    assert stack.decisions() == [] and stack.inbox_ids() == []


def test_a_refused_cli_decision_on_a_settled_proposal_is_kept_as_a_refusal_row(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a proposal alice approved
    proposal = stack.propose(1)
    assert (
        lockgate(stack, capsys, "approvals", "approve", proposal.approval_id, "--as", "alice", "--yes")[0]
        == 0
    )
    # When bob tries to reject it from the CLI
    code, _, err = lockgate(
        stack, capsys, "approvals", "reject", proposal.approval_id, "--as", "bob", "--yes"
    )
    # Then nothing is decided, the error is one line, and the attempt is kept beside the decisions
    assert code == 2 and err.count("\n") == 1 and "nothing was decided" in err
    table = stack.aws.names["DecisionsTable"]
    items = stack.aws.client("dynamodb").scan(TableName=table, ConsistentRead=True)["Items"]
    kept = [
        (i["channel"]["S"], i["who"]["S"], i["why"]["S"])
        for i in items
        if i.get("kind", {}).get("S") == "refusal"
    ]
    assert kept == [("cli", "bob", "settled")] and len(stack.decisions()) == 1


def test_wait_on_a_two_person_proposal_says_another_reviewer_is_pending_and_does_not_wait(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a transfer that needs two reviewers
    proposal = stack.propose(1, tool="wire_transfer", reviewers_required=2)
    # When alice approves it and asks to wait for what follows
    code, out, err = lockgate(
        stack, capsys, "approvals", "approve", proposal.approval_id, "--as", "alice", "--yes", "--wait"
    )
    # Then she is told that bob's approval is what is pending, not that the worker is late
    assert code == 0 and err == ""
    assert out.splitlines()[-1] == (
        f"then: waiting for another reviewer to approve (bob may); nothing runs until then "
        f"(lockgate approvals show {proposal.approval_id})"
    )
    assert "is the worker running" not in out and stack.inbox_ids() == []


def test_every_refused_cli_decision_is_kept_and_exported(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a pending refund whose amount may be edited
    proposal = stack.propose(1, extra={"editable": EDITABLE})
    attempts = [
        ("approve", "--as", "mallory"),  # no such reviewer
        ("approve", "--as", "carol"),  # a reviewer without the refunds role
        ("edit", "--set", "amount=900.00", "--as", "alice"),  # the worker would refuse it: over $500
    ]
    # When each is tried from the CLI
    for verb, *options in attempts:
        code, out, err = lockgate(stack, capsys, "approvals", verb, proposal.approval_id, *options, "--yes")
        assert code == 2 and out == "" and err.count("\n") == 1 and "nothing was decided" in err
    # Then nothing was decided, and each refusal is a row the audit export lists
    assert stack.decisions() == []
    code, out, _ = lockgate(stack, capsys, "approvals", "audit", "--since", "2020-01-01")
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert sorted((r["channel"], r["who"], r["why"]) for r in record["refusals"]) == [
        ("cli", "alice", "edit-refused"),
        ("cli", "carol", "no-role"),
        ("cli", "mallory", "unknown-reviewer"),
    ]
