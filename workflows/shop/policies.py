"""Hard policy rules for the shop's tools: pure predicates over the arguments and the run's facts.

Facts come from our own systems: ``customer_email`` is the verified sender of the email that
started the run, and ``facts.lookup`` reads current orders. Nothing here trusts the model or
the content it read. Every rule fails closed: a missing fact is a refusal.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, Protocol
from urllib.parse import unquote_plus

from lockgate import Policy, RunFacts, Verdict
from lockgate.errors import StoreUnavailable

APPROVAL_LIMIT = Decimal("50.00")  # refunds above this need a person (two above $100: lockgate.toml)
# The pages of the example shop a reply may link to (and anything below them).
SHOP_PATHS = ("/", "/help", "/track", "/returns", "/account/orders", "/account/addresses", "/gift-cards")

# Anything with a scheme and "//", plus the schemes that act without one.
_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://\S*|\b(?:mailto|javascript|data|vbscript|file|tel|sms):\S+")
# A dot as IDNA reads it: ASCII, ideographic, fullwidth and halfwidth full stops.
_DOT = r"[.\u3002\uff0e\uff61]"
_LABEL = r"[^\W_](?:[\w\-]{0,61}[^\W_])?"
_DOMAIN = rf"(?:{_LABEL}{_DOT})+(?:xn--[a-z0-9\-]+|[^\W\d_]{{2,63}})"
_EMAIL = re.compile(rf"[\w.!#$%&'*+/=?^`{{|}}~\-]+@{_DOMAIN}", re.IGNORECASE)
# A bare domain, with the path, query or fragment written after it (checked like a link's).
_BARE_DOMAIN = re.compile(rf"(?<![\w\-]){_DOMAIN}(?![\w\-])(?:[/?#]\S*)?", re.IGNORECASE)
_IPV4 = re.compile(r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?![\w])")
# Order numbers, also written with a Unicode dash, a space or nothing between the parts.
_ORDER_ID = re.compile(r"(?i)(?<![\w])A[\s\-\u2010-\u2015\u2212]?(\d{4})(?!\d)")
_TRAILING = ".,;:!?)]}>'\"*"


class OrderFacts(Protocol):
    """What the policies need to know about an order."""

    order_id: str
    customer_email: str
    total: Decimal
    refunded: Decimal


def customer_of(facts: RunFacts) -> str | None:
    """The run's verified customer address, lower-cased, or None."""
    value = facts.get("customer_email")
    return value.strip().lower() if isinstance(value, str) and value.strip() else None


def _order(facts: RunFacts, order_id: str) -> OrderFacts | None:
    if facts.lookup is None:
        raise LookupError("order facts are unavailable")
    order: OrderFacts | None = facts.lookup.order(order_id)
    return order


def _owner(facts: RunFacts, order_id: str) -> str | None:
    """Who an order belongs to; it never changes, so the run's facts may know it already."""
    if facts.lookup is None:
        raise LookupError("order facts are unavailable")
    owner: str | None = facts.lookup.owner_of(order_id)
    return owner


def money(value: Decimal) -> str:
    """Dollars with two decimals, e.g. "$50.00"."""
    return f"${value:,.2f}"


# ------------------------------------------------------------------ orders


def _owned_order(args: Any, facts: RunFacts, *, unknown: Verdict) -> Verdict:
    """The order (``args.order_id``) must be the run's customer's; ``unknown`` decides a missing one."""
    customer = customer_of(facts)
    if customer is None:
        return Verdict.deny("this run has no verified customer")
    try:
        owner = _owner(facts, args.order_id)
    except LookupError:
        return Verdict.deny("order ownership cannot be checked right now")
    if owner is None:
        return unknown
    if owner.lower() != customer:
        return Verdict.deny("that order belongs to another customer")
    return Verdict.allow()


def order_belongs_to_customer(args: Any, facts: RunFacts) -> Verdict:
    """Reading another customer's order is a data leak; an unknown one the tool itself reports."""
    return _owned_order(args, facts, unknown=Verdict.allow())


