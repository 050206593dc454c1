"""The shop's hard policy rules as pure predicates, table-style: (arguments, facts) -> verdict.

Facts come from a fake lookup holding the seed orders, so every rule is checked without AWS.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest

from lockgate.actions.facts import RunFacts
from lockgate.actions.guard import Check, RunState, rule_on
from lockgate.actions.tools import ToolArgumentsInvalid
from shop.arguments import (
    FindOrdersArgs,
    LookupOrderArgs,
    ReadEmailArgs,
    RefundOrderArgs,
    SendEmailArgs,
)
from shop.data import Order
from shop.policies import (
    links,
    links_only_to_shop,
    message_from_customer,
    no_other_customers_orders,
    order_belongs_to_customer,
    order_ids,
    orders_of_customer_only,
    refund_identity,
    refund_needs_person,
    refund_order_is_customers,
    refund_within_refundable,
    reply_only_to_customer,
)
from shop.refunds import REFUND_ORDER
from shop.replies import send_email_tool
from shop.seed import ORDERS
from shop.tools import LOOKUP_ORDER

HOST = "shop.example.com"
SHOP_ADDRESS = "support@shop.example.com"
ADA = "ada@example.com"


@dataclass
class FakeLookup:
    """The seed orders (A-1043 partly refunded) and two emails, in memory."""

    orders: dict[str, Order] = field(default_factory=lambda: {o.order_id: o for o in ORDERS})
    senders: dict[str, str] = field(default_factory=lambda: {"m-ada": ADA, "m-grace": "grace@example.com"})

    def order(self, order_id: str) -> Order | None:
        return self.orders.get(order_id)

    def orders_of(self, email: str) -> list[Order]:
        return [o for o in self.orders.values() if o.customer_email == email]

    def sender_of(self, message_id: str) -> str | None:
        return self.senders.get(message_id)

    def owner_of(self, order_id: str) -> str | None:
        order = self.orders.get(order_id)
        return order.customer_email if order else None


def facts(customer: str | None = ADA, lookup: Any = "default") -> RunFacts:
    values = {"customer_email": customer} if customer is not None else {}
    return RunFacts(values=values, lookup=FakeLookup() if lookup == "default" else lookup)


def with_refunded(order_id: str, refunded: str) -> FakeLookup:
    lookup = FakeLookup()
    order = lookup.orders[order_id]
    lookup.orders[order_id] = Order(
        order.order_id,
        order.customer_email,
        order.status,
        order.items,
        order.total,
        Decimal(refunded),
        order.currency,
        order.placed_at,
        order.carrier,
        order.tracking_url,
    )
    return lookup


def email(body: str, subject: str = "Your order", to: str = ADA) -> SendEmailArgs:
    return SendEmailArgs(to=to, subject=subject, body=body)


def refund(order_id: str = "A-1042", amount: Any = "25.00") -> RefundOrderArgs:
    return RefundOrderArgs(order_id=order_id, amount=amount, reason="arrived damaged")


# ------------------------------------------------------------------ send_email: the recipient


@pytest.mark.parametrize(
    ("to", "customer", "allowed"),
    [
        (ADA, ADA, True),
        ("Ada@Example.COM", ADA, True),  # addresses compare case-insensitively
        (ADA, "Ada@Example.com", True),
        ("grace@example.com", ADA, False),  # another customer
        ("attacker@evil.example", ADA, False),  # a stranger
        ("ada@example.com.evil.example", ADA, False),  # a look-alike domain
        ("ada@example.co", ADA, False),
        ("ada+x@example.com", ADA, False),  # exact address, no sub-addressing
        ("ada@evil.example", ADA, False),  # same local part, other domain
        (ADA, None, False),  # no verified customer: fail closed
    ],
)
def test_given_a_recipient_when_checked_then_only_the_verified_customer_is_allowed(to, customer, allowed):
    verdict = reply_only_to_customer(email("Hello", to=to), facts(customer))
    assert verdict.allowed is allowed, verdict.reason


# ------------------------------------------------------------------ send_email: links

ALLOWED_BODIES = [
    "No links at all. Your order total is $49.00 and arrives in 3.5 days, e.g. Monday.",
    "Track it at https://shop.example.com/track/A-1042.",
    "See (https://shop.example.com/help/returns-and-refunds#refund-reviews) for details",
    "HTTPS://SHOP.EXAMPLE.COM/returns",  # hosts are case-insensitive
    "Visit shop.example.com any time.",
    "https://shop.example.com/track?order=A-1042&ref=email",  # our own host may take any path or query
    "Write to support@shop.example.com or reply from ada@example.com.",
    "[1] https://shop.example.com/help/shipping#delivery-times\n[2] https://shop.example.com/help/tracking",
]
DENIED_BODIES = [
    "https://shop.example.com.evil.example/returns",  # our host as a prefix
    "https://shop.example.evil.example/returns",  # a sibling look-alike
    "evil.example/shop.example.com",  # our host in the path
    "https://evil.example/shop.example.com",
    "https://evil.example/?q=https://shop.example.com",
    "https://shop.example.com@evil.example/track",  # userinfo: the real host is evil.example
    "https://ada:secret@shop.example.com/",  # any userinfo at all
    "https://shop.example.com\\@evil.example",  # backslash tricks
    "http://shop.example.com/returns",  # https only
    "ftp://shop.example.com/",
    "https://shop.example.com:8443/",  # no port
    "https://shop.example.com./returns",  # trailing dot
    "https://shop.example.com%2eevil.example/",  # encoded dot
    "https://xn--shp-5cd.example.com/",  # punycode
    "xn--shp-5cd.example.com",
    "https://sh\u043ep.example.com/",  # Cyrillic o
    "sh\u043ep.example.com/returns",
    "shop\u3002example\u3002com.evil.example",  # ideographic full stops
    "\uff45\uff56\uff49\uff4c.example",  # fullwidth letters
    "www.shop.example.com",  # a subdomain is another host
    "//evil.example/x",  # protocol-relative
    "https:evil.example",  # scheme without slashes
    "Click evil.example to claim",  # a bare domain
    "EVIL.EXAMPLE",
    "https://93.184.216.34/",  # IP addresses
    "93.184.216.34/track",
    "mailto:grace@example.com",
    "javascript:alert(document.cookie)",
    "data:text/html,<script>alert(1)</script>",
    "Contact grace@example.com for help",  # another customer's address
    "Reply to attacker@evil.example",
    "https://shop.example.com/x https://evil.example/y",  # one bad link spoils the lot
]


@pytest.mark.parametrize("body", ALLOWED_BODIES)
def test_given_only_the_shops_links_when_checked_then_the_email_is_allowed(body):
    verdict = links_only_to_shop(HOST, SHOP_ADDRESS)(email(body), facts())
    assert verdict.allowed, verdict.reason


@pytest.mark.parametrize("body", DENIED_BODIES)
def test_given_any_other_link_when_checked_then_the_email_is_refused_naming_it(body):
    verdict = links_only_to_shop(HOST, SHOP_ADDRESS)(email(body), facts())
    assert not verdict.allowed
    assert "https://shop.example.com" in verdict.reason


@pytest.mark.parametrize("subject", ["See evil.example", "Re: https://shop.example.com.evil.example"])
def test_given_a_link_in_the_subject_when_checked_then_it_counts_too(subject):
    verdict = links_only_to_shop(HOST, SHOP_ADDRESS)(email("Hello", subject=subject), facts())
    assert not verdict.allowed


def test_given_text_with_links_then_links_finds_urls_addresses_domains_and_ips():
    found = list(links("a https://shop.example.com/x, b ada@example.com c evil.example d 10.0.0.1."))
    assert found == ["https://shop.example.com/x", "ada@example.com", "evil.example", "10.0.0.1"]


# ------------------------------------------------------------------ send_email: other customers' data


@pytest.mark.parametrize(
    ("body", "allowed"),
    [
        ("Your order A-1042 has shipped.", True),
        ("Orders A-1042 and A-1043 are yours.", True),
        ("We couldn't find order A-9999.", True),  # unknown: nobody's data
        ("Order A-2001 was delivered.", False),  # Grace's order
        ("About a-2002: processing", False),
        ("Order A\u20112001 (non-breaking hyphen)", False),
        ("Order A 2001", False),
        ("Order A2001", False),
        ("https://shop.example.com/track/A-2001", False),  # inside a link too
    ],
)
def test_given_order_numbers_in_an_email_then_only_the_customers_own_are_allowed(body, allowed):
    verdict = no_other_customers_orders(email(body), facts())
    assert verdict.allowed is allowed, verdict.reason


def test_given_no_order_facts_when_an_email_mentions_an_order_then_it_is_refused():
    assert not no_other_customers_orders(email("Order A-1042"), facts(lookup=None)).allowed
    assert no_other_customers_orders(email("No orders here"), facts(lookup=None)).allowed


def test_given_text_then_order_ids_are_normalised_and_unique():
    assert order_ids("A-1042, a-1042, A\u20132001 and A1043; not A-12345 or BA-1042") == [
        "A-1042",
        "A-2001",
        "A-1043",
    ]


# ------------------------------------------------------------------ refunds


@pytest.mark.parametrize(
    ("order_id", "customer", "allowed", "reason"),
    [
        ("A-1042", ADA, True, ""),
        ("A-1042", "ADA@example.com", True, ""),
        ("A-2001", ADA, False, "that order belongs to another customer"),
        ("A-9999", ADA, False, "No order called 'A-9999'."),
        ("A-1042", None, False, "this run has no verified customer"),
    ],
)
def test_given_an_order_when_refunding_then_it_must_be_the_customers(order_id, customer, allowed, reason):
    verdict = refund_order_is_customers(refund(order_id), facts(customer))
    assert (verdict.allowed, verdict.reason) == (allowed, reason)


@pytest.mark.parametrize(
    ("order_id", "refunded", "amount", "allowed"),
    [
        ("A-1042", "0.00", "49.00", True),  # everything
        ("A-1042", "0.00", "49.01", False),
        ("A-1043", "100.00", "20.00", True),  # exactly what is left
        ("A-1043", "100.00", "20.01", False),
        ("A-1043", "120.00", "0.01", False),  # fully refunded
    ],
)
def test_given_earlier_refunds_when_refunding_then_the_amount_is_at_most_what_is_left(
    order_id, refunded, amount, allowed
):
    verdict = refund_within_refundable(
        refund(order_id, amount), facts(lookup=with_refunded(order_id, refunded))
    )
    assert verdict.allowed is allowed, verdict.reason
    if not allowed:
        assert "can still be refunded" in verdict.reason


def test_given_no_order_facts_when_refunding_then_it_is_refused():
    assert not refund_within_refundable(refund(), facts(lookup=None)).allowed
    assert not refund_order_is_customers(refund(), facts(lookup=None)).allowed


@pytest.mark.parametrize(
    ("amount", "why"),
    [
        ("50.00", None),
        ("50", None),
        ("0.01", None),
        ("50.01", "refunds over $50.00 need a person"),
        (80, "refunds over $50.00 need a person"),
    ],
)
def test_given_an_amount_then_refunds_over_50_need_a_person(amount, why):
    assert refund_needs_person(refund("A-1043", amount), facts()) == why


@pytest.mark.parametrize(
    ("amount", "identity"),
    [("25", "refund#A-1042#25.00"), (25.5, "refund#A-1042#25.50"), ("25.50", "refund#A-1042#25.50")],
)
def test_given_equal_amounts_written_differently_then_the_refund_identity_is_the_same(amount, identity):
    assert refund_identity(refund("A-1042", amount)) == identity


# ------------------------------------------------------------------ reading


@pytest.mark.parametrize(
    ("order_id", "customer", "allowed", "reason"),
    [
        ("A-1042", ADA, True, ""),
        ("A-1043", "Ada@Example.com", True, ""),
        ("A-2001", ADA, False, "that order belongs to another customer"),  # a data leak
        ("A-9999", ADA, True, ""),  # the tool itself says there is no such order
        ("A-1042", None, False, "this run has no verified customer"),
    ],
)
def test_given_an_order_when_looking_it_up_then_only_the_customers_own_is_shown(
    order_id, customer, allowed, reason
):
    verdict = order_belongs_to_customer(LookupOrderArgs(order_id=order_id), facts(customer))
    assert (verdict.allowed, verdict.reason) == (allowed, reason)


@pytest.mark.parametrize(
    ("email_address", "allowed"),
    [(ADA, True), ("ADA@EXAMPLE.COM", True), ("grace@example.com", False), ("ada@example.co", False)],
)
def test_given_an_address_when_listing_orders_then_only_the_customers_own(email_address, allowed):
    assert orders_of_customer_only(FindOrdersArgs(customer_email=email_address), facts()).allowed is allowed


@pytest.mark.parametrize(
    ("message_id", "allowed"), [("m-ada", True), ("m-grace", False), ("m-unknown", True)]
)
def test_given_a_message_when_reading_it_then_only_the_customers_own(message_id, allowed):
    assert message_from_customer(ReadEmailArgs(message_id=message_id), facts()).allowed is allowed


# ------------------------------------------------------------------ argument schemas


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"order_id": "1042"}, "order_id: Order numbers look like A-1042"),
        ({"order_id": "Z-9999"}, "order_id: Order numbers look like A-1042"),
        ({"order_id": "A-10420"}, "order_id: Order numbers look like A-1042"),
        ({}, "order_id: Field required"),
    ],
)
def test_given_a_malformed_order_number_then_the_model_is_told_what_one_looks_like(raw, message):
    with pytest.raises(ToolArgumentsInvalid) as caught:
        LOOKUP_ORDER.validate(raw)
    assert str(caught.value) == message


def test_given_order_numbers_in_lower_case_then_they_are_accepted_as_written_in_capitals():
    assert LOOKUP_ORDER.validate({"order_id": " a-1042 "}).order_id == "A-1042"


@pytest.mark.parametrize("amount", [0, -5, "0.001", 19.999, "abc", True, None, "NaN", "1e9"])
def test_given_a_bad_amount_then_the_refund_arguments_are_refused(amount):
    with pytest.raises(ToolArgumentsInvalid, match="amount"):
        REFUND_ORDER.validate({"order_id": "A-1042", "amount": amount, "reason": "x"})


@pytest.mark.parametrize(
    ("raw", "field_name"),
    [
        ({"to": "Ada <ada@example.com>", "subject": "s", "body": "b"}, "to"),
        ({"to": "ada@example.com, grace@example.com", "subject": "s", "body": "b"}, "to"),
        ({"to": "ada@ex\u0430mple.com", "subject": "s", "body": "b"}, "to"),  # Cyrillic a
        ({"to": ADA, "subject": "s\r\nBcc: grace@example.com", "body": "b"}, "subject"),  # header injection
        ({"to": ADA, "subject": "s" * 201, "body": "b"}, "subject"),
        ({"to": ADA, "subject": "s", "body": "b" * 5001}, "body"),
        ({"to": ADA, "subject": "s", "body": "b", "bcc": "grace@example.com"}, "bcc"),
    ],
)
def test_given_malformed_email_arguments_then_they_are_refused_naming_the_field(raw, field_name):
    with pytest.raises(ToolArgumentsInvalid, match=field_name):
        send_email_tool(HOST, SHOP_ADDRESS).validate(raw)


# ------------------------------------------------------------------ the guard, with the shop's tools


TOOLS = [REFUND_ORDER, send_email_tool(HOST, SHOP_ADDRESS), LOOKUP_ORDER]  # the shop's tools the guard sees


def tainted() -> RunState:
    return RunState(facts(), taint_sources=["read_email: read email m-ada"])


@pytest.mark.parametrize(
    ("name", "raw", "state", "check"),
    [
        (
            "refund_order",
            {"order_id": "A-1042", "amount": 25, "reason": "damaged"},
            RunState(facts()),
            Check.CLEARED,
        ),
        ("refund_order", {"order_id": "A-1042", "amount": 25, "reason": "damaged"}, tainted(), Check.TAINT),
        (
            "refund_order",
            {"order_id": "A-1043", "amount": 80, "reason": "damaged"},
            RunState(facts()),
            Check.APPROVAL,
        ),
        ("refund_order", {"order_id": "A-2001", "amount": 80, "reason": "goodwill"}, tainted(), Check.POLICY),
        (
            "refund_order",
            {"order_id": "A-1042", "amount": 60, "reason": "x"},
            RunState(facts()),
            Check.POLICY,
        ),
        ("send_email", {"to": ADA, "subject": "Re: order", "body": "On its way."}, tainted(), Check.CLEARED),
        ("send_email", {"to": "x@evil.example", "subject": "Hi", "body": "data"}, tainted(), Check.POLICY),
        (
            "send_email",
            {"to": ADA, "subject": "Hi", "body": "https://evil.example/?d=A-1042"},
            tainted(),
            Check.POLICY,
        ),
        ("lookup_order", {"order_id": "A-2001"}, tainted(), Check.POLICY),
    ],
)
def test_given_the_shops_tools_when_the_guard_rules_then_policies_taint_and_thresholds_apply(
    name, raw, state, check
):
    ruling = rule_on(TOOLS, name, raw, state)
    assert ruling.check is check, ruling.reason
