"""The shop's offline stand-in for Claude on its support inbox (``make demo``): deterministic, plausible.

Given "New customer email: message_id=<m-1@example.com>. Earlier messages from this sender: <m-0@…>"
it reads every email mentioned (in parallel), finds order numbers (A-1234) in them — or the
sender's orders with find_orders — looks each up while searching the help pages (one parallel
turn), refunds a delivered/damaged order when asked (one named in the email, or the sender's
only order; the "$NN" in the email, else total minus refunded), replies to the sender with
send_email (order status, tracking link, the help passage by number, whether a refund was made
or passed to the team), then ends with a one-line summary. Told a person's decision on its
proposal (``decision_on_proposal``), it emails the customer what was decided (see
``decision``). A structured-output request (the task's intake) is answered with the customer's
request as JSON (see ``intake``), a content screen with INJECTION or CLEAN (the kit's rules).
Each step is "the next planned call not yet in the conversation", so replies depend only on the
conversation; argument names are read from each tool's input_schema where they differ. It is
written by hand on the test kit's ``Conversation``: a ``ScriptedModel``'s rules fill arguments
from captures, and this reply is composed from several results.
"""

from __future__ import annotations

import re
from typing import Any

from lockgate_infra.testing import Conversation, Reply, ToolCall
from shop.offline import refund_summary
from shop.offline.decision import decision_reply
from shop.offline.intake import extraction_reply
from shop.offline.reply import Email, Extras, compose, extras_lines, reply_subject, summary

JSON = dict[str, Any]
ORDER_ID = re.compile(r"\bA-\d{4}\b")
MESSAGE_ID = re.compile(r"<[^<>\s]+@[^<>\s]+>|message_id=([^\s<>,;]+)")
EARLIER = re.compile(r"Earlier messages[^:\n]*:[ \t]*([^\n]*)", re.IGNORECASE)
ADDRESS = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
MONEY = re.compile(r"\$\s?(\d+(?:\.\d{1,2})?)")
REFUND_WORDS = ("refund", "return", "broken", "damaged", "faulty", "money back")
DAMAGE_WORDS = ("broken", "damaged", "faulty", "cracked")
WHERE_WORDS = ("where is", "where's", "track", "deliver", "shipping", "shipped", "arrive", "late")
REFUNDABLE = frozenset({"delivered", "damaged"})
HINTS = {
    "message_id": ("message", "id"),
    "order_id": ("order",),
    "customer_email": ("email",),
    "query": ("query", "search"),
    "to": ("recipient", "address"),
    "body": ("body", "text"),
}


def mentioned_message_ids(prompt: str) -> list[str]:
    """Message ids in the task message, in order, once each.

    ``<local@host>`` anywhere, ``message_id=ID``, and the comma-separated list after "Earlier messages
    ...:" (plain ids like msg-1000 included; "none" means none).
    """
    found = [(m.group(1) or m.group(0)).rstrip(".") for m in MESSAGE_ID.finditer(prompt)]
    earlier = EARLIER.search(prompt)
    if earlier:
        found += [part.strip().rstrip(".") for part in earlier.group(1).split(",")]
    return [ident for ident in _unique(found) if ident and ident.lower() != "none" and " " not in ident]