def orders_of_customer_only(args: Any, facts: RunFacts) -> Verdict:
    """``args.customer_email`` must be the run's verified customer."""
    customer = customer_of(facts)
    if customer is None:
        return Verdict.deny("this run has no verified customer")
    if args.customer_email.strip().lower() != customer:
        return Verdict.deny("you can only list the orders of the customer who wrote in")
    return Verdict.allow()


def message_from_customer(args: Any, facts: RunFacts) -> Verdict:
    """An email may be read only if the run's customer sent it."""
    customer = customer_of(facts)
    if customer is None:
        return Verdict.deny("this run has no verified customer")
    if facts.lookup is None:
        return Verdict.deny("the mailbox cannot be checked right now")
    sender = facts.lookup.sender_of(args.message_id)
    if sender is not None and sender.lower() != customer:
        return Verdict.deny("that email was sent by someone else")
    return Verdict.allow()  # unknown ids: the tool says there is no such email


# ------------------------------------------------------------------ refunds


def refund_order_is_customers(args: Any, facts: RunFacts) -> Verdict:
    """Only the customer's own orders can be refunded; an unknown order cannot."""
    return _owned_order(args, facts, unknown=Verdict.deny(f"No order called {args.order_id!r}."))


def refund_within_refundable(args: Any, facts: RunFacts) -> Verdict:
    """The amount must fit what is left: total - refunded - a refund already waiting for a person.

    Read now, not from the model. A pending refund with these very arguments is this call (a
    replayed step) or a duplicate the one-per-order limit refuses, so it is not counted twice.
    """
    try:
        order = _order(facts, args.order_id)
        pending = _pending_refund(facts, args)
    except LookupError:
        return Verdict.deny("the order's refundable amount cannot be checked right now")
    if order is None:
        return Verdict.deny(f"No order called {args.order_id!r}.")
    refundable = order.total - order.refunded - pending
    if args.amount > refundable:
        waiting = f", {money(pending)} waiting for approval" if pending else ""
        return Verdict.deny(
            f"at most {money(max(refundable, Decimal(0)))} of order {order.order_id} can still be refunded "
            f"(total {money(order.total)}, already refunded {money(order.refunded)}{waiting})"
        )
    return Verdict.allow()


def _pending_refund(facts: RunFacts, args: Any) -> Decimal:
    """The amount of the refund on this order that waits for a person (0 if none, or it is this call)."""
    if facts.pending is None:
        return Decimal(0)  # no approvals wired, or an approved refund re-checked as it runs
    try:
        waiting = facts.pending("refund_order", args.order_id)
    except StoreUnavailable as exc:  # fail closed, as for any fact that cannot be read
        raise LookupError("pending refunds cannot be read") from exc
    if waiting is None or waiting == args.model_dump(mode="json"):
        return Decimal(0)
    return Decimal(str(waiting.get("amount", "0")))


def refund_needs_person(args: Any, facts: RunFacts) -> str | None:
    """Why a person must approve this refund, or None."""
    if args.amount > APPROVAL_LIMIT:
        return f"refunds over {money(APPROVAL_LIMIT)} need a person"
    return None


def refund_identity(args: Any) -> str:
    """The refund's business identity for the ledger: one refund of this amount on this order."""
    return f"refund#{args.order_id}#{args.amount:.2f}"


# ------------------------------------------------------------------ outgoing email


def reply_only_to_customer(args: Any, facts: RunFacts) -> Verdict:
    """The recipient must be exactly the verified customer (case-insensitive)."""
    customer = customer_of(facts)
    if customer is None:
        return Verdict.deny("this run has no verified customer to reply to")
    if args.to.strip().lower() != customer:
        return Verdict.deny(f"replies can only go to the customer who wrote in ({customer})")
    return Verdict.allow()


def links(text: str) -> Iterator[str]:
    """Every URL, email address, bare domain (with its path) and IP address in the text, in that order."""
    rest = text
    for match in _URL.finditer(text):
        yield match.group(0).rstrip(_TRAILING)
    rest = _URL.sub(" ", rest)
    for match in _EMAIL.finditer(rest):
        yield match.group(0)
    rest = _EMAIL.sub(" ", rest)
    for match in _BARE_DOMAIN.finditer(rest):
        yield match.group(0).rstrip(_TRAILING)
    for match in _IPV4.finditer(rest):
        yield match.group(0)


