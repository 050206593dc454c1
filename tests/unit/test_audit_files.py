"""The audit export's files: any record comes back from either format as it was, and a spreadsheet
never meets a cell it would run as a formula."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lockgate.approvals.audit import AuditOutcome, AuditRecord, AuditRefusal
from lockgate.approvals.standing import Choice, DecisionRecord
from lockgate.approvals.versions import Version
from lockgate_infra.cli.audit_csv import FORMULA_START, neutralised, restored
from lockgate_infra.cli.audit_files import AuditFileError, read_audit, write_audit

AT = 1_796_170_542
ID = "ap_000000000000000000000001"


def awkward_record(text: str = '=cmd|"/c calc"!A1, "quoted"\nsecond line') -> AuditRecord:
    """A record whose every free-text field is hostile to CSV and to spreadsheets."""
    edited = {"order_id": "A-2001", "amount": 40.5, "note": text, "nested": {"k": [1, None, True]}}
    changes = {"amount": (80, 40.5), "note": (None, text)}
    return AuditRecord(
        approval_id=ID,
        task="support-inbox",
        run_id="helpdesk#msg,1",
        tool="refund_order",
        summary=f"-{text}",
        args={"order_id": "A-2001", "amount": 80, "note": text, "nested": {"k": [1, None, True]}},
        fingerprint="f" * 64,
        why=(f"+{text}", "refunds over $50.00 need a person — ünïcode"),
        requester=f"@{text}",
        unverified_reason=f"'{text}",
        reviewers_required=2,
        created_at=AT,
        expires_at=AT + 86_400,
        versions=(Version(1, edited, "e" * 64, "alice", AT + 10, changes),),
        decisions=(
            DecisionRecord(ID, "alice", Choice.APPROVE, AT + 10, "e" * 64, "link", "", 1),
            DecisionRecord(ID, "bob", Choice.REJECT, AT + 20, "e" * 64, "slack", text, 1),
        ),
        refusals=(
            AuditRefusal(AT + 5, "link", "", ""),
            AuditRefusal(AT + 5, "slack", "U0MALLORY", f"\t{text}"),
        ),
        outcome=AuditOutcome(
            "rejected", worker_event="rejected", worker_status="done", worker_outcome=text, worker_at=AT + 21
        ),
    )


@pytest.mark.parametrize("form", ["jsonl", "csv"])
def test_given_hostile_text_everywhere_when_written_and_read_back_then_the_records_are_equal(
    form: str, tmp_path: Path
) -> None:
    records = [awkward_record(), awkward_record("plain")]
    path = tmp_path / f"audit.{form}"
    with path.open("w", encoding="utf-8", newline="") as out:
        # (CSV: per record, proposed, 1 edit, 2 decisions, 2 refusals and the outcome)
        assert write_audit(records, out, form) == (2, 2 if form == "jsonl" else 2 * 7)
    assert read_audit(path) == records


def test_given_hostile_text_when_written_as_csv_then_no_cell_starts_like_a_formula() -> None:
    out = io.StringIO(newline="")
    write_audit([awkward_record()], out, "csv")
    cells = [cell for row in csv.reader(io.StringIO(out.getvalue(), newline="")) for cell in row]
    assert [c for c in cells if c.lstrip(" ")[:1] in FORMULA_START] == []


@given(st.text())
def test_any_value_survives_neutralising_and_is_never_a_formula(value: str) -> None:
    cell = neutralised(value)
    assert restored(cell) == value
    assert cell.lstrip(" ")[:1] not in FORMULA_START


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("=1+1", "'=1+1"),
        ("+44 20 7946 0000", "'+44 20 7946 0000"),
        ("-5", "'-5"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("  =1", "'  =1"),
        ("'quoted", "''quoted"),
        ("plain text", "plain text"),
        ("", ""),
    ],
)
def test_formula_like_cells_get_one_quote_in_front(value: str, cell: str) -> None:
    assert neutralised(value) == cell and restored(cell) == value


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"approval_id": "ap_1"}\n', "audit.txt:1: not an audit record (KeyError"),
        (
            "name,amount\nx,1\n",
            "audit.txt: not an audit CSV (28 of its 28 columns missing: approval_id, event, at, …)",
        ),
    ],
)
def test_a_file_that_is_not_an_export_is_refused_saying_where(
    content: str, message: str, tmp_path: Path
) -> None:
    path = tmp_path / "audit.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(AuditFileError, match=re.escape(message)):
        read_audit(path)


def test_a_cut_off_or_shuffled_csv_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "audit.csv"
    with path.open("w", encoding="utf-8", newline="") as out:
        write_audit([awkward_record()], out, "csv")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    header, rows = lines[0], lines[1:]
    rows_text = "".join(rows)
    outcome_at = rows_text.rindex(f'"{ID}","outcome"')
    path.write_text(header + rows_text[:outcome_at], encoding="utf-8")
    with pytest.raises(AuditFileError, match="has no outcome row"):
        read_audit(path)
    proposed_end = rows_text.index('\n"ap_') + 1
    path.write_text(header + rows_text[proposed_end:], encoding="utf-8")
    with pytest.raises(AuditFileError, match="row out of place"):
        read_audit(path)
