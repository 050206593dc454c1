"""The offline judge: a deterministic stand-in for an LLM grading an answer against a rubric.

It is NOT a language model: it reads only the rubric's explicit criteria, one per line, and checks
them literally (case-insensitive) against the answer between ``<answer>`` tags:

- ``must mention "X"`` (or ``contain``/``include``/``say``): every quoted string must appear;
  ``must mention one of "X", "Y"`` (or ``"X" or "Y"``): at least one must appear;
- ``must not mention "X"`` (or ``contain``/``include``/``say``/``promise``): none may appear;
- ``at most N words`` / ``at least N words``.

It answers with one line per criterion and a last line PASS or FAIL. A rubric with no criteria
it can read gets "UNCLEAR" (which a judge check counts as a fail), as would a vague rubric given
to a real model that cannot decide. Lines that are not criteria (context for a real judge) are ignored.
"""

from __future__ import annotations

import re

from lockgate_infra.stub.conversation import JSON, first_user_text, text
from lockgate_infra.stub.replies import Model, Reply, StubError

_RUBRIC = re.compile(r"<rubric>\s*(.*?)\s*</rubric>", re.DOTALL)
_ANSWER = re.compile(r"<answer>\n?(.*?)\n?</answer>", re.DOTALL)
_MUST = re.compile(r"\bmust\s+(not\s+)?(mention|contain|include|say|promise)\b(.*)", re.IGNORECASE)
_QUOTED = re.compile(r'"([^"]+)"')
_WORDS = re.compile(r"\bat\s+(most|least)\s+(\d+)\s+words\b", re.IGNORECASE)


def _grade_line(line: str, answer: str) -> tuple[bool, str] | None:
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
    present = [q for q in quoted if q.lower() in answer.lower()]
    if must.group(1):
        return not present, f"must not mention {quoted}: {'found ' + repr(present) if present else 'absent'}"
    rest = must.group(3).lower()
    any_of = "one of" in rest or " or " in rest
    met = bool(present) if any_of else len(present) == len(quoted)
    return met, f"must mention {'one of ' if any_of else ''}{quoted}: {'yes' if met else 'no'}"


def judge_model(request: JSON) -> Reply:
    """Grade the answer in the request against the rubric's explicit criteria."""
    prompt = first_user_text(request)
    rubric, answer = _RUBRIC.search(prompt), _ANSWER.search(prompt)
    if rubric is None or answer is None:
        return Reply([text("I was not given a rubric and an answer to grade.\nUNCLEAR")])
    graded = [g for line in rubric.group(1).splitlines() if (g := _grade_line(line, answer.group(1)))]
    if not graded:
        return Reply([text("The rubric has no criteria I can check, so I cannot decide.\nUNCLEAR")])
    notes = "\n".join(f"- {'met' if met else 'NOT met'}: {note}" for met, note in graded)
    verdict = "PASS" if all(met for met, _ in graded) else "FAIL"
    return Reply([text(f"{notes}\n{verdict}")])


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
