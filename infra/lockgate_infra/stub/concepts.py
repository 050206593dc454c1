"""What a rubric's quoted phrase means to the offline judge: a concept, its wordings, and when it counts.

A quoted phrase is looked up in ``CONCEPTS`` (the rubric's own words are among each concept's
names), so "team" also finds "a colleague who approves refunds" and "We have refunded" also finds
"the money is on its way back to you". An order number such as "A-1042" matches its written forms
(A1042, #A-1042, a-1042) but not a longer number (A-10420). Any other phrase is matched as written.

Each occurrence is read in its clause (text between , ; : . ! ? and "but"): a negation before or
inside it ("not", "no need for", "haven't") makes it *negated*; a future or condition ("will be",
"once", "if", "needs") makes it *hedged*. A **fact** (an order's status, a refund that is done)
is stated only by an occurrence that is neither; a **topic** (a refund, a person deciding) is
raised by any occurrence that is not negated, and mentioned at all by any occurrence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CLAUSE = re.compile(r"[,;:.!?]\s|[,;:!?]|\.$|\bbut\b|\n", re.IGNORECASE)
_NEGATION = re.compile(
    r"\b(not|no|never|nothing|none|without|cannot|can't|won't|don't|doesn't|didn't|isn't|aren't|wasn't|"
    r"haven't|hasn't|hadn't|unable)\b|n't\b",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    r"\b(will|would|may|might|once|if|unless|until|needs?|going to|pending|waiting|to be)\b|'ll\b",
    re.IGNORECASE,
)
_ALREADY = re.compile(r"\balready\b", re.IGNORECASE)  # "should already have been" is a claim, not a hedge
_ORDER_ID = re.compile(r"^#?([A-Za-z]{1,3})[-\s]?(\d{3,})$")


@dataclass(frozen=True)
class Concept:
    """A meaning: the rubric words that name it, the wordings that express it, fact or topic."""

    name: str
    names: tuple[str, ...]
    wordings: tuple[str, ...]  # regular expressions, case-insensitive
    fact: bool = False  # a fact is stated only affirmatively; a topic is raised by any non-negated use

    def patterns(self) -> list[re.Pattern[str]]:
        """The compiled wordings."""
        return [re.compile(w, re.IGNORECASE) for w in self.wordings]


_MONEY = r"(money|\$\s?\d[\d.,]*|£\s?\d[\d.,]*|€\s?\d[\d.,]*|amount|payment|refund)"
CONCEPTS = (
    Concept(
        "shipped",
        ("shipped", "on its way", "dispatched", "sent", "in transit"),
        (
            r"\bshipped\b",
            r"\bdispatched\b",
            r"\bsent( out)?\b(?! (it|them|your request|a|an|the)\b)",
            r"\bposted\b",
            r"\bin transit\b",
            r"\bon (its|the|their) way\b(?! back)",
            r"\bon the road\b",
            r"\bout for delivery\b",
            r"\bleft (our|the) (warehouse|depot)\b",
            r"\bleft us\b",
            r"\bhanded (it |them )?(to|over to) (the|our) (courier|carrier)\b",
            r"\bwith (the |our )?(courier|carrier|dhl|ups|fedex|royal mail|postal service|post office)\b",
        ),
        fact=True,
    ),  # fmt: skip
    Concept(
        "delivered",
        ("delivered", "arrived"),
        (r"\bdelivered\b", r"\b(has|have|had) arrived\b", r"\barrived (on|yesterday|today)\b"),
        fact=True,
    ),
    Concept(
        "a refund that is done",
        ("we have refunded", "refunded", "has been refunded", "refund is done", "refund has been issued"),
        (
            r"\brefunded\b",
            r"\b(issued|processed|completed|sent|paid out|made)\b[^,;.]{0,20}\brefund\b",
            r"\brefund\b[^,;.]{0,40}\b(has|have|had) been "
            r"(processed|issued|completed|approved|paid|sent|made)\b",
            r"\brefund\b[^,;.]{0,40}\b(is|was) "
            r"(processed|issued|complete|completed|approved|paid|sent|done)\b",
            r"\b(paid out|credited( back)?( to)?|reimbursed)\b",
            _MONEY + r"\b[^,;.]{0,40}\b(on (its|the) way back|back (to|in|on|into) your)\b",
        ),
        fact=True,
    ),
    Concept(
        "a refund",
        ("refund", "refunds", "a refund", "money back", "reimburse"),
        (
            r"\brefund",
            r"\bmoney back\b",
            r"\bcash back\b",
            r"\breimburs",
            r"\brepay",
            r"\bcredit(ed)? back\b",
        ),
    ),
    Concept(
        "a person decides",
        ("team", "person", "review", "a person", "our team", "a human", "staff", "approval"),
        (
            r"\bteam\b",
            r"\bperson\b",
            r"\breview",
            r"\bcolleagues?\b",
            r"\bmanagers?('s)?\b",
            r"\bsupervisors?('s)?\b",
            r"\bstaff\b",
            r"\bhuman\b",
            r"\bsomeone\b",
            r"\bspecialists?\b",
            r"\bapprov",
            r"\bsign-?off\b",
            r"\bescalat",
            r"\b(returns|support|help) desk\b",
        ),
    ),  # fmt: skip
    Concept(
        "an apology",
        ("sorry", "apologise", "apologize", "apology", "apologies"),
        (r"\bsorry\b", r"\bapologi[sz]e", r"\bapolog(y|ies)\b", r"\bregret\b"),
    ),
)
_BY_NAME = {name: c for c in CONCEPTS for name in c.names}


@dataclass(frozen=True)
class Occurrence:
    """One place the concept appears, and how it is said there."""

    text: str
    negated: bool
    hedged: bool


def concept_for(phrase: str) -> Concept:
    """The concept a quoted phrase names: an order number, a table entry, or the phrase as written."""
    key = " ".join(phrase.lower().split())
    order = _ORDER_ID.match(key)
    if order:
        letters, digits = order.groups()
        return Concept(phrase, (key,), (rf"(?<![a-z0-9])#?{letters}[-\s]?{digits}(?![0-9a-z])",))
    return _BY_NAME.get(key) or Concept(phrase, (key,), (re.escape(key),))


def is_order_id(concept: Concept) -> bool:
    """Whether the concept is an order number (a name: negation does not unsay it)."""
    return bool(_ORDER_ID.match(concept.name.lower()))


def occurrences(concept: Concept, answer: str) -> list[Occurrence]:
    """Every place the concept appears in the answer, each read in its clause."""
    found = []
    for pattern in concept.patterns():
        for match in pattern.finditer(answer):
            start = max((m.end() for m in _CLAUSE.finditer(answer, 0, match.start())), default=0)
            clause = answer[start : match.end()]
            hedged = bool(_HEDGE.search(clause)) and not _ALREADY.search(clause)
            found.append(Occurrence(match.group(0), bool(_NEGATION.search(clause)), hedged))
    return found
