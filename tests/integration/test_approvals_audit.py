"""`lockgate approvals audit` on moto: every proposal of a time range, as an auditor receives it.

The proposals are decided through the same ``DecisionRecorder`` as the page, Slack and the CLI, the
worker's part is played by the inbox and ledger calls it makes, and refused attempts are kept by
the approval side's own ``RefusalLog``.
"""

from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from lockgate.actions.ledger import Ledger
from lockgate.actions.tools import fingerprint
from lockgate.approvals.audit import AuditTrail
from lockgate.approvals.decisions import Choice, DecisionOutcome, DecisionRecorder, DecisionStore
from lockgate.approvals.events import approval_event
from lockgate.approvals.links import new_claims, sign_link
from lockgate.approvals.proposals import HOUR, Proposal, ProposalStore
from lockgate.approvals.refusals import RefusalLog, Why
from lockgate.clock import FixedClock
from lockgate.config import load_config
from lockgate.inbox.models import delivery_key
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.telemetry import CountingMetrics
from lockgate_infra.cli import main as cli
from lockgate_infra.cli.audit import audit_trail
from lockgate_infra.cli.audit_csv import COLUMNS, FORMULA_START
from lockgate_infra.cli.audit_files import read_audit
from lockgate_infra.cli.targets import Target
from tests.integration.test_approvals_cli import CONFIG, EDITABLE  # the same reviewers and rules
from tests.refund_worker import refund_worker
from tests.support import LOG, Aws

LINK_SECRET = b"approval-link-secret-for-the-audit-test-0123"
INJECTION = '=HYPERLINK("https://evil.example/x","open") duplicate of A-2003'


@dataclass
class Shop:
    """A moto stack with a clock that starts now, so the CLI's own clock agrees on what expired."""

    aws: Aws
    config_path: Path
    clock: FixedClock

    def __post_init__(self) -> None:
        db = self.aws.client("dynamodb")
        self.db = db
        self.config = load_config(self.config_path).approvals
        self.proposals = ProposalStore(db, self.aws.names["ApprovalsTable"])
        self.inbox = InboxStore(db, self.aws.inbox_table)
        self.ledger = Ledger(db, self.aws.state_table, self.clock)
        self.refusals = RefusalLog(db, self.aws.names["DecisionsTable"], self.clock, LOG, CountingMetrics())
        self.recorder = DecisionRecorder(
            decisions=DecisionStore(db, self.aws.names["DecisionsTable"]),
            config=self.config,
            inbox=self.inbox,
            queue=InboxQueue(self.aws.client("sqs"), self.aws.queue_url),
            clock=self.clock,
            log=LOG,
            metrics=CountingMetrics(),
            # The worker's check of an edit, as the callback asks it: the same task and tools.
            checks=refund_worker("support-inbox", self.config, self.proposals),
        )

    def propose(self, n: int, *, tool: str = "refund_order", age: int = 600, **changes: Any) -> Proposal:
        args = {"order_id": f"A-{2000 + n}", "amount": "80.00"}
        created = int(self.clock.now()) - age
        proposal = Proposal(
            approval_id=f"ap_{n:024x}",
            task="support-inbox",
            run_id=f"helpdesk#msg_{n}",
            tool=tool,
            args=args,
            fingerprint=fingerprint(args),
            summary=f"refund $80.00 on order A-{2000 + n}",
            unverified_reason="The parcel arrived broken.",
            why=("this run read an email from grace@example.com", "refunds over $50.00 need a person"),
            created_at=created,
            expires_at=created + 24 * HOUR,
            run_within_seconds=HOUR,
            requester="grace@example.com",
            call_id=f"toolu_{n}",
            extra={"op_key": f"refund#A-{2000 + n}#80.00", "editable": EDITABLE},
        )
        proposal = replace(proposal, **changes)
        self.proposals.propose(proposal)
        return proposal

    def decide(self, proposal: Proposal, who: str, verdict: Choice, **options: Any) -> DecisionOutcome:
        self.clock.advance(30)
        return self.recorder.record(proposal, who, verdict, "link", **options)

    def worker_handles(self, approval_id: str, kind: str, outcome: str) -> None:
        """What the worker does with an approval event: takes its lease and finishes it with its line."""
        key = delivery_key("approval", f"{approval_id}#{kind}")
        now = int(self.clock.now())
        self.inbox.put_new(approval_event(approval_id, kind, now))  # a no-op when the decision stored it
        self.inbox.claim(key, "worker-1", now, 60)
        self.inbox.finish(key, "worker-1", outcome, now)

    def refused(self, proposal: Proposal, channel: str, who: str, why: Why) -> None:
        """A refused attempt, kept by the approval side's own refusal log."""
        self.refusals.record(proposal.approval_id, channel, who, why)

    def refused_without_time(self, proposal: Proposal, channel: str, who: str, why: str) -> None:
        """A refusal row with no ``at`` (its time only in its sort key): the audit still reads it."""
        self.db.put_item(
            TableName=self.aws.names["DecisionsTable"],
            Item={
                "approval_id": {"S": proposal.approval_id},
                "reviewer": {"S": f"refused#{int(self.clock.now())}#0badc0de"},
                "kind": {"S": "refusal"},
                "channel": {"S": channel},
                "who": {"S": who},
                "why": {"S": why},
            },
        )

    def trail(self) -> AuditTrail:
        return audit_trail(
            Target(self.aws.session, None, self.aws.names, "the test stack"), self.config, self.clock
        )


