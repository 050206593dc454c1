"""Search the shop's bundled help pages: SQLite FTS5 with BM25, passages that keep their heading.

The index is an in-memory database built on the first search and kept by the ``HelpIndex``
object (which the worker creates once per process, at cold start). Pages are markdown files;
each heading starts a section and long sections are cut into chunks of ``chunk_words`` words,
so a passage always carries its page title and section heading.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HELP_DIR = Path(__file__).resolve().parent / "help"
DEFAULT_CHUNK_WORDS = 120
# bm25() is negative: the lower, the better. Above this a passage shares only a stray word
# with the question ("time", "order") and is not worth an answer. Tuned on the bundled pages.
DEFAULT_MAX_SCORE = -1.0
MAX_QUERY_TERMS = 16
CANDIDATES = 20  # ranked by BM25, then filtered by how many of the question's terms they share

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_WORD = re.compile(r"\w+", re.UNICODE)
_STOPWORDS = """
    a about after again all also am an and any are as at be been before being but by can could dear
    did do does doing don for from get go going got had has have having he hello her here hey hi his
    how i if in into is it its just know like long may me might much must my myself need no nor not
    now of off ok okay on once only or our out over please really should so some still take tell than
    thank thanks that the their them then there these they this those to too under until up us very
    something want was way we were what when where which while who why will with would yes you your
    yours"""
STOPWORDS = frozenset(_STOPWORDS.split())
# Customers' words → the words the help pages use. Each group counts as one term of the question.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "parcel": ("package", "delivery", "shipment"),
    "package": ("parcel", "delivery", "shipment"),
    "arrive": ("delivery", "delivered"),
    "arrives": ("delivery", "delivered"),
    "arrived": ("delivery", "delivered"),
    "late": ("delivery", "delay"),
    "delayed": ("delivery", "delay"),
    "broken": ("damaged", "faulty"),
    "smashed": ("damaged",),
    "cracked": ("damaged",),
    "shattered": ("damaged",),
    "money": ("refund",),
    "reimburse": ("refund",),
    "back": ("return",),
    "moved": ("address",),
    "move": ("address",),
    "moving": ("address",),
    "pay": ("payment",),
    "paid": ("payment", "charged"),
    "ship": ("shipping",),
    "shipped": ("shipping", "dispatch"),
    "postage": ("shipping",),
    "wrong": ("return",),
}
# Phrases whose meaning is lost once their stopwords are dropped.
PHRASES: dict[str, tuple[str, ...]] = {
    "how long": ("days", "times"),
    "how much": ("price", "fee"),
    "where is": ("tracking", "delivered"),
    "send back": ("return",),
    "money back": ("refund",),
}


@dataclass(frozen=True)
class Passage:
    """One numbered search result."""

    n: int
    title: str
    heading: str
    text: str
    url: str
    score: float

    def as_result(self) -> dict[str, Any]:
        """The JSON the model sees (no score: it means nothing to the model)."""
        return {"n": self.n, "title": self.title, "heading": self.heading, "text": self.text, "url": self.url}


@dataclass(frozen=True)
class Section:
    """A chunk of one page under one heading."""

    page: str
    title: str
    heading: str
    anchor: str
    text: str


def slug(heading: str) -> str:
    """A heading's anchor, the way common markdown renderers make it."""
    return re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")


def split_page(page: str, markdown: str, chunk_words: int = DEFAULT_CHUNK_WORDS) -> list[Section]:
    """A page's sections, each at most ``chunk_words`` words (cut at paragraph breaks when possible)."""
    markdown = _COMMENT.sub("", markdown)
    title, heading, lines = page, "", []
    raw: list[tuple[str, list[str]]] = []
    for line in markdown.splitlines():
        match = _HEADING.match(line)
        if match is None:
            lines.append(line)
            continue
        raw.append((heading, lines))
        level, text = len(match.group(1)), match.group(2)
        if level == 1 and title == page:
            title, heading = text, text
        else:
            heading = text
        lines = []
    raw.append((heading, lines))
    sections = []
    for section_heading, body in raw:
        for chunk in _chunks("\n".join(body), chunk_words):
            name = section_heading or title
            sections.append(Section(page, title, name, "" if name == title else slug(name), chunk))
    return sections


