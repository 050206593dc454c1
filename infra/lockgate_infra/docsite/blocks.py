"""The shell blocks a docs page shows, so a test can run each one and compare what it prints.

Every fenced block of shell on a page is one of two kinds:

- ``console``: run by ``tests/docs`` on this machine. ``$ `` starts a command (a line ending in
  ``\\`` continues it, and so do a here-document's lines); the lines after it are what it
  prints. A line ``...`` stands for any number of lines, and ``…`` inside a line for any text
  (ids, times, ports); a command with nothing under it only has to succeed, and a last line
  ``[exit N]`` says it exits with N (a gate that fails, a refused input). Put
  ``<!-- docs: local stack -->`` on the line before a block whose commands need ``lockgate local``
  running (the test starts one; ``127.0.0.1:8787`` in a command is its address).
- ``sh`` with ``<!-- docs: entry points -->`` on the line before: commands that cannot run inside
  a test (a real AWS account or API key, a foreground server, ``make test`` itself). The test
  checks each is a real entry point (a Makefile target, a ``lockgate`` command the parser accepts,
  a ``sam`` or ``aws`` command); ``make deploy-test`` runs ``sam build`` / ``sam deploy`` against
  moto, CI runs ``make test``, and a test compares ``make demo``'s output with the quick start's.

Any other shell block is an error, so nothing a reader may copy goes unchecked.

Code a page shows from a file of the project (``<!-- docs: file PATH -->`` on the line before a
fenced block) must be that file, exactly: the file is the example's source, run or imported by
the tests (the triage example's test runs in ``make test``), so the page cannot drift from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

SHELL = frozenset({"sh", "bash", "shell", "console", "zsh"})
LOCAL_STACK = "<!-- docs: local stack -->"
FILE = re.compile(r"^<!-- docs: file (\S+) -->$")
ENTRY_POINTS = "<!-- docs: entry points -->"
ANY_LINES = "..."
_FENCE = re.compile(r"^```([A-Za-z0-9_-]*)\s*$")
_EXIT = re.compile(r"\[exit (\d+)\]")
_HEREDOC = re.compile(r"<<-?\s*'?([A-Za-z_]+)'?")


@dataclass(frozen=True)
class Command:
    """One command as a reader would type it, and what the page says it prints."""

    text: str
    expected: tuple[str, ...]
    line: int

    @property
    def exit_code(self) -> int:
        """The exit code the page shows (a last line ``[exit N]``), else 0."""
        last = self.expected[-1] if self.expected else ""
        found = _EXIT.fullmatch(last)
        return int(found.group(1)) if found else 0

    @property
    def output(self) -> tuple[str, ...]:
        """What the page says the command prints (without an ``[exit N]`` line)."""
        return self.expected[:-1] if self.exit_code else self.expected


@dataclass(frozen=True)
class Block:
    """A fenced shell block: where it is, its kind and its commands."""

    path: Path
    line: int
    kind: str  # "console", "entry points", or the fence's language when it is neither (an error)
    local_stack: bool
    commands: tuple[Command, ...] = field(default=())
    body: tuple[str, ...] = field(default=())

    def where(self) -> str:
        """``path:line``, for failure messages."""
        return f"{self.path}:{self.line}"


def shell_blocks(path: Path) -> list[Block]:
    """Every fenced shell block in a Markdown file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opened = _FENCE.match(lines[index])
        if opened is None:
            index += 1
            continue
        end = next((n for n in range(index + 1, len(lines)) if lines[n].startswith("```")), len(lines))
        language = opened.group(1)
        if language in SHELL:
            marker = lines[index - 1].strip() if index else ""
            body = tuple(lines[index + 1 : end])
            kind = (
                "console" if language == "console" else "entry points" if marker == ENTRY_POINTS else language
            )
            commands = _commands(body, index + 2) if kind == "console" else ()
            blocks.append(Block(path, index + 1, kind, marker == LOCAL_STACK, commands, body))
        index = end + 1
    return blocks


@dataclass(frozen=True)
class FileBlock:
    """A fenced block that shows a file of the project (its path relative to the repository)."""

    path: Path
    line: int
    file: str
    body: str


def file_blocks(path: Path) -> list[FileBlock]:
    """Every fenced block in a Markdown file marked ``<!-- docs: file PATH -->``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[FileBlock] = []
    for index, line in enumerate(lines):
        marker = FILE.match(lines[index - 1].strip()) if index else None
        if marker is None or _FENCE.match(line) is None:
            continue
        end = next((n for n in range(index + 1, len(lines)) if lines[n].startswith("```")), len(lines))
        found.append(FileBlock(path, index + 1, marker.group(1), "\n".join(lines[index + 1 : end]) + "\n"))
    return found


def _commands(body: tuple[str, ...], first_line: int) -> tuple[Command, ...]:
    commands: list[Command] = []
    text: list[str] = []
    expected: list[str] = []
    start = first_line
    continuing = False
    heredoc: str | None = None  # a here-document's terminator: its lines belong to the command
    for offset, line in enumerate(body):
        if heredoc is not None:
            text.append(line)
            heredoc = None if line == heredoc else heredoc
        elif continuing:
            text.append(line)
            continuing = line.endswith("\\")
        elif line.startswith("$ "):
            if text:
                commands.append(Command("\n".join(text), tuple(expected), start))
            text, expected, start = [line[2:]], [], first_line + offset
            continuing = line.endswith("\\")
            opened = _HEREDOC.search(line)
            heredoc = opened.group(1) if opened else None
        elif text:
            expected.append(line.rstrip())
    if text:
        commands.append(Command("\n".join(text), tuple(expected), start))
    return tuple(commands)


def output_matches(expected: tuple[str, ...], actual: list[str]) -> bool:
    """Whether ``actual`` lines are ``expected``, where a ``...`` line stands for any lines."""
    if not expected:
        return True
    return _match(list(expected), [line.rstrip() for line in actual])


def _match(expected: list[str], actual: list[str]) -> bool:
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head == ANY_LINES:
        return any(_match(rest, actual[n:]) for n in range(len(actual) + 1))
    return bool(actual) and _line_matches(head, actual[0]) and _match(rest, actual[1:])


def _line_matches(expected: str, actual: str) -> bool:
    # "…" inside a line stands for any text (an id, a time) within it.
    if "…" not in expected:
        return expected == actual
    pattern = ".*".join(re.escape(part) for part in expected.split("…"))
    return re.fullmatch(pattern, actual) is not None