@pytest.fixture
def shop(aws: Aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Shop:
    config = tmp_path / "lockgate.toml"
    config.write_text(CONFIG)
    monkeypatch.setattr(
        cli, "local_target", lambda root, port=None: Target(aws.session, None, aws.names, "the test stack")
    )
    return Shop(aws, config, FixedClock(int(time.time()) - 3_600))


def lockgate(shop: Shop, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    # What the setup printed is not the command's: the functions' JSON log lines land on stdout
    # when an earlier test in this process left the "lockgate" logger a handler.
    capsys.readouterr()
    code = cli.main(["approvals", "audit", *args, "--config", str(shop.config_path)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def a_week_of_decisions(shop: Shop) -> dict[str, Proposal]:
    """Given proposals that were edited, two-person approved, rejected with a reason, expired and refused."""
    edited = shop.propose(1)
    assert shop.decide(edited, "alice", Choice.APPROVE, edit={"amount": "40.00"}) is DecisionOutcome.APPROVED
    shop.refused(edited, "slack", "T0123/U0MALLORY", Why.NOT_A_REVIEWER)
    shop.worker_handles(
        edited.approval_id,
        "approved",
        "refund $40.00 on order A-2001: SUCCEEDED (edited by alice, approved by alice)",
    )
    pair = shop.propose(2, tool="wire_transfer", reviewers_required=2)
    assert shop.decide(pair, "alice", Choice.APPROVE) is DecisionOutcome.AWAITING
    assert shop.decide(pair, "bob", Choice.APPROVE) is DecisionOutcome.APPROVED
    shop.ledger.execute(
        op_key=pair.extra["op_key"],
        fingerprint=pair.fingerprint,
        tool=pair.tool,
        run_id=pair.run_id,
        summary=pair.summary,
        effect=lambda idempotency_key: {"transfer": "tr_1"},
    )
    shop.worker_handles(pair.approval_id, "approved", "refund $80.00 on order A-2002: SUCCEEDED")
    rejected = shop.propose(3)
    assert shop.decide(rejected, "bob", Choice.REJECT, reason=INJECTION) is DecisionOutcome.REJECTED
    shop.worker_handles(rejected.approval_id, "rejected", "not run: rejected by bob")
    expired = shop.propose(4, age=25 * HOUR)
    shop.worker_handles(expired.approval_id, "expired", "not run: expired: nobody decided in time")
    refused = shop.propose(5, summary="-refund $80.00 on order A-2005")
    shop.refused(refused, "slack", "T0123/U0MALLORY", Why.NOT_A_REVIEWER)
    shop.clock.advance(5)
    shop.refused_without_time(refused, "link", "carol", "a-reason-added-later")
    return {"edited": edited, "pair": pair, "rejected": rejected, "expired": expired, "refused": refused}


def test_the_export_round_trips_in_both_formats_with_every_version_decision_refusal_and_outcome(
    shop: Shop, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    made = a_week_of_decisions(shop)
    outside = shop.propose(6, age=40 * 86_400)  # created before the range
    since, until = int(shop.clock.now()) - 2 * 86_400, int(time.time()) + 60
    # When the audit reads the range
    records = list(shop.trail().records(since, until))
    # Then it holds each proposal of the range, oldest first, and only those
    assert [r.approval_id for r in records] == [
        made[k].approval_id for k in ("expired", "edited", "pair", "rejected", "refused")
    ]
    assert outside.approval_id not in {r.approval_id for r in records}
    # When it is exported as JSON lines and as CSV, and each file is read back
    for name, form in (("audit.jsonl", "jsonl"), ("audit.csv", "csv")):
        path = tmp_path / name
        code, out, _ = lockgate(
            shop, capsys, "--since", str(since), "--until", str(until), "--output", str(path)
        )
        rows = sum(2 + len(r.versions) + len(r.decisions) + len(r.refusals) for r in records)
        unit = "5 lines" if form == "jsonl" else f"{rows} rows"
        assert (code, out) == (0, f"wrote 5 proposals ({unit}) to {path}\n")
        # Then what is read back is the records, exactly
        assert read_audit(path) == records, form


def test_each_record_says_what_was_asked_changed_decided_refused_and_what_ran(shop: Shop) -> None:
    made = a_week_of_decisions(shop)
    records = {r.approval_id: r for r in shop.trail().records(0, int(time.time()) + 60)}
    # The edited one: version 1 by alice, what she changed, and the worker's line for what ran
    edited = records[made["edited"].approval_id]
    (version,) = edited.versions
    assert (version.n, version.editor, version.changes) == (1, "alice", {"amount": ("80.00", "40.00")})
    assert version.args == {"order_id": "A-2001", "amount": "40.00"}
    (decision,) = edited.decisions
    assert (decision.reviewer, decision.verdict, decision.version) == ("alice", Choice.APPROVE, 1)
    assert decision.fingerprint == version.fingerprint != made["edited"].fingerprint
    assert [(r.channel, r.who, r.why) for r in edited.refusals] == [
        ("slack", "T0123/U0MALLORY", "not-a-reviewer")
    ]
    assert edited.outcome.state == "approved" and edited.outcome.ledger_state == ""  # another key ran it
    assert (edited.outcome.worker_event, edited.outcome.worker_status) == ("approved", "done")
    assert edited.outcome.worker_outcome.startswith("refund $40.00 on order A-2001: SUCCEEDED")
    # The two-person one: both approvals, and the ledger row it ran under
    pair = records[made["pair"].approval_id]
    assert [(d.reviewer, d.verdict.value) for d in pair.decisions] == [
        ("alice", "approve"),
        ("bob", "approve"),
    ]
    assert pair.reviewers_required == 2
    assert (pair.outcome.state, pair.outcome.ledger_state) == ("approved", "SUCCEEDED")
    assert pair.outcome.ledger_at is not None
    # The rejected one, with the reviewer's words
    rejected = records[made["rejected"].approval_id]
    assert [(d.reviewer, d.reason) for d in rejected.decisions] == [("bob", INJECTION)]
    assert (rejected.outcome.state, rejected.outcome.worker_outcome) == (
        "rejected",
        "not run: rejected by bob",
    )
    # The expired one, and the refused one still waiting, with both refusals (one read from its key)
    expired = records[made["expired"].approval_id]
    assert (expired.decisions, expired.outcome.state, expired.outcome.worker_event) == (
        (),
        "expired",
        "expired",
    )
    refused = records[made["refused"].approval_id]
    assert refused.outcome.state == "pending" and refused.outcome.worker_event == ""
    assert [(r.channel, r.who, r.why) for r in refused.refusals] == [
        ("slack", "T0123/U0MALLORY", "not-a-reviewer"),
        ("link", "carol", "a-reason-added-later"),
    ]
    assert refused.refusals[1].at == refused.refusals[0].at + 5


def test_the_csv_is_one_row_per_event_with_fixed_columns_and_no_cell_a_spreadsheet_would_run(
    shop: Shop, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    made = a_week_of_decisions(shop)
    path = tmp_path / "audit.csv"
    assert lockgate(shop, capsys, "--since", "2020-01-01", "--output", str(path))[0] == 0
    raw = path.read_text(encoding="utf-8")
    # Then it starts with a byte-order mark (spreadsheets read it as UTF-8) and the fixed header
    assert raw.startswith("\ufeff")
    rows = list(csv.reader(io.StringIO(raw.removeprefix("\ufeff"), newline="")))
    assert tuple(rows[0]) == COLUMNS
    events = [(row[0], row[1]) for row in rows[1:]]
    rejected = made["rejected"].approval_id
    assert [e for i, e in events if i == rejected] == ["proposed", "decided", "outcome"]
    assert [e for i, e in events if i == made["edited"].approval_id] == [
        "proposed", "edited", "decided", "refused", "outcome"
    ]  # fmt: skip
    # And no cell could be taken for a formula: the reviewer's "=HYPERLINK(...)" and the summary
    # starting with "-" are written with a ' in front
    cells = [cell for row in rows[1:] for cell in row]
    assert [c for c in cells if c.lstrip(" ")[:1] in FORMULA_START] == []
    assert "'" + INJECTION in cells and "'-refund $80.00 on order A-2005" in cells


def test_the_export_holds_no_link_token_or_secret(
    shop: Shop, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    made = a_week_of_decisions(shop)
    # Given each reviewer's signed link to each proposal
    links = [
        sign_link(LINK_SECRET, new_claims(p.approval_id, who, p.fingerprint, shop.clock.now(), 3_600))
        for p in made.values()
        for who in ("alice", "bob")
    ]
    tokens = {
        value
        for link in links
        for key, value in (pair.split("=", 1) for pair in link.split("&"))
        if key in "sn"
    }
    for form in ("jsonl", "csv"):
        code, out, _ = lockgate(shop, capsys, "--since", "2020-01-01", "--format", form)
        # Then no signature, nonce or secret is in the export, and a record has only the documented fields
        assert code == 0 and all(token not in out for token in tokens)
        assert LINK_SECRET.decode() not in out
    code, out, _ = lockgate(shop, capsys, "--since", "2020-01-01")
    first = json.loads(out.splitlines()[0])
    assert set(first) == {
        "approval_id", "task", "run_id", "tool", "summary", "args", "fingerprint", "why", "requester",
        "unverified_reason", "reviewers_required", "requirement", "created_at", "expires_at", "versions",
        "decisions", "refusals", "outcome",
    }  # fmt: skip
    assert "op_key" not in out and "editable" not in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "yesterday"], "--since 'yesterday' is not a time: give an ISO date or time in UTC"),
        (["--since", "2026-12-01", "--until", "soon"], "--until 'soon' is not a time"),
        (
            ["--since", "2026-12-08", "--until", "2026-12-01"],
            "--since 2026-12-08T00:00:00Z is not before --until 2026-12-01T00:00:00Z; nothing was exported",
        ),
        (["--since", "2026-12-01", "--until", "2026-12-01"], "is not before --until 2026-12-01T00:00:00Z"),
        (["--since", "9999-12-31"], "--since 9999-12-31T00:00:00Z is not before now ("),
        (
            ["--since", "2020-01-01", "--output", "/no/such/folder/audit.csv"],
            "/no/such/folder: no such folder",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    shop: Shop, capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], message: str
) -> None:
    shop.propose(1)
    code, out, err = lockgate(shop, capsys, *args)
    assert (code, out) == (2, "")
    assert err.startswith("lockgate: ") and message in err and err.count("\n") == 1


def test_a_time_may_be_a_date_a_time_with_an_offset_or_epoch_seconds(
    shop: Shop, capsys: pytest.CaptureFixture[str]
) -> None:
    proposal = shop.propose(1)
    created = proposal.created_at
    for since, until in (
        (str(created), str(created + 1)),
        (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created)), str(created + 1)),
        (time.strftime("%Y-%m-%dT%H:%M:%S+02:00", time.gmtime(created + 7_200)), f"{created + 1}.5"),
        (time.strftime("%Y-%m-%d", time.gmtime(created)), None),
        (time.strftime("%Y%m%d", time.gmtime(created)), None),  # eight digits: a date, not epoch seconds
    ):
        code, out, _ = lockgate(shop, capsys, "--since", since, *(["--until", until] if until else []))
        assert code == 0 and [json.loads(line)["approval_id"] for line in out.splitlines()] == [
            proposal.approval_id
        ], (since, until)
    # And the range leaves out its end: a proposal created at --until is in the next range, not this one
    code, out, _ = lockgate(shop, capsys, "--since", str(created - 10), "--until", str(created))
    assert (code, out) == (0, "")