def _unique(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


class _Turn:
    """One request seen by the model: its tools, and calls built with the schema's argument names."""

    def __init__(self, request: JSON) -> None:
        self.conversation = Conversation(request)
        self.tools = self.conversation.tools

    def args(self, tool: str, **values: Any) -> JSON:
        return {
            self.conversation.argument(tool, key, *HINTS.get(key, ())): value for key, value in values.items()
        }

    def find(self, tool: str, tool_input: JSON) -> ToolCall | None:
        return self.conversation.find(tool, tool_input)

    def ask(self, note: str, wanted: list[tuple[str, JSON]]) -> Reply:
        return self.conversation.ask(note, wanted)


class ShopModel:
    """The helpful support agent for the example shop; ``respond`` takes the gullible model's extras."""

    label = "offline demo model"

    def __call__(self, request: JSON) -> Reply:
        return self.respond(request, Extras())

    def respond(self, request: JSON, extras: Extras) -> Reply:
        """The next assistant message for this conversation."""
        turn = _Turn(request)
        source = turn.conversation.intake_source()
        if source is not None:
            return extraction_reply(source)  # the task's intake: read the request out of the email
        screened = turn.conversation.screened()
        if screened is not None:
            return screened  # the task's content screen (a small model in the task)
        if "list_refunds" in turn.tools:  # the scheduled refund summary, not a customer email
            return refund_summary.respond(turn.conversation)
        if "read_email" not in turn.tools:
            written_for = "the example shop's support-inbox and refund-summary tasks"
            return turn.conversation.not_written_for(self.label, written_for)
        emails, wanted, failures = self._emails(turn)
        if wanted:
            return turn.ask("Let me read the customer's email first.", wanted)
        if not emails:
            return turn.conversation.say(f"I could not read the customer's email ({'; '.join(failures)}).")
        new = emails[0]
        intent = _intent(new)
        order_ids, named, wanted = self._order_ids(turn, emails)
        lookups = [turn.args("lookup_order", order_id=o) for o in order_ids if "lookup_order" in turn.tools]
        wanted += [("lookup_order", a) for a in lookups if turn.find("lookup_order", a) is None]
        help_args = turn.args("search_help", query=_query(intent, new))
        if "search_help" in turn.tools and turn.find("search_help", help_args) is None:
            wanted.append(("search_help", help_args))
        if wanted:
            return turn.ask("I'll look up the order and check our help pages.", wanted)
        orders = {
            str(d.get("order_id")): d
            for a in lookups
            if isinstance(d := _data(turn.find("lookup_order", a)), dict)
        }
        passage = _first_passage(_data(turn.find("search_help", help_args)))
        plan, note = _refund_plan(turn, intent, new, orders, named)
        refund: tuple[str, ToolCall | None] | None = None
        if plan is not None:
            refund = (plan[0], turn.find("refund_order", plan[1]))
            if refund[1] is None:
                return turn.ask(
                    f"The customer asked for a refund; refunding order {plan[0]}.",
                    [("refund_order", plan[1])],
                )
        to = extras.reply_to or new.sender
        body = compose(
            new, order_ids, orders, passage, refund, (*((note,) if note else ()), *extras_lines(extras))
        )
        if not to or "send_email" not in turn.tools:
            return turn.conversation.say(f"Draft reply (not sent):\n{body}")
        send_args = turn.args("send_email", to=to, subject=reply_subject(new.subject), body=body)
        sent = turn.find("send_email", send_args)
        if sent is None:
            return turn.ask(f"Sending the reply to {to}.", [("send_email", send_args)])
        decided = decision_reply(turn, new.sender, reply_subject(new.subject), refund)
        if decided is not None:  # a person decided on its proposal: tell the customer, once
            return decided
        return turn.conversation.say(summary(to, orders, refund, sent))

    def _emails(self, turn: _Turn) -> tuple[list[Email], list[tuple[str, JSON]], list[str]]:
        """Emails read so far, read_email calls still needed, and ids that could not be read."""
        prompt = turn.conversation.prompt
        if "read_email" not in turn.tools:
            sender = next(iter(ADDRESS.findall(MESSAGE_ID.sub(" ", prompt))), "")
            return [Email("", sender, "", prompt)], [], []
        emails: list[Email] = []
        wanted: list[tuple[str, JSON]] = []
        failures: list[str] = []
        for ident in mentioned_message_ids(prompt):
            error = "not read"
            alternate = ident[1:-1] if ident.startswith("<") else f"<{ident}>"
            for form in (ident, alternate):
                args = turn.args("read_email", message_id=form)
                call = turn.find("read_email", args)
                if call is None:
                    wanted.append(("read_email", args))
                    break
                data = call.data() if call.ok else None
                if isinstance(data, dict):
                    emails.append(_email(data, ident))
                    break
                error = (call.result or "no result")[:120]
            else:
                failures.append(f"{ident}: {error}")
        return emails, wanted, failures

    def _order_ids(self, turn: _Turn, emails: list[Email]) -> tuple[list[str], bool, list[tuple[str, JSON]]]:
        """Order numbers named in the emails (named=True), else the sender's orders via find_orders."""
        order_ids = _unique(ORDER_ID.findall(" ".join(f"{e.subject}\n{e.text}" for e in emails)))
        sender = emails[0].sender
        if order_ids or "find_orders" not in turn.tools or not sender:
            return order_ids, True, []
        args = turn.args("find_orders", customer_email=sender)
        call = turn.find("find_orders", args)
        if call is None:
            return [], False, [("find_orders", args)]
        data = call.data()
        listed = data.get("orders") if isinstance(data, dict) else None
        found = [str(o["order_id"]) for o in listed or [] if isinstance(o, dict) and "order_id" in o]
        return _unique(found)[:3], False, []


def _data(call: ToolCall | None) -> Any:
    return call.data() if call is not None and call.ok else None


def _email(data: JSON, ident: str) -> Email:
    sender = ADDRESS.findall(str(data.get("from", "")))
    return Email(
        str(data.get("message_id", ident)),
        sender[0] if sender else "",
        str(data.get("subject", "")),
        str(data.get("text", "")),
    )


def _first_passage(data: Any) -> JSON | None:
    passages = data.get("results") if isinstance(data, dict) else None
    first = passages[0] if isinstance(passages, list) and passages else None
    return first if isinstance(first, dict) else None


def _refund_plan(
    turn: _Turn, intent: str, email: Email, orders: dict[str, JSON], named: bool
) -> tuple[tuple[str, JSON] | None, str | None]:
    """The refund_order call to make (order id, arguments), or a line for the reply saying why not."""
    if intent != "refund" or "refund_order" not in turn.tools or not orders:
        return None, None
    if not named and len(orders) > 1:
        return (
            None,
            "Which order would you like refunded? Please reply with its number (it looks like A-1234).",
        )
    target = next((o for o in orders.values() if str(o.get("status", "")).lower() in REFUNDABLE), None)
    if target is None:
        return (
            None,
            "Once your order has been delivered, reply to this email and we will sort out the refund.",
        )
    order_id = str(target.get("order_id"))
    args = turn.args("refund_order", order_id=order_id, amount=_amount(email, target), reason=_reason(email))
    return (order_id, args), None


def _intent(email: Email) -> str:
    words = f"{email.subject}\n{email.text}".lower()
    if any(w in words for w in REFUND_WORDS):
        return "refund"
    if any(w in words for w in WHERE_WORDS):
        return "where"
    return "other"


def _query(intent: str, email: Email) -> str:
    if intent == "refund":
        return "refunds returns damaged items"
    if intent == "where":
        return "shipping delivery tracking"
    words = re.findall(r"[A-Za-z]{3,}", email.subject or email.text)
    return " ".join(w.lower() for w in words[:8] if w.lower() != "re") or "contact support"


def _amount(email: Email, order: JSON) -> float | int:
    asked = MONEY.search(f"{email.subject}\n{email.text}")
    if asked:
        value = float(asked.group(1))
    else:
        value = float(order.get("total") or 0) - float(order.get("refunded") or 0)
    value = round(max(value, 0.0), 2)
    return int(value) if value.is_integer() else value


def _reason(email: Email) -> str:
    words = f"{email.subject}\n{email.text}".lower()
    if any(w in words for w in DAMAGE_WORDS):
        return "Customer reports the item arrived damaged"
    if "return" in words:
        return "Customer wants to return the item"
    return "Customer asked for a refund"
