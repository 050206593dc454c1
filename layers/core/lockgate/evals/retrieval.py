"""Retrieval evals: is the labelled passage among the top k results? Hit rate with its Wilson interval.

A questions file (TOML)::

    [[questions]]
    text = "my parcel never showed up"
    expected = "shipping#lost-parcels"   # the label a search result carries (page#anchor for help pages)
    kind = "paraphrase"                  # optional: paraphrase, typo, unseen-words, ... (reported per kind)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lockgate.evals.cases import CaseFileError, read_file
from lockgate.evals.stats import Interval, wilson

# A search: the question in, the labels of the ranked results out (best first).
Search = Callable[[str], Sequence[str]]


@dataclass(frozen=True)
class Question:
    """A customer question and the passage that answers it."""

    text: str
    expected: str
    kind: str = "question"


@dataclass(frozen=True)
class RetrievalScore:
    """Hits in the top k, overall and per kind, and the questions missed (with what came back)."""

    k: int
    hits: int
    total: int
    by_kind: dict[str, tuple[int, int]]
    misses: Sequence[tuple[Question, Sequence[str]]]

    @property
    def interval(self) -> Interval:
        """Hit rate with its 95% Wilson interval."""
        return wilson(self.hits, self.total)

    def kind_interval(self, kind: str) -> Interval:
        """Hit rate for one kind of question."""
        hits, total = self.by_kind[kind]
        return wilson(hits, total)


def load_questions(path: str | Path) -> list[Question]:
    """Read and validate a questions file."""
    raw = read_file(path)
    items = raw.get("questions")
    if not isinstance(items, list) or not items:
        raise CaseFileError(f"{path}: no [[questions]]")
    questions = []
    for i, item in enumerate(items):
        where = f"{path}: questions[{i}]"
        if not isinstance(item, dict) or set(item) - {"text", "expected", "kind"}:
            raise CaseFileError(f"{where}: expected a table with text, expected and optional kind")
        text, expected = item.get("text"), item.get("expected")
        if not isinstance(text, str) or not text.strip() or not isinstance(expected, str) or not expected:
            raise CaseFileError(f"{where}: 'text' and 'expected' must be non-empty strings")
        questions.append(Question(text, expected, str(item.get("kind", "question"))))
    return questions


def hit_rate(questions: Sequence[Question], search: Search, k: int = 3) -> RetrievalScore:
    """Ask every question; a hit is the expected label among the first ``k`` results."""
    hits = 0
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses = []
    for question in questions:
        got = list(search(question.text))[:k]
        hit = question.expected in got
        hits += hit
        by_kind[question.kind][0] += hit
        by_kind[question.kind][1] += 1
        if not hit:
            misses.append((question, got))
    return RetrievalScore(k, hits, len(questions), {kind: (h, n) for kind, (h, n) in by_kind.items()}, misses)
