"""`lockgate approvals approve|reject|edit|show`, fuzzed: a one-line error and exit 2, never a traceback.

The CLI pointed at moto (``stack``, from test_approvals_cli, with the worker's edit check in process)
is given any approval id, any ``--as`` name, any ``--set FIELD=VALUE`` pairs and any ``--reason``,
including what a shell can pass that a web form cannot: newlines, and the lone surrogates Python
reads from bytes that are not UTF-8. Each run exits 0 having decided exactly what it says, or exits
2 with one ``lockgate: ...`` line that is not "unexpected ... please report it" (argparse's own
usage error, also exit 2, for an id that reads as an option), and then writes no decision, version
or inbox event (its refusal row is kept on purpose).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import re
from typing import Any

import pytest
from hypothesis import example
from hypothesis import strategies as st

from lockgate.actions.editable import editable_fields
from lockgate.approvals.decisions import checked_reason
from lockgate.approvals.proposals import Proposal
from lockgate.approvals.refusals import PREFIX as REFUSED
from lockgate_infra.cli import main as cli
from tests.fuzz.strategies import fuzzed, hostile_text, number_texts
from tests.fuzz.test_review_page_inputs import accepted_amount
from tests.integration.test_approvals_cli import Stack, stack
from tests.refund_worker import Amount

__all__ = ["stack"]  # the fixture: the CLI's --local is this moto stack

_ids = itertools.count(100)
BARE_ERROR = re.compile(r"lockgate: \w*(Error|Exception|Unavailable)\w*")
EDITABLE = {"editable": editable_fields(Amount.model_json_schema(), ("amount",))}
# What argv can hold: any text but NUL, and the surrogates that stand for bytes that are not UTF-8.
ARGUMENT = st.one_of(
    hostile_text(),
    st.text(st.characters(min_codepoint=0xDC80, max_codepoint=0xDCFF), min_size=1, max_size=4),
    st.sampled_from(("-", "--", "-h", "--yes", "ap_", "ap_" + "0" * 24, "ap_" + "f" * 200)),
).map(lambda text: text.replace("\x00", ""))


class Terminal:
    """A person's terminal under a UTF-8 locale: stdout refuses what it cannot encode, stderr writes it
    backslash-escaped (Python's own defaults for a console), so a test sees what a person would."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.db = stack.aws.client("dynamodb")
        self._waiting: Proposal | None = None

    def run(self, *args: str) -> tuple[int, str, str]:
        """``lockgate ARGS --config ...``: the exit code, stdout and stderr (argparse's exits included)."""
        out, err = (io.TextIOWrapper(io.BytesIO(), "utf-8", errors=e) for e in ("strict", "backslashreplace"))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main([*args, "--config", str(self.stack.config)])
            except SystemExit as exc:  # argparse: its usage error (2), or the help asked for (0)
                code = int(exc.code or 0)
        texts = []
        for stream in (out, err):
            stream.flush()
            texts.append(stream.buffer.getvalue().decode("utf-8"))
        return code, texts[0], texts[1]

    def proposed(self) -> Proposal:
        """A fresh pending $80.00 refund whose amount may be edited."""
        return self.stack.propose(next(_ids), extra=EDITABLE)

    def waiting(self) -> Proposal:
        """One pending refund for the whole test."""
        if self._waiting is None:
            self._waiting = self.proposed()
        return self._waiting

    def written(self, proposal: Proposal) -> list[str]:
        """The proposal's decisions, versions and #state (refusal rows left out) and its inbox events."""
        items = self.db.query(
            TableName=self.stack.aws.names["DecisionsTable"],
            KeyConditionExpression="approval_id = :a",
            ExpressionAttributeValues={":a": {"S": proposal.approval_id}},
            ConsistentRead=True,
        )["Items"]
        rows = sorted(i["reviewer"]["S"] for i in items if not i["reviewer"]["S"].startswith(REFUSED))
        events = self.db.scan(TableName=self.stack.aws.inbox_table, ConsistentRead=True)["Items"]
        return rows + [i["pk"]["S"] for i in events if proposal.approval_id in i["pk"]["S"]]

    def row(self, proposal: Proposal, key: str) -> dict[str, Any]:
        """One Decisions item of the proposal (a decision by reviewer id, a version as ``#v1``)."""
        table = self.stack.aws.names["DecisionsTable"]
        found = {"approval_id": {"S": proposal.approval_id}, "reviewer": {"S": key}}
        return self.db.get_item(TableName=table, Key=found, ConsistentRead=True)["Item"]  # type: ignore[no-any-return]


@pytest.fixture
def terminal(stack: Stack) -> Terminal:
    return Terminal(stack)


def assert_one_clear_line(code: int, out: str, err: str) -> None:
    """The CLI's refusal: exit 2 and one ``lockgate:`` line (or argparse's usage error), never
    'unexpected'; or the help, asked for with an argument that reads as -h."""
    if code == 0:
        assert out.startswith("usage:") and err == "", (out, err)
        return
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and "please report it" not in err and "unexpected" not in err, err
    ours = [line for line in err.splitlines() if line.startswith("lockgate:")]
    assert len(ours) == 1 or ("usage:" in err and "error:" in err), err
    assert not any(BARE_ERROR.fullmatch(line) for line in ours), err  # says what is wrong, not a type name


# -- any approval id --------------------------------------------------------------------------


@example(approval_id="")
@example(approval_id="\udcff")
@example(approval_id="ap_" + "0" * 2100)
@example(approval_id="-h")
def _any_id_is_a_clear_refusal(terminal: Terminal, approval_id: str) -> None:
    # Given a pending refund (one for the whole test: nothing may change it), and any other id
    proposal = terminal.waiting()
    if approval_id == proposal.approval_id:
        return
    # When each command is run on that id
    for command in (
        ("show", approval_id),
        ("approve", approval_id, "--as=alice", "--yes"),
        ("reject", approval_id, "--as=alice", "--yes", "--reason=no"),
        ("edit", approval_id, "--as=alice", "--yes", "--set=amount=40.00"),
    ):
        # Then each exits 2 with one clear line (or shows the help it was asked for)
        assert_one_clear_line(*terminal.run("approvals", *command))
    # And nothing was decided on any request
    assert terminal.stack.decisions() == []


test_given_any_approval_id_then_every_command_exits_2_with_one_clear_line = fuzzed(approval_id=ARGUMENT)(
    _any_id_is_a_clear_refusal
)


# -- an edit: any reviewer name, any fields and values -------------------------------------------


@example(reviewer="alice", pairs=[("amount", "1e309")])
@example(reviewer="alice", pairs=[("amount", "9" * 41)])
@example(reviewer="alice", pairs=[("amount", "৪0.00")])
@example(reviewer="alice", pairs=[("amount", "１２")])
@example(reviewer="alice", pairs=[("\udc80", "40.00")])
def _edit_is_exact_or_refused(terminal: Terminal, reviewer: str, pairs: list[tuple[str, str]]) -> None:
    # Given a pending $80.00 refund, and an edit of it as anyone, setting any fields to anything
    proposal = terminal.proposed()
    sets = [f"--set={field}={value}" for field, value in pairs]
    # When `lockgate approvals edit` runs
    code, out, err = terminal.run(
        "approvals", "edit", proposal.approval_id, f"--as={reviewer}", "--yes", *sets
    )
    # Then it approves exactly a plain amount in range, set once, by a reviewer of refunds, as typed;
    # anything else exits 2 with one clear line and writes nothing
    fields = [field.strip() for field, _ in pairs]
    stored = accepted_amount(pairs[0][1]) if fields == ["amount"] else None
    if reviewer in ("alice", "bob") and stored is not None:
        assert code == 0 and "approved" in out, err
        assert json.loads(terminal.row(proposal, "#v1")["args"]["S"])["amount"] == stored
    else:
        assert_one_clear_line(code, out, err)
        assert code == 2 and terminal.written(proposal) == []


test_given_any_edit_then_exactly_a_plain_amount_is_approved_and_anything_else_exits_2 = fuzzed(
    reviewer=st.one_of(st.sampled_from(("alice", "bob", "carol", "Alice", " alice", "alice\n")), ARGUMENT),
    pairs=st.lists(
        st.tuples(
            st.one_of(st.sampled_from(("amount", "amount", "order_id", " amount", "")), ARGUMENT),
            number_texts(),
        ),
        min_size=1,
        max_size=3,
    ).map(lambda pairs: [(field.replace("=", ""), value.replace("\x00", "")) for field, value in pairs]),
)(_edit_is_exact_or_refused)


# -- a rejection's reason -----------------------------------------------------------------------


def _reason_is_kept_as_cleaned_or_refused(terminal: Terminal, reason: str) -> None:
    # Given a pending refund, and alice rejecting it with any reason at all
    proposal = terminal.proposed()
    # When `lockgate approvals reject --reason` runs
    code, out, err = terminal.run(
        "approvals", "reject", proposal.approval_id, "--as=alice", "--yes", f"--reason={reason}"
    )
    # Then a reason that fits is kept without its control characters; a longer one exits 2, undecided
    kept = checked_reason(reason)
    if kept is None:
        assert "a reason is at most" in err
        assert_one_clear_line(code, out, err)
        assert code == 2 and terminal.written(proposal) == []
    else:
        assert code == 0, err
        row = terminal.row(proposal, "alice")
        assert (row["verdict"]["S"], row.get("reason", {}).get("S", "")) == ("reject", kept)


test_given_any_rejection_reason_then_it_is_kept_cleaned_or_refused_with_one_line = fuzzed(reason=ARGUMENT)(
    _reason_is_kept_as_cleaned_or_refused
)


def test_given_an_empty_approval_id_then_no_such_proposal_is_said_not_a_type_name(terminal: Terminal) -> None:
    # Given a stack with a pending refund, and an operator who gives an empty id (e.g. "$ID", unset)
    terminal.waiting()
    for command in (("show", ""), ("approve", "", "--as=alice", "--yes")):
        # When the command runs, Then it says there is no such proposal (it said "lockgate: ClientError",
        # from DynamoDB refusing an empty key), exit 2, and nothing is decided
        assert terminal.run("approvals", *command) == (2, "", "lockgate: no proposal ''\n")
    assert terminal.stack.decisions() == []
