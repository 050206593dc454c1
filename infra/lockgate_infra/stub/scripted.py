"""Scripted models for your own tasks: rules that answer a conversation with calls to *your* tools.

A ``ScriptedModel`` stands in for Claude offline (``lockgate local --model pkg.module:factory``,
``lockgate eval --model pkg.module:factory``, the test kit). On each request it looks at what the
task said and what the tools answered, and

1. calls every tool whose rule matches now and which it has not called with those arguments yet
   (several at once, as Claude calls tools in parallel), or
2. when no rule has a call left to make, finishes with its ``finish`` text.

Patterns are regular expressions; their named groups (``(?P<number>\\d+)``) fill ``{number}`` in
later arguments and in the finish text. A rule matches the task's prompt by default, or one
tool's latest result (``after="read_issue"``). A structured-output request (a task's ``Intake``)
gets ``extract``, filled from what every rule's pattern captures in its prompt, which holds the
text to read (a field whose capture is missing is null). Content screens (a task's ``screen_model``) get
CLEAN or INJECTION from the same rules as the demo model. A request that offers none of the
script's tools is not the task it was written for: it says so, in its reply and in a warning log
(as the demo and gullible models do).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate_infra.stub.conversation import (
    JSON,
    calls,
    find_call,
    first_user_text,
    offered_tools,
    properties,
    text,
    tool_use,
)
from lockgate_infra.stub.extraction import is_extraction
from lockgate_infra.stub.replies import Reply, not_written_for
from lockgate_infra.stub.screening import is_screen, screen_reply

_FIELD = re.compile(r"\{(\w+)\}")


class ScriptError(ValueError):
    """A script refers to a capture no pattern defines, or a pattern does not compile."""


@dataclass(frozen=True)
class Call:
    """One tool call a rule makes: the tool's name and its arguments (``{name}`` filled from captures).

    Give several to ``when(...).calls(Call("a", {...}), Call("b", {...}))`` to call them in one turn.
    """

    tool: str
    """The tool's name, as your ``Tool(name=...)`` says it."""

    arguments: Mapping[str, Any] = field(default_factory=dict)
    """The call's arguments; a string may hold ``{name}``, filled from what the patterns captured."""

    def filled(self, captures: Mapping[str, str]) -> JSON | None:
        """The arguments with captures filled in; None while a capture they need is still unknown."""
        try:
            return {name: _fill(value, captures) for name, value in self.arguments.items()}
        except KeyError:
            return None


@dataclass(frozen=True)
class Rule:
    """When ``pattern`` matches (the prompt, or ``after``'s latest result), make ``calls``.

    Build one with ``when(pattern).call(tool, **arguments)`` or ``when(pattern).calls(*calls)``.
    """

    pattern: str
    """A regular expression (``re.search``); its named groups fill ``{name}`` in later arguments."""

    calls: tuple[Call, ...]
    """The calls to make once it matches, together in one turn, each once per set of arguments."""

    after: str | None = None
    """Match this tool's latest result instead of the task's prompt; None: the prompt."""

    def matches(self, prompt: str, results: Mapping[str, str]) -> re.Match[str] | None:
        """The match against what this rule reads, or None (also while ``after`` has not answered)."""
        subject = prompt if self.after is None else results.get(self.after)
        return None if subject is None else re.search(self.pattern, subject)


class When:
    """What ``when(pattern, after=...)`` returns: a rule begun; ``.call`` or ``.calls`` completes it."""

    def __init__(self, pattern: str, after: str | None = None) -> None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ScriptError(f"pattern {pattern!r} does not compile: {exc}") from exc
        self._pattern = pattern
        self._after = after

    def call(self, tool: str, /, **arguments: Any) -> Rule:
        """The rule: call ``tool`` with ``arguments`` once this pattern matches."""
        return Rule(self._pattern, (Call(tool, arguments),), self._after)

    def calls(self, *calls: Call) -> Rule:
        """The rule: make all of ``calls`` together (one parallel turn) once this pattern matches."""
        return Rule(self._pattern, tuple(calls), self._after)


