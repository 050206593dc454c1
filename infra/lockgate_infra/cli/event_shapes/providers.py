"""Stripe's, Standard Webhooks', Slack's and Shopify's shapes, and a plain-HMAC source's from its options."""

from __future__ import annotations

from lockgate.config import SourceConfig
from lockgate_infra.cli.event_shapes.shape import JSON, EventShape, ShapeError

# Stripe

# Object type → its id prefix, as Stripe's API reference shows them.
STRIPE_PREFIXES = {
    "charge": "ch",
    "checkout.session": "cs_test",
    "customer": "cus",
    "dispute": "du",
    "invoice": "in",
    "payment_intent": "pi",
    "payout": "po",
    "product": "prod",
    "refund": "re",
    "subscription": "sub",
}


def stripe(source: SourceConfig, event: str) -> EventShape:
    # charge.dispute.created → a "dispute"; checkout.session.completed → a "checkout.session".
    owner = event.rpartition(".")[0] or event
    kind = owner if owner == "checkout.session" else owner.rpartition(".")[2]
    prefix = STRIPE_PREFIXES.get(kind, kind.replace(".", "_")[:8])
    samples: dict[str, JSON] = {}
    words = {
        "note": ("product_not_received", "The customer says the parcel never arrived."),
        "close": ("duplicate", "The customer says this is a duplicate charge."),
    }
    for n, (key, (reason, text)) in enumerate(words.items(), start=1):
        thing: JSON = {"id": f"{prefix}_1Mt{n}2eZvKYlo2CNaw2Hv", "object": kind, "livemode": False}
        if kind == "dispute":  # a dispute has no description: its reason and the bank's words
            thing |= {"amount": 1000, "currency": "usd", "charge": "ch_1AZtxr2eZvKYlo2C", "reason": reason}
            thing |= {"status": "warning_needs_response", "evidence": {"uncategorized_text": text}}
        else:
            thing |= {"amount": 1000, "currency": "usd", "description": text, "metadata": {"topic": reason}}
        samples[key] = {
            "id": f"evt_1NG8Du2eZvKYlo2C{n:08d}",
            "object": "event",
            "api_version": "2024-06-20",
            "created": 1686089970 + n,
            "data": {"object": thing},
            "livemode": False,
            "pending_webhooks": 1,
            "request": {"id": None, "idempotency_key": None},
            "type": event,
        }
    text_path = (
        ("data", "object", "evidence", "uncategorized_text")
        if kind == "dispute"
        else ("data", "object", "description")
    )
    subject = ("data", "object", "reason") if kind == "dispute" else ("data", "object", "id")
    return EventShape(f'Stripe "{event}" events (a {kind})', event, event, subject, text_path, samples)


# Standard Webhooks


def standard(source: SourceConfig, event: str) -> EventShape:
    # The specification's payload: {"type", "timestamp", "data"}; "data" is the sender's own.
    words = {
        "note": ("Export button does nothing", "Clicking Export on the reports page does nothing."),
        "close": ("Cheap watches", "Buy cheap watches now. This is spam."),
    }
    samples = {
        key: {
            "type": event,
            "timestamp": f"2022-11-03T20:26:1{n}.344522Z",
            "data": {"id": f"1f81eb52-5198-4599-803e-77190634348{n}", "title": title, "text": text},
        }
        for n, (key, (title, text)) in enumerate(words.items(), start=1)
    }
    return EventShape(
        f'Standard Webhooks "{event}" events',
        event,
        event,
        ("data", "title"),
        ("data", "text"),
        samples,
    )


# Slack


