"""Every body a provider may send reaches the task as the same event, whichever content type it chose.

Each case posts one signed delivery through the receiver, then the worker claims it and hands it to a
handler, which reads ``event.json()`` as a task's ``start`` does. A delivery in a provider's other
content type (GitHub's form option, Shopify's XML) gives the handler the event its JSON twin gives.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

import pytest

from lockgate import BadDelivery, InboxEvent, TaskContext
from lockgate.webhooks.signing import sign
from tests.support import SECRETS, Harness

ISSUE = {
    "action": "opened",
    "issue": {"number": 7, "title": "Crash on start", "body": "Traceback …", "user": {"login": "kim"}},
    "repository": {"full_name": "acme/app"},
}
ORDER = {
    "id": 820982911946154508,
    "email": "jon@example.com",
    "name": "#9999",
    "note": "Leave it by the door",
    "total_price": "403.00",
    "test": False,
    "cancelled_at": None,
    "line_items": [
        {"id": 466157049, "title": "IPod Nano - 8gb", "quantity": 1, "price": "199.00"},
        {"id": 518995019, "title": "IPod Nano - 8gb", "quantity": 2, "price": "102.00"},
    ],
    "customer": {"id": 115310627314723954, "first_name": "John", "last_name": "Smith"},
}
# Shopify's XML for ORDER (format: xml): Rails-style, dashed names, typed values, an array.
ORDER_XML = b"""<?xml version="1.0" encoding="UTF-8"?>
<order>
  <id type="integer">820982911946154508</id>
  <email>jon@example.com</email>
  <name>#9999</name>
  <note>Leave it by the door</note>
  <total-price type="decimal">403.00</total-price>
  <test type="boolean">false</test>
  <cancelled-at type="dateTime" nil="true"/>
  <line-items type="array">
    <line-item>
      <id type="integer">466157049</id>
      <title>IPod Nano - 8gb</title>
      <quantity type="integer">1</quantity>
      <price type="decimal">199.00</price>
    </line-item>
    <line-item>
      <id type="integer">518995019</id>
      <title>IPod Nano - 8gb</title>
      <quantity type="integer">2</quantity>
      <price type="decimal">102.00</price>
    </line-item>
  </line-items>
  <customer>
    <id type="integer">115310627314723954</id>
    <first-name>John</first-name>
    <last-name>Smith</last-name>
  </customer>
