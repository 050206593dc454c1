"""Tools the model may call: a pydantic argument model, a risk level, and code-built guard rails."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ValidationError

from lockgate.actions.editable import editable_fields
from lockgate.actions.facts import Fact, RunFacts
from lockgate.config.rules import ApprovalRule
from lockgate.errors import ConfigError


class Risk(StrEnum):
    """How much harm a call can do; it decides whether a call goes through the ledger and a person."""

    READ = "read"
    """Looks things up, with no side effect: runs directly, never through the ledger or a person."""

    ACT = "act"
    """A side effect, run once through the ledger; it needs a person if taint, a policy or a threshold say."""

    APPROVAL = "act-with-approval"
    """A side effect that always needs a person's approval before it runs (once)."""


@dataclass(frozen=True)
class Verdict:
    """A policy's answer: allowed; refused, with a reason the model can act on; or "a person must approve".

    Build one with ``Verdict.allow()``, ``Verdict.deny(reason)`` or ``Verdict.ask(reason)``.
    """

    allowed: bool
    """False refuses the call: the model gets ``reason`` as an error result, and a refusal wins over asks."""

    reason: str = ""
    """Why it was refused or why a person is asked: the model reads a refusal, a reviewer an ask."""

    needs_person: bool = False
    """Allowed only with a person's approval: the guard turns the call into a proposal with ``reason``."""

    when_tainted: bool = False
    """With ``needs_person``: ask only in a run that read untrusted content; otherwise simply allowed."""

    @classmethod
    def allow(cls) -> Verdict:
        """Allowed."""
        return cls(True)

    @classmethod
    def deny(cls, reason: str) -> Verdict:
        """Refused, with why (the model reads it and may try something else)."""
        return cls(False, reason)

    @classmethod
    def ask(cls, reason: str, *, when_tainted: bool = False) -> Verdict:
        """A person must approve (when_tainted: only if the run read untrusted content), with why."""
        return cls(True, reason, needs_person=True, when_tainted=when_tainted)


Policy = Callable[[Any, RunFacts], Verdict]
"""A hard policy rule (``Tool.policies``): a pure predicate ``(validated arguments, facts) -> Verdict``."""


@dataclass(frozen=True)
class ToolContext:
    """What a tool's implementation receives besides its arguments: ``run(args, ctx)``."""

    run_id: str
    """The run calling the tool (``run#<source>#<delivery id>``)."""

    facts: RunFacts
    """The run's facts (for an approved call, rebuilt from those stored with the proposal)."""

    idempotency_key: str | None
    """The ledger's key for this call: pass it on as the provider's idempotency key; None for reads."""

    services: Mapping[str, Any]
    """The task's ``services``: the workflow's injected clients and adapters."""