def link_allowed(
    link: str, host: str, addresses: frozenset[str], paths: tuple[str, ...] | None = None
) -> bool:
    """Whether one link points at the shop: ``https://<host>`` exactly (on ``paths``), or an allowed address.

    Exact host match: no userinfo (``https://host@evil``), no port, no look-alike or punycode
    host, no trailing dot, no backslash tricks, https only. Every link inside its query or
    fragment, percent-decoded (``?next=https%3A%2F%2Fevil``), must be allowed too.
    """
    lowered = link.lower()
    if "@" in link and "://" not in link:
        return lowered in addresses
    if "://" not in link:
        link, lowered = f"https://{link}", f"https://{lowered}"  # a bare domain, maybe with a path
    if not lowered.startswith("https://") or "\\" in link:
        return False
    authority, path, query, fragment = _parts(link[len("https://") :])
    if authority.lower() != host.lower():
        return False
    if paths is not None and not path_allowed(path, paths):
        return False
    # Strictly shorter than the link itself, so this ends.
    inside = _decoded(f"{query} {fragment}")
    return all(link_allowed(nested, host, addresses, paths) for nested in links(inside))


def _parts(rest: str) -> tuple[str, str, str, str]:
    """(authority, path, query, fragment) of what follows ``https://``, split by hand (no normalising)."""
    rest, _, fragment = rest.partition("#")
    rest, _, query = rest.partition("?")
    authority, slash, path = rest.partition("/")
    return authority, slash + path, query, fragment


def _decoded(text: str) -> str:
    """Percent-decoded until it stops changing ("%253A" is ":" after two rounds), '+' as a space."""
    for _ in range(5):
        decoded = unquote_plus(text)
        if decoded == text:
            break
        text = decoded
    return text


def path_allowed(path: str, paths: tuple[str, ...]) -> bool:
    """Whether a link's path is one of ``paths`` or below one ("/" allows the home page only)."""
    path = _decoded(path) or "/"
    segments = path.split("/")[1:]
    # Decoded, a path may climb out of an allowed one ("/help/%2e%2e/logout") or hide a host ("//evil").
    if "\\" in path or ";" in path or "" in segments[:-1] or {".", ".."} & set(segments):
        return False
    path = path.rstrip("/") or "/"
    return any(path == p or (p != "/" and path.startswith(f"{p}/")) for p in paths)


def links_only_to_shop(host: str, shop_address: str, paths: tuple[str, ...] | None = None) -> Policy:
    """Links only to https://<host> (on ``paths``); addresses only the customer's or the shop's."""
    pages = f" ({', '.join(paths)})" if paths is not None else ""

    def policy(args: Any, facts: RunFacts) -> Verdict:
        customer = customer_of(facts)
        addresses = frozenset(a for a in (customer, shop_address.lower()) if a)
        for link in links(f"{args.subject}\n{args.body}"):
            if not link_allowed(link, host, addresses, paths):
                return Verdict.deny(
                    f"the email may only link to the shop's pages on https://{host}{pages}, with no other "
                    f"link inside, and mention the customer's or the shop's address; remove {link[:80]!r}"
                )
        return Verdict.allow()

    return policy


def order_ids(text: str) -> list[str]:
    """Every order number mentioned, normalised to "A-1234"."""
    return list(dict.fromkeys(f"A-{digits}" for digits in _ORDER_ID.findall(text)))


def no_other_customers_orders(args: Any, facts: RunFacts) -> Verdict:
    """The email must not mention an order of another customer."""
    customer = customer_of(facts)
    if customer is None:
        return Verdict.deny("this run has no verified customer")
    for order_id in order_ids(f"{args.subject}\n{args.body}"):
        try:
            owner = _owner(facts, order_id)
        except LookupError:
            return Verdict.deny("the orders mentioned in the email cannot be checked right now")
        if owner is not None and owner.lower() != customer:
            return Verdict.deny(f"the email mentions order {order_id}, which belongs to another customer")
    return Verdict.allow()
