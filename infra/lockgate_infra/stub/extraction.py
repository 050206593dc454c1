"""The shop model's answer to a structured-output request (``lockgate.agent.structured.extract``).

Recognised by offering no tools and asking for a schema: in ``output_config`` (structured outputs)
or, for models without them, in the system prompt. The
source text sits between two identical ``<<<SOURCE …>>>`` lines; the answer is the customer's
request as the example shop's ``CustomerRequest`` schema wants it: the first order number
(A-1234), the intent, and the first dollar amount, as plain JSON.
"""

from __future__ import annotations

import json
import re
from typing import Any

from lockgate_infra.stub.conversation import first_user_text, offered_tools, text
from lockgate_infra.stub.replies import Reply

SCHEMA_INSTRUCTION = "Reply with one JSON object that matches this JSON schema"
MARKER = re.compile(r"^(<<<SOURCE [0-9a-f]+>>>)$", re.MULTILINE)
ORDER_ID = re.compile(r"\bA-\d{4}\b")
MONEY = re.compile(r"\$\s?(\d+(?:\.\d{1,2})?)")
REFUND_WORDS = ("refund", "broken", "damaged", "faulty", "money back")
RETURN_WORDS = ("return",)
WHERE_WORDS = ("where is", "where's", "track", "deliver", "shipping", "shipped", "arrive", "late", "ship")


def is_extraction(request: dict[str, Any]) -> bool:
    """An ``extract`` request: no tools, and a schema in ``output_config`` or in the system prompt."""
    if offered_tools(request):
        return False
    return "output_config" in request or SCHEMA_INSTRUCTION in _system(request)


def source_text(request: dict[str, Any]) -> str:
    """The text between the two marker lines of the first user message."""
    prompt = first_user_text(request)
    found = MARKER.search(prompt)
    if found is None:
        return ""
    end = prompt.find("\n" + found.group(1), found.end())
    return prompt[found.end() : end if end >= 0 else len(prompt)].strip()


def extraction_reply(request: dict[str, Any]) -> Reply:
    """The customer's request as JSON."""
    source = source_text(request)
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
    return Reply([text(json.dumps(answer))], "end_turn")


def _system(request: dict[str, Any]) -> str:
    system = request.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return ""