def _chunks(text: str, chunk_words: int) -> list[str]:
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]
    chunks: list[str] = []
    current: list[str] = []
    for paragraph in paragraphs:
        words = paragraph.split()
        if current and len(current) + len(words) > chunk_words:
            chunks.append(" ".join(current))
            current = []
        while len(words) > chunk_words:  # one paragraph longer than a chunk: cut it by words
            chunks.append(" ".join(words[:chunk_words]))
            words = words[chunk_words:]
        current.extend(words)
    if current:
        chunks.append(" ".join(current))
    return chunks


def query_terms(text: str) -> list[tuple[str, ...]]:
    """The question's words, each with its synonyms; stopwords and one-letter words dropped."""
    seen: set[str] = set()
    terms: list[tuple[str, ...]] = []
    text = " ".join(_WORD.findall(text.lower()))
    for phrase, words in PHRASES.items():
        if re.search(rf"\b{phrase}\b", text):
            text = re.sub(rf"\b{phrase}\b", " ", text)
            terms.append(words)
    for word in text.split():
        if word in STOPWORDS or word in seen or (len(word) < 2 and not word.isdigit()):
            continue
        seen.add(word)
        terms.append((word, *SYNONYMS.get(word, ())))
    return terms[:MAX_QUERY_TERMS]


def match_expression(group: tuple[str, ...] | list[tuple[str, ...]]) -> str:
    """An FTS5 MATCH expression: every word quoted, OR-ed.

    Only ``\\w`` runs ever get here, each wrapped in double quotes, so no FTS5 syntax from the
    model (quotes, ``NEAR``, ``*``, ``^``, column filters, parentheses) can reach SQLite.
    """
    words = [w for item in group for w in ((item,) if isinstance(item, str) else item)]
    return " OR ".join(f'"{word}"' for word in dict.fromkeys(words))


class HelpIndex:
    """The help pages in an in-memory FTS5 table, built on first use."""

    def __init__(
        self,
        directory: Path = HELP_DIR,
        *,
        base_url: str = "https://shop.example.com/help",
        chunk_words: int = DEFAULT_CHUNK_WORDS,
        max_score: float = DEFAULT_MAX_SCORE,
    ) -> None:
        self._directory = directory
        self._base_url = base_url.rstrip("/")
        self._chunk_words = chunk_words
        self._max_score = max_score
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # one connection, shared by the worker's threads

    def search(self, query: str, limit: int = 3) -> list[Passage]:
        """The best passages for the question, numbered from 1; empty when nothing is relevant.

        A passage counts only if it scores below ``max_score`` and shares at least two of the
        question's terms (or its only one): a single stray word ("time", "price") is not a match.
        """
        terms = query_terms(query)
        if not terms:
            return []
        needed = min(2, len(terms))
        with self._lock:
            db = self._connection()
            rows = db.execute(
                "SELECT rowid, title, heading, body, page, anchor, bm25(passages, 2.0, 4.0, 1.0) AS score "
                "FROM passages WHERE passages MATCH ? ORDER BY score LIMIT ?",
                (match_expression(terms), CANDIDATES),
            ).fetchall()
            hits = [
                {
                    row[0]
                    for row in db.execute(
                        "SELECT rowid FROM passages WHERE passages MATCH ?", (match_expression(group),)
                    )
                }
                for group in terms
            ]
        passages: list[Passage] = []
        for rowid, title, heading, body, page, anchor, score in rows:
            if score > self._max_score or sum(rowid in hit for hit in hits) < needed:
                continue
            url = f"{self._base_url}/{page}" + (f"#{anchor}" if anchor else "")
            passages.append(Passage(len(passages) + 1, title, heading, body, url, float(score)))
            if len(passages) == limit:
                break
        return passages

    def sections(self) -> list[Section]:
        """Every indexed chunk, in page order (for evals and tests)."""
        sections = []
        for path in sorted(self._directory.glob("*.md")):
            sections += split_page(path.stem, path.read_text(encoding="utf-8"), self._chunk_words)
        return sections

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            db = sqlite3.connect(":memory:", check_same_thread=False)
            db.execute(
                "CREATE VIRTUAL TABLE passages USING fts5("
                "title, heading, body, page UNINDEXED, anchor UNINDEXED, tokenize='porter unicode61')"
            )
            db.executemany(
                "INSERT INTO passages (title, heading, body, page, anchor) VALUES (?, ?, ?, ?, ?)",
                [(s.title, s.heading, s.text, s.page, s.anchor) for s in self.sections()],
            )
            self._db = db
            weakref.finalize(self, db.close)  # the connection lives exactly as long as this index
        return self._db
