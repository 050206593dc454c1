"""The shop's offline model answering its intake: the customer's request read out of an email.

A structured-output request (the support-inbox task's ``Intake``) gets the request as the shop's
``CustomerRequest`` schema wants it: the first order number (A-1234), the intent, and the first
dollar amount, as plain JSON.
"""

from __future__ import annotations

import json
import re

from lockgate_infra.testing import Reply

ORDER_ID = re.compile(r"\bA-\d{4}\b")
MONEY = re.compile(r"\$\s?(\d+(?:\.\d{1,2})?)")
REFUND_WORDS = ("refund", "broken", "damaged", "faulty", "money back")
RETURN_WORDS = ("return",)
WHERE_WORDS = ("where is", "where's", "track", "deliver", "shipping", "shipped", "arrive", "late", "ship")


def extraction_reply(source: str) -> Reply:
    """The customer's request in ``source`` (the email's text the intake asks to read), as JSON."""
    words = source.lower()
    order = ORDER_ID.search(source)
    money = MONEY.search(source)
    if any(w in words for w in REFUND_WORDS):
        intent = "refund"
    elif any(w in words for w in RETURN_WORDS):
        intent = "return"
    elif any(w in words for w in WHERE_WORDS):
        intent = "where_is_my_order"
    else:
        intent = "question"
    answer = {
        "order_id": order.group(0) if order else None,
        "intent": intent,
        "amount": money.group(1) if money else None,
    }
    return Reply([{"type": "text", "text": json.dumps(answer)}], "end_turn")
