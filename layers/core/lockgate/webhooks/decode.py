"""The event a delivery's body carries, whichever of its provider's content types it came in.

One decoder for the receiver (which reads the id and type out of it) and for the task (which reads
``InboxEvent.json()``), so a body the receiver accepted is the same event to the task:

- JSON (every provider's default): the parsed value.
- A form (``application/x-www-form-urlencoded``): GitHub's form option and Slack's interactivity
  send ``payload=<the JSON>``, which is the event; a Slack slash command's fields are the event,
  as an object of strings.
- XML (Shopify's ``format: xml``): Rails-style elements as their JSON twin: dashes in names are
  underscores, ``type="integer"`` and ``"boolean"`` typed, ``type="array"`` a list, ``nil="true"``
  null, everything else (decimals and times included, as Shopify's JSON has them) a string.

Bodies are verified before they are decoded; any failure is a BadDelivery, never another error.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs
from xml.etree import ElementTree

from lockgate.errors import BadDelivery

FORM = "application/x-www-form-urlencoded"
MAX_FORM_FIELDS = 200
_FORM = re.compile(rb"[^=&\s]+=[^&\s]*(&[^=&\s]+=[^&\s]*)*")  # name=value, joined by &


def media_type(content_type: str) -> str:
    """``application/json`` of ``application/json; charset=utf-8``, lower-case; "" when absent."""
    return content_type.partition(";")[0].strip().lower() if isinstance(content_type, str) else ""


def looks_like_json(body: bytes) -> bool:
    """Whether the body starts as a JSON object or array does (whatever its content type says)."""
    return body.lstrip()[:1] in (b"{", b"[")


def body_kind(body: bytes, content_type: str = "") -> str:
    """``"json"``, ``"form"`` or ``"xml"``: the content type's word, else what the bytes look like."""
    media = media_type(content_type)
    if looks_like_json(body) or media == "application/json" or media.endswith("+json"):
        return "json"
    if media.endswith(("/xml", "+xml")) or body.lstrip()[:1] == b"<":
        return "xml"
    if media == FORM or (not media and _FORM.fullmatch(body)):
        return "form"
    if media:
        raise BadDelivery(f"body is neither JSON, a form nor XML (content type {media[:60]})")
    return "json"  # no content type and no other shape: JSON, or the reason it is not


def event_document(body: bytes, content_type: str = "") -> Any:
    """The event in ``body``, as JSON data; BadDelivery if it is neither JSON, a form nor XML."""
    kind = body_kind(body, content_type)
    if kind == "xml":
        return xml_document(body)
    if kind == "form":
        fields = form_fields(body)
        # GitHub's form option and Slack's interactivity: the event is the JSON in ``payload``.
        return json_value(fields["payload"]) if "payload" in fields else fields
    return json_value(body)


def json_value(body: bytes | str) -> Any:
    """The body parsed as JSON; BadDelivery otherwise."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: "[[[[..." nested past the C stack guard
        raise BadDelivery("body is not valid JSON") from None


def json_object(body: bytes | str) -> dict[str, Any]:
    """The body as a JSON object; BadDelivery otherwise."""
    parsed = json_value(body)
    if not isinstance(parsed, dict):
        raise BadDelivery("body is not a JSON object")
    return parsed


def form_fields(body: bytes) -> dict[str, str]:
    """A form-encoded body's fields (first value of each); BadDelivery if it can't be decoded."""
    try:
        parsed = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS)
    except ValueError:  # bad UTF-8, or more fields than any provider sends
        raise BadDelivery("body is not a form") from None
    return {name: values[0] for name, values in parsed.items()}


def xml_document(body: bytes) -> Any:
    """A Rails-style XML body (Shopify's) as its JSON twin: the root element's content."""
    # No provider sends a document type; refusing one keeps entity tricks out of the parser.
    if b"<!DOCTYPE" in body.upper() or b"<!ENTITY" in body.upper():
        raise BadDelivery("XML body declares a document type")
    try:
        root = ElementTree.fromstring(body)  # noqa: S314 - verified bytes, no DTD: no entities to expand
        return _value(root)
    except (ElementTree.ParseError, RecursionError, ValueError):
        raise BadDelivery("body is not valid XML") from None


def _value(element: ElementTree.Element) -> Any:
    kind = element.get("type", "")
    if element.get("nil") == "true":
        return None
    if kind == "array":
        return [_value(child) for child in element]
    if len(element):
        return {child.tag.replace("-", "_"): _value(child) for child in element}
    text = element.text or ""  # a leaf's text exactly (only elements with children are indented)
    if kind == "integer":
        return int(text)  # ValueError: not valid XML of this kind
    if kind == "boolean":
        return text.strip() == "true"
    return text