@dataclass(frozen=True)
class Tool[Args: BaseModel]:
    """One tool the model may call: its arguments, its risk, and the code-built guard rails around it.

    ``run`` returns JSON-able data; raising ``ToolError`` returns an ``is_error`` result the model
    can act on. Every call is checked in order: allowed for the task, ``args``' schema,
    ``policies``, taint, ``approval_threshold``; then the ledger runs a side effect once.
    """

    name: str
    """What the model calls it, and its name in approval rules (``[approvals.tools.NAME]``) and the ledger."""

    description: str
    """When to use it: the model reads this to choose among the task's tools."""

    args: type[Args]
    """The pydantic model of its arguments: the model sees its JSON schema; its calls are validated by it."""

    run: Callable[[Args, ToolContext], Any]
    """The implementation, ``(args, ctx) -> JSON-able result``; raise ``ToolError`` to refuse or fail."""

    summary: Callable[[Args], str]
    """One line built by code from the real arguments (e.g. "refund $25.00 on order A-1042"), for people."""

    risk: Risk = Risk.READ
    """What a call can do (``Risk``); the default, ``READ``, runs directly with no ledger and no person."""

    policies: tuple[Policy, ...] = ()
    """Hard rules over the arguments and the run's facts, checked on every call; the first refusal wins."""

    untrusted_result: bool = False
    """Its result is third-party content (an email, a web page): after reading it the run is tainted."""

    needs_person_when_tainted: bool = True
    """For ``ACT`` tools in a run that read untrusted content: True (the default) asks a person; set False
    only when ``policies`` already pin down every harmful argument."""

    approval_threshold: Callable[[Args, RunFacts], str | None] | None = None
    """``(args, facts)`` -> why a person must approve these arguments (e.g. over $50), or None if none must.

    None (the default): no threshold.
    """

    identity: Callable[[Args], str] | None = None
    """The side effect's business identity, the ledger's key (e.g. "refund#A-1042#25.00"): one side effect
    per tool and identity, ever; None: the key is the run, the tool and the canonical arguments."""

    identity_per_run: bool = False
    """The ``identity`` is unique within one run only (e.g. one reply per recipient per run): a model asked
    again after a crash may word the call differently, and must not make a second one. A run that a
    person's decision resumes (``Task.respond``) starts afresh after each decision: one more there."""

    target: Callable[[Args], str] | None = None
    """What a call acts on (e.g. the order id): at most one proposal per task, tool and target waits for a
    person, and a further one is refused with the pending one's summary; None: no such limit."""

    high_stakes: bool = False
    """Its proposals always need at least two distinct reviewers, whatever its approval rules say."""

    approval_rules: Callable[[Args, RunFacts], ApprovalRule | Iterable[ApprovalRule] | None] | None = None
    """``(args, facts)`` -> the ``ApprovalRule``s that apply to this call, for what thresholds in
    ``lockgate.toml`` cannot say (e.g. a refund to a customer of less than a month). Applied after the
    file's rules; like them they only ask for more (reviewers, narrower roles, or ``refuse=True``), and
    an edited version is judged again. None (the default): only the file's rules."""

    reversible: bool = False
    """It can be undone, so a ``pattern = "veto"`` approval rule may run it after a veto window
    instead of waiting for approval; False: it always waits."""

    taint_label: Callable[[Args, Any], str] | None = None
    """For ``untrusted_result`` tools: ``(args, result)`` -> how a person should read "this run read …"
    (e.g. "an email from x@y"); None: "untrusted content" with the tool's name and summary."""

    reconcile: Callable[[str, Mapping[str, Any]], Any] | None = None
    """For side-effect tools: ``(idempotency key, services)`` -> what the call with this key did downstream.

    The reconcile-operations job asks when the ledger says UNKNOWN. Return the call's result if it
    happened (the entry becomes SUCCEEDED, never run again), None if no trace of it was found; raise
    ``OutcomeUnknown`` if it cannot tell. Not found, cannot tell, or no hook (None, the default): a
    person is asked whether it happened. Any other exception (the downstream could not be asked):
    the entry stays UNKNOWN and the job asks again on its next run.
    """

    facts: Callable[[Args, RunFacts], Sequence[Fact]] | None = None
    """``(args, facts)`` -> the facts a person's decision rests on, read from our own systems when the
    proposal is made (e.g. the order's status and total) and stored on it; None: none shown."""

    summary_with_facts: Callable[[Args, RunFacts], str] | None = None
    """The one-line summary with what the arguments lack (e.g. the order's currency), for proposals;
    None: ``summary``."""

    after_approve: str = ""
    """What follows an approval besides running it (e.g. "the customer is emailed"), for the reviewer."""

    after_reject: str = ""
    """What follows a rejection besides not running it (e.g. "the customer is told"), for the reviewer."""

    editable: tuple[str, ...] = ()
    """Argument fields a reviewer may change before approving (e.g. ``("amount",)``): strings, numbers,
    integers or booleans. An edit is a new version of the proposal, checked against the field's schema
    when made and against ``args`` and ``policies`` again before it runs; () (the default): none."""

    definition: str = ""
    """A fingerprint of a definition reviewed outside this code (an MCP tool's pin): a proposal made
    under another one is not run, as for a changed ``args`` schema; "" (the default): none."""

    def __post_init__(self) -> None:
        if self.editable:
            try:
                editable_fields(self.args.model_json_schema(), self.editable)
            except ValueError as exc:
                raise ConfigError(f"tool {self.name}: {exc} (Tool.editable)") from exc

    def editable_schema(self) -> dict[str, Any]:
        """``{field: JSON schema}`` of the fields a reviewer may change (empty: none)."""
        return editable_fields(self.args.model_json_schema(), self.editable) if self.editable else {}

    def ledger_identity(self, args: Args, run_id: str) -> str | None:
        """The identity the ledger keys this call by, or None (run + tool + canonical arguments)."""
        if self.identity is None:
            return None
        identity = self.identity(args)
        return f"{run_id}#{identity}" if self.identity_per_run else identity

    def schema(self) -> dict[str, Any]:
        """The tool definition the Messages API expects."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.args.model_json_schema(),
        }

    def args_fingerprint(self) -> str:
        """A fingerprint of the argument schema (and ``definition``): a proposal made under another
        one is not run."""
        schema = self.args.model_json_schema()
        return fingerprint({"schema": schema, "definition": self.definition} if self.definition else schema)

    def validate(self, raw: Any) -> Args:
        """The model's arguments as the pydantic model; ToolArgumentsInvalid explains what is wrong."""
        try:
            return self.args.model_validate(raw)
        except ValidationError as exc:
            raise ToolArgumentsInvalid(describe_validation_error(exc)) from exc

    @property
    def has_side_effect(self) -> bool:
        """Whether calls go through the operation ledger."""
        return self.risk is not Risk.READ


class ToolError(Exception):
    """A tool's own refusal or failure, returned to the model as an is_error result it can act on."""


class ToolArgumentsInvalid(ToolError):
    """The model's arguments did not match the tool's schema."""


class OutcomeUnknown(Exception):  # noqa: N818 - names the state, like the ledger's UNKNOWN
    """The side effect may or may not have happened (e.g. a timeout after sending)."""


def describe_validation_error(exc: ValidationError) -> str:
    """Short field-level messages, e.g. "order_id: Order numbers look like A-1042"."""
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error.get("loc", ())) or "arguments"
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    return "; ".join(parts)


def canonical_json(value: Any) -> str:
    """Deterministic JSON for fingerprints and ledger keys."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def fingerprint(value: Any) -> str:
    """SHA-256 of the canonical JSON."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()
