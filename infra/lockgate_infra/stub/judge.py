"""The offline judge: a deterministic stand-in for an LLM grading an answer against a rubric.

It is NOT a language model. It reads only the rubric's explicit criteria, one per line, and
grades the answer between ``<answer>`` tags by meaning through a fixed paraphrase table
(``stub/concepts.py``): each quoted phrase stands for a concept with its other wordings, an order
number matches its written forms, and negations and hedges are read clause by clause. The
criterion kinds it understands:

- ``must mention "X"`` (or ``contain``/``include``/``say``/``state``/``claim``): every concept is
  there, said without a negation (a fact, such as "shipped" or "refunded", also without a hedge:
  "will be shipped" is not shipped); ``must mention one of "X", "Y"`` (or ``"X" or "Y"``): one is;
- ``must not mention "X"`` (or ``contain``/``include``): a topic may not appear at all, not even
  negated; a fact may not be stated (``"We have refunded"``: "nothing has been refunded yet" and
  "will be refunded once approved" are not claims that it is done);
- ``must not say "X"`` (or ``state``/``claim``): the same for a fact or a topic the answer asserts;
  ``must not promise "X"``: not even in the future;
- ``at most N words`` / ``at least N words``.

It answers with one line per criterion and a last line PASS or FAIL. A rubric with no criteria
it can read gets "UNCLEAR" (which a judge check counts as a fail), as would a vague rubric given
to a real model that cannot decide. Lines that are not criteria (context for a real judge) are
ignored. ``literal_judge_model`` is the judge before calibration (every phrase matched as
written, no negation), kept as the baseline ``lockgate eval --calibrate`` compares against.
"""

from __future__ import annotations

import re

from lockgate_infra.stub.concepts import Concept, concept_for, is_order_id, occurrences
from lockgate_infra.stub.conversation import JSON, first_user_text, text
from lockgate_infra.stub.replies import Model, Reply, StubError

_RUBRIC = re.compile(r"<rubric>\s*(.*?)\s*</rubric>", re.DOTALL)
_ANSWER = re.compile(r"<answer>\n?(.*?)\n?</answer>", re.DOTALL)
_MUST = re.compile(
    r"\bmust\s+(not\s+)?(mention|contain|include|say|state|claim|promise)\b(.*)", re.IGNORECASE
)
_QUOTED = re.compile(r'"([^"]+)"')
_WORDS = re.compile(r"\bat\s+(most|least)\s+(\d+)\s+words\b", re.IGNORECASE)
_TOPIC_VERBS = ("mention", "contain", "include")


def _present(concept: Concept, answer: str, *, forbidden: bool, verb: str) -> bool:
    """Whether the answer expresses the concept, in the sense this criterion asks about."""
    found = occurrences(concept, answer)
    if is_order_id(concept):
        return bool(found)  # a name is named even in a negated clause
    if forbidden and verb in _TOPIC_VERBS and not concept.fact:
        return bool(found)  # the topic may not come up at all
    if forbidden and verb == "promise":
        return any(not o.negated for o in found)
    return any(not o.negated and not (concept.fact and o.hedged) for o in found)


def _literal(phrase: str, answer: str) -> bool:
    return phrase.lower() in answer.lower()


def _grade_line(line: str, answer: str, *, literal: bool) -> tuple[bool, str] | None:
    """(met, note) for a criterion line, or None when the line is not one."""
    words = _WORDS.search(line)
    if words:
        limit, count = int(words.group(2)), len(answer.split())
        met = count <= limit if words.group(1).lower() == "most" else count >= limit
        return met, f"{count} words, {words.group(1).lower()} {limit}"
    must = _MUST.search(line)
    quoted = _QUOTED.findall(must.group(3)) if must else []
    if must is None or not quoted:
        return None
    forbidden, verb = bool(must.group(1)), must.group(2).lower()
    present = [
        q
        for q in quoted
        if (
            _literal(q, answer)
            if literal
            else _present(concept_for(q), answer, forbidden=forbidden, verb=verb)
        )
    ]
    if forbidden:
        return not present, f"must not {verb} {quoted}: {'found ' + repr(present) if present else 'absent'}"
    rest = must.group(3).lower()
    any_of = "one of" in rest or " or " in rest
    met = bool(present) if any_of else len(present) == len(quoted)
    return met, f"must {verb} {'one of ' if any_of else ''}{quoted}: {'yes' if met else 'no'}"


def grade(rubric: str, answer: str, *, literal: bool = False) -> str:
    """The judge's reply text: one line per criterion, then PASS, FAIL or UNCLEAR."""
    graded = [g for line in rubric.splitlines() if (g := _grade_line(line, answer, literal=literal))]
    if not graded:
        return "The rubric has no criteria I can check, so I cannot decide.\nUNCLEAR"
    notes = "\n".join(f"- {'met' if met else 'NOT met'}: {note}" for met, note in graded)
    return f"{notes}\n{'PASS' if all(met for met, _ in graded) else 'FAIL'}"


def _reply(request: JSON, *, literal: bool) -> Reply:
    prompt = first_user_text(request)
    rubric, answer = _RUBRIC.search(prompt), _ANSWER.search(prompt)
    if rubric is None or answer is None:
        return Reply([text("I was not given a rubric and an answer to grade.\nUNCLEAR")])
    return Reply([text(grade(rubric.group(1), answer.group(1), literal=literal))])


def judge_model(request: JSON) -> Reply:
    """Grade the answer in the request against the rubric's criteria, by meaning."""
    return _reply(request, literal=False)


def literal_judge_model(request: JSON) -> Reply:
    """The judge before calibration: the rubric's quoted words, matched as written."""
    return _reply(request, literal=True)


def with_judge(model: Model) -> Model:
    """``model``, except that requests from the eval's judge (its system prompt) get the offline judge.

    So one local stand-in serves a whole eval run that was configured for real Claude, judge included.
    """
    from lockgate.evals.judge import JUDGE_SYSTEM

    def answer(request: JSON) -> Reply | StubError:
        system = request.get("system") or ""
        if not isinstance(system, str):
            system = "".join(str(block.get("text", "")) for block in system)
        return judge_model(request) if system == JUDGE_SYSTEM else model(request)

    return answer
