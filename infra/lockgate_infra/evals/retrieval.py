"""The retrieval eval for the shop's help search: is the right passage in the top k, per chunk size?

Each question in ``workflows/shop/evals/retrieval.toml`` is labelled with the section that
answers it (``page#anchor``, the anchor of its heading; ``page`` for a page's opening). A search
result is labelled from its URL, so the label holds whatever the chunk size: a long section cut
into several chunks still answers under its own heading.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from lockgate.evals import RetrievalScore, compare, hit_rate, load_questions

DEFAULT_QUESTIONS = Path(__file__).resolve().parents[3] / "workflows" / "shop" / "evals" / "retrieval.toml"


def passage_label(url: str) -> str:
    """``https://shop.example.com/help/shipping#delivery-times`` → ``shipping#delivery-times``."""
    return url.rsplit("/", 1)[-1]


def score_chunk_sizes(questions_path: Path, sizes: Sequence[int], k: int = 3) -> dict[int, RetrievalScore]:
    """Hit rate in the top k for each chunk size (a fresh index per size)."""
    from shop.help import HelpIndex

    questions = load_questions(questions_path)
    scores = {}
    for size in sizes:
        index = HelpIndex(chunk_words=size)

        def search(question: str, index: HelpIndex = index) -> list[str]:
            return [passage_label(p.url) for p in index.search(question, k)]

        scores[size] = hit_rate(questions, search, k)
    return scores


def render(scores: dict[int, RetrievalScore]) -> str:
    """One line per chunk size (overall and per kind), the misses of the best size, and the comparison."""
    kinds = sorted({kind for s in scores.values() for kind in s.by_kind})
    lines = [f"chunk words  hit@{next(iter(scores.values())).k} (95% CI)          " + "  ".join(kinds)]
    for size, score in scores.items():
        per_kind = "  ".join(f"{score.by_kind[k][0]}/{score.by_kind[k][1]}".ljust(len(k)) for k in kinds)
        lines.append(f"{size:>11}  {score.interval.describe():<28}  {per_kind}")
    best_size, best = max(scores.items(), key=lambda item: (item[1].interval.rate, -item[0]))
    lines.append(f"\nmissed at {best_size} words:")
    lines += [
        f"  {q.kind}: {q.text!r} wanted {q.expected}, got {list(got) or 'nothing'}" for q, got in best.misses
    ]
    for size, score in scores.items():
        if size != best_size:
            lines.append(
                compare(f"{best_size} words", best.interval, f"{size} words", score.interval).verdict()
            )
    return "\n".join(lines)


def run_retrieval(questions: Path | None, sizes: Sequence[int], k: int, out: TextIO) -> int:
    """Print the comparison; always exits 0 (it reports numbers, it is not a gate)."""
    print(render(score_chunk_sizes(questions or DEFAULT_QUESTIONS, sizes, k)), file=out)
    return 0