def slack(source: SourceConfig, event: str) -> EventShape:
    words = {
        "note": "The export button on the reports page does nothing.",
        "close": "Buy cheap watches now. This is spam.",
    }
    if event.startswith("command:/"):  # a slash command: form fields, the command's text
        samples: dict[str, JSON] = {
            key: {
                "token": "gIkuvaNzQIHg97ATvDxqgjtO",
                "team_id": "T0001",
                "channel_id": "C2147483705",
                "user_id": "U2147483697",
                "user_name": "Steve",
                "command": event.removeprefix("command:"),
                "text": text,
                "response_url": "https://hooks.slack.com/commands/1234/5678",
                "trigger_id": f"13345224609.738474920.8088930838d88f008e{n}",
            }
            for n, (key, text) in enumerate(words.items(), start=1)
        }
        what = f'Slack "{event.removeprefix("command:")}" slash commands'
        return EventShape(what, event, event, ("text",), ("text",), samples, form=True)
    samples = {
        key: {
            "token": "ZZZZZZWSxiZZZ2yIvs3peJ",
            "team_id": "T123ABC456",
            "api_app_id": "A123ABC456",
            "event": {
                "type": event,
                "user": "U123ABC456",
                "text": text,
                "ts": f"1515449522.00001{n}",
                "channel": "C123ABC456",
                "event_ts": f"1515449522.00001{n}",
            },
            "type": "event_callback",
            "event_id": f"Ev123ABC45{n}",
            "event_time": 1515449522 + n,
            "authed_users": ["U0LAN0Z89"],
        }
        for n, (key, text) in enumerate(words.items(), start=1)
    }
    return EventShape(f'Slack "{event}" events', event, event, ("event", "text"), ("event", "text"), samples)


# Shopify

# A topic's resource → (its object's subject field, its text field), from Shopify's payloads.
SHOPIFY_FIELDS = {
    "orders": ("name", "note"),
    "draft_orders": ("name", "note"),
    "checkouts": ("email", "note"),
    "customers": ("email", "note"),
    "products": ("title", "body_html"),
}


def shopify(source: SourceConfig, event: str) -> EventShape:
    resource, slash, _ = event.partition("/")
    if not slash:
        raise ShapeError(
            f"Shopify names its topics RESOURCE/EVENT (e.g. orders/create), and the receiver stores "
            f"them so: {event!r} would never arrive"
        )
    subject_field, text_field = SHOPIFY_FIELDS.get(resource, ("name", "note"))
    words = {
        "note": ("#1001", "Please leave the parcel at the back door."),
        "close": ("#1002", "Test order, duplicate of #1001: spam."),
    }
    samples = {
        key: {
            "id": 820982911946154500 + n,
            "admin_graphql_api_id": f"gid://shopify/Order/82098291194615450{n}",
            "email": "jon@example.com",
            subject_field: subject,
            text_field: text,
            "created_at": "2021-12-31T19:00:00-05:00",
            "currency": "USD",
            "total_price": "403.00",
            "customer": {"id": 115310627314723954, "email": "jon@example.com", "first_name": "John"},
        }
        for n, (key, (subject, text)) in enumerate(words.items(), start=1)
    }
    return EventShape(
        f'Shopify "{event}" deliveries',
        event,
        event,
        (subject_field,),
        (text_field,),
        samples,
    )


# Plain HMAC (a provider of your own)


def hmac(source: SourceConfig, event: str) -> EventShape:
    if not (source.event_type_header or source.event_type_field) and event != "unknown":
        raise ShapeError(
            f"source {source.name!r} reads no event type (no event_type_header or event_type_field in "
            f"[sources.{source.name}]): every delivery's type is unknown; set one, or give --event unknown"
        )
    words = {
        "note": ("Export button does nothing", "Clicking Export on the reports page does nothing."),
        "close": ("Cheap watches", "Buy cheap watches now. This is spam."),
    }
    samples: dict[str, JSON] = {}
    for n, (key, (title, text)) in enumerate(words.items(), start=1):
        body: JSON = {"data": {"title": title, "text": text}}
        if source.event_type_field and not source.event_type_header:
            _put(body, source.event_type_field, event)
        if source.id_field and not source.id_header:
            _put(body, source.id_field, f"evt-{n:04d}")
        samples[key] = body
    return EventShape(
        f'{source.name} "{event}" events',
        event,
        event,
        ("data", "title"),
        ("data", "text"),
        samples,
    )


def _put(body: JSON, dotted: str, value: str) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        body = body.setdefault(part, {})
    body[last] = value
