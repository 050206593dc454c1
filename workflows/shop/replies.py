"""send_email: the shop's reply to the customer, through SES, at most once per idempotency key.

SES's SendEmail has no idempotency key. The operation ledger is what prevents a second send;
this tool adds a record in the Mail table keyed ``sent#<idempotency key>``, written *before*
the call (``sending``) and completed after it (``sent``/``failed``), so a repeat never sends
twice and the reconciliation job can tell what happened. The key also travels as an SES
message tag, so SES's sending events can be matched to it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, EndpointConnectionError

from lockgate import OutcomeUnknown, Risk, Tool, ToolContext, ToolError, fingerprint
from lockgate.dynamo import error_code
from shop.arguments import SendEmailArgs
from shop.data import ShopUnavailable
from shop.mailbox import SentMail
from shop.outgoing import reply_content
from shop.policies import SHOP_PATHS, links_only_to_shop, no_other_customers_orders, reply_only_to_customer
from shop.services import ShopServices, shop_services

_TAG_VALUE = re.compile(r"^[A-Za-z0-9_\-]{1,256}$")


def idempotency_key(args: SendEmailArgs, context: ToolContext) -> str:
    """The ledger's key; outside the ledger (tests, scripts), one derived from the run and arguments."""
    if context.idempotency_key:
        return context.idempotency_key
    return f"{context.run_id}#send_email#{fingerprint(args.model_dump(mode='json'))}"


def send_email(args: SendEmailArgs, context: ToolContext) -> dict[str, Any]:
    """Send one plain-text email from the shop's address."""
    shop = shop_services(context.services)
    key = idempotency_key(args, context)
    mail = SentMail(key, args.to, args.subject, args.body, "sending", context.run_id, int(shop.clock.now()))
    try:
        earlier = shop.mailbox.begin_send(mail)
    except ShopUnavailable as exc:
        raise ToolError("The email could not be sent right now; nothing was sent.") from exc
    if earlier is not None:
        return _earlier(earlier)
    try:
        response = shop.ses.send_email(
            Source=shop.settings.from_address,
            Destination={"ToAddresses": [args.to]},
            Message={
                "Subject": {"Data": args.subject, "Charset": "UTF-8"},
                "Body": {"Text": {"Data": args.body, "Charset": "UTF-8"}},
            },
            Tags=[{"Name": "idempotency_key", "Value": _tag(key)}],
        )
    except (ConnectTimeoutError, EndpointConnectionError) as exc:  # never reached SES: not sent
        _finish(shop, mail, "failed", error=type(exc).__name__)
        raise ToolError("The email could not be sent (SES unreachable); nothing was sent.") from exc
    except ClientError as exc:
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        code = error_code(exc)
        if status >= 500 or status == 0:  # a server error (or no status at all): it may have gone out
            raise OutcomeUnknown(f"SES answered {code} ({status}); the email may have been sent") from exc
        _finish(shop, mail, "failed", error=code)
        raise ToolError(f"The email could not be sent (SES: {code}); nothing was sent.") from exc
    except BotoCoreError as exc:  # e.g. a read timeout after the request went out
        raise OutcomeUnknown(f"{type(exc).__name__}: the email may have been sent") from exc
    return _finish(shop, mail, "sent", ses_message_id=str(response.get("MessageId", ""))).as_result()


def _earlier(earlier: SentMail) -> dict[str, Any]:
    if earlier.status == "sent":
        return earlier.as_result()
    if earlier.status == "failed":
        raise ToolError(f"The email could not be sent ({earlier.error}); nothing was sent.")
    raise OutcomeUnknown("an earlier attempt to send this email did not finish; it may have been sent")


def _finish(
    shop: ShopServices, mail: SentMail, status: str, *, ses_message_id: str = "", error: str = ""
) -> SentMail:
    try:
        return shop.mailbox.finish_send(mail, status, ses_message_id=ses_message_id, error=error)
    except ShopUnavailable:
        # The send's outcome stands; the record stays "sending" and reconciliation reports it.
        return mail.settled(status, ses_message_id=ses_message_id, error=error)


def _tag(key: str) -> str:
    return key if _TAG_VALUE.fullmatch(key) else hashlib.sha256(key.encode()).hexdigest()


def reconcile(idempotency_key: str, services: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a send with this key did: its result if sent, None if it certainly wasn't.

    Raises OutcomeUnknown when the record says the call started but never finished: SES
    cannot be asked by key, so a person must check (e.g. SES sending events for the tag).
    """
    record = shop_services(services).mailbox.sent(idempotency_key)
    if record is None or record.status == "failed":
        return None
    if record.status == "sent":
        return record.as_result()
    raise OutcomeUnknown(f"email {idempotency_key} to {record.to} was started but not confirmed")


def send_email_tool(
    host: str, shop_address: str, paths: tuple[str, ...] = SHOP_PATHS, phones: tuple[str, ...] = ()
) -> Tool[SendEmailArgs]:
    """send_email, its policies bound to the shop's host, pages, address and phone numbers."""
    return Tool(
        name="send_email",
        description=(
            "Send a plain-text email reply to the customer who wrote in (only their address is "
            f"accepted). Links may only point to these pages of https://{host}: {', '.join(paths)}. "
            "Never mention other customers' orders or addresses. Never give a phone number or ask for "
            "card numbers, passwords or codes: such a reply waits for a person. Send one reply per "
            "customer email."
        ),
        args=SendEmailArgs,
        run=send_email,
        summary=lambda a: f"email {a.to}: {a.subject[:80]!r}",
        risk=Risk.ACT,
        policies=(
            reply_only_to_customer,
            links_only_to_shop(host, shop_address, paths),
            no_other_customers_orders,
            reply_content(phones),
        ),
        # Hard rules pin down every harmful argument: only the customer, only the shop's pages,
        # only the customer's own orders; a reply giving a phone number or asking for a secret
        # after reading an email waits for a person. Otherwise a tainted run may still reply.
        needs_person_when_tainted=False,
        # One reply per recipient per run: asked again after a crash, the model may word it
        # differently; the ledger refuses a second, different email (found by the chaos harness).
        identity=lambda a: f"reply#{a.to.lower()}",
        identity_per_run=True,
        # A held reply may be corrected before it goes (a typo, a wrong sentence); the same rules
        # check the corrected text before it is sent. The recipient is not editable.
        editable=("subject", "body"),
        reconcile=reconcile,
    )