</order>
"""
BLOCK_ACTION = {
    "type": "block_actions",
    "trigger_id": "13345224609.738474920.8088930838d88f008e0",
    "actions": [],
}
COMMAND = {
    "command": "/weather",
    "text": "94070",
    "user_id": "U2147483697",
    "channel_id": "C2147483705",
    "trigger_id": "13345224609.738474920.8088930838d88f008e0",
}
MENTION = {
    "type": "event_callback",
    "event_id": "Ev123ABC456",
    "event_time": 1515449522,
    "event": {"type": "app_mention", "user": "U123ABC456", "text": "<@U0LAN0Z89> hello", "channel": "C1"},
}
STRIPE = {
    "id": "evt_1NG8Du2eZvKYlo2CUI79vXWy",
    "object": "event",
    "type": "charge.dispute.created",
    "created": 1686089970,
    "data": {"object": {"id": "du_1", "object": "dispute", "amount": 1000, "reason": "general"}},
}
STANDARD = {"type": "contact.created", "timestamp": "2022-11-03T20:26:10.344522Z", "data": {"id": "c-1"}}
PARTNER = {"type": "invoice.paid", "invoice": "in_42", "amount": "12.50"}

JSON_TYPE, FORM_TYPE, XML_TYPE = "application/json", "application/x-www-form-urlencoded", "application/xml"


def form(payload: Any) -> bytes:
    """``payload=<JSON>``, as GitHub's form option and Slack's interactivity send it."""
    return urlencode({"payload": json.dumps(payload)}).encode()


# source, provider's event type (for headers), body, content type, the event type stored, the event
CASES: list[tuple[str, str, bytes, str, str, Any]] = [
    ("github", "issues", json.dumps(ISSUE).encode(), JSON_TYPE, "issues.opened", ISSUE),
    ("github", "issues", form(ISSUE), FORM_TYPE, "issues.opened", ISSUE),
    ("stripe", "", json.dumps(STRIPE).encode(), JSON_TYPE, "charge.dispute.created", STRIPE),
    ("helpdesk", "", json.dumps(STANDARD).encode(), JSON_TYPE, "contact.created", STANDARD),
    ("slack", "", json.dumps(MENTION).encode(), JSON_TYPE, "app_mention", MENTION),
    ("slack", "", form(BLOCK_ACTION), FORM_TYPE, "block_actions", BLOCK_ACTION),
    ("slack", "", urlencode(COMMAND).encode(), FORM_TYPE, "command:/weather", COMMAND),
    ("shopify", "orders/create", json.dumps(ORDER).encode(), JSON_TYPE, "orders/create", ORDER),
    ("shopify", "orders/create", ORDER_XML, XML_TYPE, "orders/create", ORDER),
    ("partner", "", json.dumps(PARTNER).encode(), JSON_TYPE, "invoice.paid", PARTNER),
    ("partner", "", urlencode(PARTNER).encode(), FORM_TYPE, "invoice.paid", PARTNER),
]  # fmt: skip
IDS = [
    "github json", "github form", "stripe json", "standard json", "slack events api json",
    "slack interactivity form", "slack slash command form", "shopify json", "shopify xml",
    "plain hmac json", "plain hmac form",
]  # fmt: skip


def handled(harness: Harness, source: str, provider_event: str, body: bytes, content_type: str) -> InboxEvent:
    """Post a signed delivery, let the worker claim it, and return the event its handler was given."""
    config = harness.config.sources[source]
    secret = SECRETS[config.secrets[0].removeprefix("env:")]
    headers = sign(config, secret, body, int(harness.clock.now()), event_type=provider_event or None)
    headers["content-type"] = content_type
    answer = harness.post(source, body, headers)
    assert answer.status == 200, answer.body
    seen: list[InboxEvent] = []

    def handler(event: InboxEvent, context: TaskContext) -> str:
        seen.append(event)
        return "read"

    harness.router.add(source, "*", handler)
    pk = json.loads(answer.body)["delivery"]
    assert harness.worker().process(pk, "rh", lambda: 60.0) == "read"
    return seen[0]


@pytest.mark.parametrize(
    ("source", "provider_event", "body", "content_type", "event_type", "event"), CASES, ids=IDS
)
def test_given_a_providers_content_type_when_the_task_reads_the_event_then_it_is_the_json_twins(
    harness: Harness,
    source: str,
    provider_event: str,
    body: bytes,
    content_type: str,
    event_type: str,
    event: Any,
) -> None:
    # Given a delivery in one of its provider's documented content types, stored by the receiver
    # When the worker hands it to its handler
    given = handled(harness, source, provider_event, body, content_type)
    # Then the stored type is the provider's, and the event the JSON twin's, the bytes as they came
    assert given.event_type == event_type
    assert given.json() == event
    assert given.body == body and given.delivery.content_type == content_type
    # And the delivery is done, not set aside as "body is not JSON"
    assert harness.store().get(given.delivery.pk).status.value == "done"


@pytest.mark.parametrize(
    ("body", "content_type", "says"),
    [
        (b"not json at all", "text/plain", "body is neither JSON, a form nor XML (content type text/plain)"),
        (b"{oops", JSON_TYPE, "body is not valid JSON"),
        (b"payload=%7Boops", FORM_TYPE, "body is not valid JSON"),
        (b"<order><id>1</order>", XML_TYPE, "body is not valid XML"),
        (b"<order><id type='integer'>one</id></order>", XML_TYPE, "body is not valid XML"),
        (b'<!DOCTYPE x [<!ENTITY a "b">]><order>&a;</order>', XML_TYPE, "XML body declares a document type"),
    ],
    ids=["plain text", "broken json", "broken form payload", "broken xml", "untyped integer", "a dtd"],
)
def test_given_a_body_that_is_no_event_then_reading_it_is_a_bad_delivery(
    body: bytes, content_type: str, says: str
) -> None:
    # Given a delivery whose body carries no event in the content type it came with
    claimed = InboxEvent.claimed("partner", "d-1", "invoice.paid", body)
    event = InboxEvent(replace(claimed.delivery, content_type=content_type), body)
    # Then reading it says why, as a BadDelivery (set aside at once, never retried)

    with pytest.raises(BadDelivery, match=says.replace("(", r"\(").replace(")", r"\)")):
        event.json()
