"""A delivery as its provider sends it, and what the receiver answered: what ``TestStack.send`` posts.

The key ``send`` returns is the one in the receiver's answer, so it is the key the inbox stored, for
every source (Stripe's and Slack's ids come from the body, the others' from headers). The receiver's
own code reads the signed bytes first (``scheme.identify``): when ``delivery_id=`` or ``event=`` says
something the body contradicts, the kit says so before anything is sent.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lockgate.config import SourceConfig
from lockgate.errors import BadDelivery
from lockgate.inbox.models import Delivery, Status
from lockgate.webhooks.schemes import DeliveryIdentity, scheme_for
from lockgate.webhooks.signing import sign

# Where each scheme reads the delivery id and the event type that the kit cannot put in a header.
ID_FROM = {"stripe": 'the body\'s "id"', "slack": 'the body\'s "event_id" (a form\'s "trigger_id")'}
TYPE_FROM = {
    "stripe": 'the body\'s "type"',
    "standard": 'the body\'s "type"',
    "slack": 'the body\'s "event"."type" (a form\'s command or payload type)',
    "github": 'X-GitHub-Event and the body\'s "action" (event="issues", "action": "opened": issues.opened)',
}


class TestStackError(AssertionError):
    """The stack did not reach the state a test step needs, or a step was asked for something it cannot do.

    Its message names the cause: the receiver's answer, the delivery's recorded outcome or error,
    what a provider's body says against ``send``'s arguments, the reviewers who do get a link.
    """

    __test__ = False  # an error, not a test class


class Sent:
    """What the gateway answered one delivery, and the inbox key it was stored under."""

    def __init__(self, status: int, body: str, key: str) -> None:
        self.status = status
        """The HTTP status the receiver answered: 200 stored (or a duplicate), 401 a bad signature, ..."""
        self.body = body
        """The receiver's reply body (JSON text): ``{"status": "accepted", "delivery": "stripe#evt_1"}``."""
        self.key = key
        """The inbox key the receiver stored it under, ``"source#delivery_id"`` (the id as the provider
        gives it: Stripe's body ``id``, GitHub's ``X-GitHub-Delivery``, ...): what ``stack.delivery``
        and ``stack.run`` take; "" when nothing was stored."""

    @property
    def stored(self) -> bool:
        """Whether the receiver stored it (a new delivery or a duplicate of one)."""
        return bool(self.key)

    def __repr__(self) -> str:
        return f"Sent({self.status}, {self.key!r})"


@dataclass(frozen=True)
class Outgoing:
    """One signed delivery: the bytes and the headers its provider sends with them."""

    body: bytes
    headers: dict[str, str]


def raw_body(body: Mapping[str, Any] | bytes | str) -> bytes:
    """The bytes sent: bytes as given, text as UTF-8, anything else as JSON."""
    if isinstance(body, bytes):
        return body
    return body.encode() if isinstance(body, str) else json.dumps(body).encode()


def outgoing(
    source: SourceConfig,
    secret: str,
    body: bytes,
    at: int,
    *,
    event: str,
    delivery_id: str | None,
) -> Outgoing:
    """``body`` signed as ``source``'s provider signs it, read as the receiver will read it.

    TestStackError when ``delivery_id`` or ``event`` disagree with what the receiver reads (a body
    it cannot identify at all is sent as it is: the receiver's 400 says why).
    """
    scheme = scheme_for(source)
    fresh = delivery_id or f"test-{uuid.uuid4().hex[:12]}"
    # GitHub's issues.opened is X-GitHub-Event "issues" and the body's "action": try both readings.
    candidates = [event, event.partition(".")[0]] if source.scheme == "github" and "." in event else [event]
    signed: list[tuple[dict[str, str], DeliveryIdentity | None]] = []
    for header_event in candidates:
        headers = sign(source, secret, body, at, delivery_id=fresh, event_type=header_event or None)
        try:
            signed.append((headers, scheme.identify(body, headers)))
        except BadDelivery:
            signed.append((headers, None))
    exact = [(h, i) for h, i in signed if i is not None and i.event_type == event]
    headers, identity = exact[0] if exact else signed[0]
    if identity is None:
        return Outgoing(body, headers)
    if event and not _same_type(source.scheme, event, identity.event_type):
        where = TYPE_FROM.get(source.scheme, "its configured header or field")
        raise TestStackError(
            f"{source.name} takes the event type from {where}: "
            f"this body's is {identity.event_type!r}, not event={event!r}; make the body say it"
        )
    if delivery_id is not None and identity.delivery_id != delivery_id:
        where = ID_FROM.get(source.scheme, "its configured header or field")
        raise TestStackError(
            f"{source.name} takes the delivery id from {where}: "
            f"this body's is {identity.delivery_id!r}, not delivery_id={delivery_id!r}; leave delivery_id= "
            "out (send returns the key the delivery is stored under)"
        )
    return Outgoing(body, headers)


def _same_type(scheme: str, event: str, identified: str) -> bool:
    # GitHub's type is X-GitHub-Event plus the body's action: event="issues" covers issues.opened.
    return not event or identified == event or (scheme == "github" and identified.startswith(f"{event}."))


def stored_key(answer: str) -> str:
    """The key in the receiver's answer (``{"status": ..., "delivery": KEY}``), or "" when it stored none."""
    try:
        parsed = json.loads(answer)
    except ValueError:
        return ""
    key = parsed.get("delivery") if isinstance(parsed, dict) else None
    return key if isinstance(key, str) else ""


def delivery_key(key: str | Sent) -> str:
    """The inbox key of ``key`` (a key, or what ``send`` returned); TestStackError if nothing was stored."""
    if isinstance(key, Sent) and not key.stored:
        raise TestStackError(f"nothing was stored: the receiver answered {key.status} {key.body}")
    return key.key if isinstance(key, Sent) else key


def why_no_run(delivery: Delivery) -> str:
    """What the worker recorded instead of a run: the real cause, not a guess."""
    if delivery.status is Status.FAILED:
        return f"the delivery was set aside ({delivery.last_error or 'no error recorded'})"
    if delivery.status is Status.DONE:
        return f"the worker recorded {delivery.outcome!r} (no task ran)"
    return f"the delivery is still {delivery.status.value} (did the step wait?)"
