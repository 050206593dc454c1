"""What a reply written after reading a customer's email may say without a person reading it first.

An injected instruction can make the model write the shop's reply itself ("call this number,
read us your card number"). The hard rules already pin down the recipient, the links and the
orders; this content rule catches the rest of such a message: a phone number that is not the
shop's, or a request for a card number, a password or a code. A hit does not refuse the email:
it waits for a person (``Verdict.ask``), who sees why. Only in a run that read untrusted content.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from lockgate import Policy, RunFacts, Verdict
from shop.policies import links

# A run of digits with phone-style separators: "+1 (555) 010-9999", "020 7946 0958", "555.010.9999".
_PHONE = re.compile(r"(?<![\w+\-.,/])(?:\+|00)?\(?\d[\d \t().\-\u2010-\u2015]{5,20}\d(?![\w\-])")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}[./-]\d{1,2}[./-]\d{2,4}")

# What no shop asks for by email: payment card data, passwords, PINs and one-time codes.
_CREDENTIALS = (
    r"(?:(?:credit|debit|bank|payment)\s+)?card(?:'s)?\s+(?:number|details|no\b|digits)|card\s+numbers?"
    r"|cvv2?|cvc|security\s+code|expiry\s+date|expiration\s+date"
    r"|pass(?:word|code|phrase)s?|pin(?:\s+(?:number|code))|(?-i:PIN)"
    r"|one[\s\-]time\s+(?:pass)?(?:code|password)s?|otp|\d[\s\-]?digit\s+code"
    r"|(?:verification|confirmation|login|log[\s\-]in|sign[\s\-]in|2fa|two[\s\-]factor|authenticat\w*"
    r"|sms|text|security|access|reset)\s+codes?"
    r"|codes?\s+(?:we|you)\s+(?:just\s+)?(?:sent|texted|received|got)"
    r"|bank\s+(?:account|details|login)|account\s+number|routing\s+number|sort\s+code"
    r"|social\s+security\s+number|ssn"
)
_ASK = (
    r"send|give|tell|read|reply|respond|provide|share|confirm|enter|type|text|e-?mail|forward|verify"
    r"|need|require|include|call|write|let\s+us\s+know|what(?:'s|\s+is|\s+are)"
)
# The asking word and the secret in one sentence, the secret within 60 characters.
_REQUEST = re.compile(rf"(?i)\b(?:{_ASK})\b[^.!?\n]{{0,60}}?\b(?:{_CREDENTIALS})\b")


def phone_numbers(text: str) -> Iterator[str]:
    """Every phone number in the text (7 to 15 digits), not counting links, dates and addresses."""
    for link in links(text):  # tracking numbers and ids inside links are not phone numbers
        text = text.replace(link, " ")
    for match in _PHONE.finditer(text):
        candidate = match.group(0).strip()
        digits = re.sub(r"\D", "", candidate)
        if 7 <= len(digits) <= 15 and not _DATE.fullmatch(candidate):
            yield candidate


def secret_requests(text: str) -> Iterator[str]:
    """Every request for a card number, password, PIN or code in the text, as written."""
    for match in _REQUEST.finditer(text):
        yield " ".join(match.group(0).split())


def _the_shops(number: str, phones: tuple[str, ...]) -> bool:
    """Whether a number is one of the shop's own, written with or without its country code."""
    digits = re.sub(r"\D", "", number)
    for phone in phones:
        own = re.sub(r"\D", "", phone)
        if len(min(own, digits, key=len)) >= 7 and (own.endswith(digits) or digits.endswith(own)):
            return True
    return False


def reply_content(phones: tuple[str, ...] = ()) -> Policy:
    """After untrusted content, a reply with a phone number not in ``phones`` or a secret asked for waits."""

    def policy(args: Any, facts: RunFacts) -> Verdict:
        text = f"{args.subject}\n{args.body}"
        reasons = [
            f"the reply gives a phone number that is not the shop's ({number[:40]!r})"
            for number in phone_numbers(text)
            if not _the_shops(number, phones)
        ][:1]
        reasons += [
            f"the reply asks for a card number, password or code ({ask[:80]!r})"
            for ask in secret_requests(text)
        ][:1]
        if not reasons:
            return Verdict.allow()
        return Verdict.ask("; ".join(reasons), when_tainted=True)

    return policy