def call(tool: str, /, **arguments: Any) -> Call:
    """One call for ``when(...).calls(...)``: ``call("add_label", issue="{issue}", label="bug")``."""
    return Call(tool, arguments)


def when(pattern: str, *, after: str | None = None) -> When:
    """Start a rule that matches ``pattern`` against the task's prompt, or ``after``'s latest result."""
    return When(pattern, after)


class ScriptedModel:
    """A model that answers by ``rules`` for the task ``task`` and finishes with ``finish``.

    ``task`` is your task's name (a warning names it when the model is asked to run another);
    ``rules`` are ``when(...)`` rules, at least one; ``finish`` is the final text once no rule has a
    call left to make (``{name}`` filled from captures); ``extract`` is the JSON to answer a task's
    ``Intake`` with (``{name}`` filled, a missing capture is null). A ``{name}`` that no pattern
    captures raises ``ScriptError`` here, not mid-run.

    What the patterns read, exactly as the model receives it:

    - the prompt: the text of the task's first user message (what ``start`` put in ``Start.prompt``);
    - ``after="tool"``: that tool's latest result. A result is the tool's return value as JSON with
      sorted keys, ``", "`` and ``": "`` between items, non-ASCII as is: ``{"item_id": "A-1",
      "notes": [], "status": "open"}`` (so ``'"status": "(?P<status>[a-z]+)"'`` captures ``open``).
      A result that is an error is its text instead: a ``ToolError``'s message, a refusal, or
      ``NOT DONE: <tool> needs a person's approval (...)`` for a call that now waits for a person.

    How a turn is made: the rules are tried in order, against the conversation as it is now, on
    every request. The named groups of every rule that matches combine into one set of captures for
    the turn (a later rule's group of the same name wins), so one rule may call with what another
    captured: ``{item}`` from the prompt's rule fills a call of a rule matching a tool's result.
    A call is made once its captures are all known, and only once per tool and arguments in the
    conversation; the calls of every matching rule go out together, as one parallel turn.

    Call it with a Messages API request (what the local stub server does); it returns the reply.
    """

    def __init__(
        self, task: str, *rules: Rule, finish: str = "Done.", extract: Mapping[str, Any] | None = None
    ) -> None:
        if not rules:
            raise ScriptError(f"the scripted model for {task!r} has no rules: give it at least one when(...)")
        defined = {name for rule in rules for name in re.compile(rule.pattern).groupindex}
        used = {name for rule in rules for c in rule.calls for name in _fields(c.arguments)}
        used |= set(_FIELD.findall(finish)) | _fields(extract or {})
        if used - defined:
            raise ScriptError(
                f"the scripted model for {task!r} uses {{{sorted(used - defined)[0]}}}, which no pattern "
                "captures: name a group in a pattern, e.g. (?P<number>\\d+)"
            )
        self.task = task
        """The name of the task it was written for."""
        self.rules = rules
        """Its rules, in the order they are tried."""
        self.finish = finish
        """The final text, once no rule has a call left to make."""
        self.extract = extract
        """The JSON it answers an intake's extraction with, or None (an intake is then a ``ScriptError``)."""
        self.tools = tuple(dict.fromkeys(c.tool for rule in rules for c in rule.calls))
        """The tools its rules call: a request that offers none of them is not its task."""
        self._lock = threading.Lock()
        self.calls_seen = 0
        """How many requests it has answered (screens and extractions included)."""

    def __call__(self, request: JSON) -> Reply:
        with self._lock:
            self.calls_seen += 1
        if is_screen(request):
            return screen_reply(request)
        if is_extraction(request):
            return self._extraction(request)
        offered = offered_tools(request)
        if not set(self.tools) & set(offered):
            return not_written_for(
                f"scripted model for {self.task!r}", f"the tools {', '.join(self.tools)}", sorted(offered)
            )
        wanted, captures = self._next_calls(request, offered)
        if wanted:
            content = [tool_use(request, n, name, arguments) for n, (name, arguments) in enumerate(wanted)]
            return Reply(content, "tool_use")
        return Reply([text(_fill(self.finish, captures, strict=False))], "end_turn")

    def _extraction(self, request: JSON) -> Reply:
        if self.extract is None:
            raise ScriptError(
                f"the scripted model for {self.task!r} was asked for structured output (the task's intake) "
                "and has no extract=: give ScriptedModel(..., extract={...}) the JSON to answer"
            )
        prompt = first_user_text(request)
        captures: dict[str, str] = {}
        for rule in self.rules:  # the text to read is in the prompt: every pattern looks there
            found = re.search(rule.pattern, prompt)
            if found is not None:
                captures.update({k: v for k, v in found.groupdict().items() if v is not None})
        return Reply([text(json.dumps(_filled_or_null(self.extract, captures)))], "end_turn")

    def _next_calls(
        self, request: JSON, offered: Mapping[str, JSON]
    ) -> tuple[list[tuple[str, JSON]], dict[str, str]]:
        """The calls every matching rule still has to make, and everything the patterns captured."""
        prompt = first_user_text(request)
        results = {c.name: c.result for c in calls(request) if c.result is not None}
        captures: dict[str, str] = {}
        wanted: list[tuple[str, JSON]] = []
        for rule in self.rules:
            found = rule.matches(prompt, results)
            if found is None:
                continue
            captures.update({k: v for k, v in found.groupdict().items() if v is not None})
            for planned in rule.calls:
                arguments = planned.filled(captures)
                if arguments is None or planned.tool not in offered:
                    continue
                arguments = _typed(arguments, offered[planned.tool])
                made = find_call(request, planned.tool, arguments) is not None
                if not made and (planned.tool, arguments) not in wanted:
                    wanted.append((planned.tool, arguments))
        return wanted, captures


