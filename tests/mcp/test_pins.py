"""The pin file: written stable and diffable, read back strictly, refused when tampered with."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lockgate.clock import FixedClock
from lockgate.mcp.definitions import Listing, ToolDefinition
from lockgate.mcp.pins import CannotPin, Drift, PinFile, PinFileInvalid
from tests.mcp.test_definitions import CREDIT

LOOKUP = {
    "name": "get_ticket",
    "description": "Read one ticket.",
    "inputSchema": {"type": "object", "properties": {"ticket_id": {"type": "string"}}},
    "annotations": {"readOnlyHint": True},
}


def listing(*tools: dict[str, Any], rejected: dict[str, str] | None = None) -> Listing:
    defined = {t["name"]: ToolDefinition.from_wire(t) for t in tools}
    return Listing(
        "tickets", "https://tickets.example.com/mcp", "2026-07-28", "mcp 2.3.0", defined, rejected or {}
    )


def pin_text() -> str:
    return PinFile.from_listing(listing(CREDIT, LOOKUP), ["issue_credit", "get_ticket"], FixedClock()).dumps()


def test_a_pin_file_is_sorted_indented_and_reads_back_as_written() -> None:
    text = pin_text()
    document = json.loads(text)
    # Then it names the server, where and how it was read, and when
    assert {k: document[k] for k in ("format", "server", "url", "protocol_version", "sdk", "pinned_at")} == {
        "format": "lockgate-mcp-pins/1",
        "server": "tickets",
        "url": "https://tickets.example.com/mcp",
        "protocol_version": "2026-07-28",
        "sdk": "mcp 2.3.0",
        "pinned_at": "2026-01-01T00:00:00Z",
    }
    # And each tool's definition with its fingerprint, in a form that diffs line by line
    assert document["tools"]["get_ticket"]["definition"] == LOOKUP
    assert text == json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert PinFile.loads(text).dumps() == text
    assert PinFile.loads(text).tools["issue_credit"] == ToolDefinition.from_wire(CREDIT)


def test_only_the_allowed_tools_are_pinned() -> None:
    pins = PinFile.from_listing(listing(CREDIT, LOOKUP), ["get_ticket"], FixedClock())
    assert list(pins.tools) == ["get_ticket"]


def test_an_allowed_tool_the_server_does_not_list_or_lists_unusably_cannot_be_pinned() -> None:
    with pytest.raises(CannotPin) as refused:
        PinFile.from_listing(
            listing(LOOKUP, rejected={"broken": "the input schema is not a JSON schema of type object"}),
            ["get_ticket", "issue_credit", "broken"],
            FixedClock(),
        )
    assert str(refused.value) == (
        "cannot pin MCP server 'tickets': broken: the input schema is not a JSON schema of type object; "
        "issue_credit: not listed by the server"
    )


def edited(change: Any) -> str:
    document = json.loads(pin_text())
    change(document)
    return json.dumps(document, indent=2)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "the pin file is not JSON: Expecting property name enclosed in double quotes: line 1 column 2"),
        ("[]", "the pin file is not a pin file: the document: Input should be a valid dictionary"),
        (
            edited(lambda d: d.update(format="lockgate-mcp-pins/9")),
            "the pin file is not a pin file: format: Input should be 'lockgate-mcp-pins/1'",
        ),
        (edited(lambda d: d.pop("server")), "the pin file is not a pin file: server: Field required"),
        (
            edited(lambda d: d.update(approved=True)),
            "the pin file is not a pin file: approved: Extra inputs are not permitted",
        ),
        (
            edited(lambda d: d["tools"]["get_ticket"].update(fingerprint="md5:x")),
            "the pin file is not a pin file: tools.get_ticket.fingerprint: String should match pattern",
        ),
        (
            edited(lambda d: d["tools"]["get_ticket"]["definition"].update(description="Read anything.")),
            "the pin file, tool 'get_ticket': the definition does not match its fingerprint",
        ),
        (
            edited(
                lambda d: d["tools"]["get_ticket"]["definition"]["annotations"].update(readOnlyHint=False)
            ),
            "the pin file, tool 'get_ticket': the definition does not match its fingerprint",
        ),
        (
            edited(lambda d: d["tools"]["get_ticket"]["definition"].update(name="issue_credit")),
            "the pin file, tool 'get_ticket': the definition is named 'issue_credit'",
        ),
        (
            edited(lambda d: d["tools"]["get_ticket"]["definition"].update(inputSchema=[])),
            "the pin file, tool 'get_ticket': the input schema is not a JSON schema of type object",
        ),
    ],
)
def test_a_malformed_or_tampered_pin_file_is_refused_saying_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(PinFileInvalid) as refused:
        PinFile.loads(text)
    assert str(refused.value).startswith(message)


def test_a_pin_file_error_names_the_file_it_came_from() -> None:
    with pytest.raises(PinFileInvalid, match=r"^workflows/support/mcp/tickets\.pins\.json is not JSON"):
        PinFile.loads("", source="workflows/support/mcp/tickets.pins.json")


def test_drift_is_per_pinned_tool() -> None:
    pins = PinFile.loads(pin_text())
    live = listing({**CREDIT, "description": "Credit, then email the customer."}, LOOKUP)
    assert pins.drift(live) == (
        Drift("tickets", "get_ticket", ()),
        Drift("tickets", "issue_credit", ("description changed",)),
    )
    unusable = listing(
        LOOKUP, rejected={"issue_credit": "the annotation destructiveHint is not true or false"}
    )
    assert pins.drift(unusable)[1].changes == (
        "its definition can no longer be used: the annotation destructiveHint is not true or false",
    )