def _typed(arguments: JSON, tool: JSON) -> JSON:
    """Captured text as the tool's schema types it: ``"12"`` for an integer argument is 12."""
    typed = dict(arguments)
    for name, spec in properties(tool).items():
        value, kind = typed.get(name), spec.get("type")
        if not isinstance(value, str):
            continue
        if kind == "integer" and re.fullmatch(r"-?\d+", value):
            typed[name] = int(value)
        elif kind == "number" and re.fullmatch(r"-?\d+(\.\d+)?", value):
            typed[name] = float(value) if "." in value else int(value)
        elif kind == "boolean" and value in ("true", "false"):
            typed[name] = value == "true"
    return typed


def _filled_or_null(value: Any, captures: Mapping[str, str]) -> Any:
    """``extract`` filled in: a whole ``"{name}"`` whose capture is missing is null, not the braces."""
    if isinstance(value, str):
        whole = _FIELD.fullmatch(value)
        if whole is not None and whole.group(1) not in captures:
            return None
        return _fill(value, captures, strict=False)
    if isinstance(value, Mapping):
        return {k: _filled_or_null(v, captures) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_filled_or_null(v, captures) for v in value]
    return value


def _fields(arguments: Mapping[str, Any]) -> set[str]:
    found: set[str] = set()
    for value in arguments.values():
        if isinstance(value, str):
            found |= set(_FIELD.findall(value))
        elif isinstance(value, Mapping):
            found |= _fields(value)
        elif isinstance(value, list | tuple):
            found |= _fields({str(n): v for n, v in enumerate(value)})
    return found


def _fill(value: Any, captures: Mapping[str, str], *, strict: bool = True) -> Any:
    """``value`` with ``{name}`` replaced by what the patterns captured."""
    if isinstance(value, str):
        return _FIELD.sub(
            lambda m: captures[m.group(1)] if strict else captures.get(m.group(1), m.group(0)), value
        )
    if isinstance(value, Mapping):
        return {k: _fill(v, captures, strict=strict) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_fill(v, captures, strict=strict) for v in value]
    return value
