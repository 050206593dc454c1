"""Tools the model may call: a pydantic argument model, a risk level, and code-built guard rails."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ValidationError


class Risk(StrEnum):
    """How much harm a call can do."""

    READ = "read"  # looks things up; no side effect
    ACT = "act"  # a side effect, allowed within hard policy rules
    APPROVAL = "act-with-approval"  # a side effect that always needs a person


@dataclass(frozen=True)
class Verdict:
    """A policy's answer: allowed; refused, with a reason the model can act on; or "a person must approve"."""

    allowed: bool
    reason: str = ""
    # Allowed only with a person's approval: the guard turns the call into a proposal with ``reason``.
    needs_person: bool = False
    # ...and only in a run that read untrusted content; otherwise simply allowed.
    when_tainted: bool = False

    @classmethod
    def allow(cls) -> Verdict:
        """Allowed."""
        return cls(True)

    @classmethod
    def deny(cls, reason: str) -> Verdict:
        """Refused, with why."""
        return cls(False, reason)

    @classmethod
    def ask(cls, reason: str, *, when_tainted: bool = False) -> Verdict:
        """A person must approve (when_tainted: only if the run read untrusted content), with why."""
        return cls(True, reason, needs_person=True, when_tainted=when_tainted)


@dataclass(frozen=True)
class RunFacts:
    """Facts from our own systems about this run, never from the model or the content it read.

    ``values`` is task-defined, e.g. {"customer_email": the verified sender of the email}.
    ``lookup`` reads current facts (orders, payments) through the workflow's own adapters.
    """

    values: Mapping[str, Any] = field(default_factory=dict)
    lookup: Any = None
    # The run's untrusted source identity (e.g. the email's From): proposals are capped per sender.
    sender: str | None = None
    # (tool, target) -> the arguments of the proposal waiting for a person on that target, or None;
    # set by the loop when approvals are wired, so a policy can count what is already pending.
    pending: Callable[[str, str], Mapping[str, Any] | None] | None = None

    def get(self, key: str, default: Any = None) -> Any:
        """A fact by name."""
        return self.values.get(key, default)


@dataclass(frozen=True)
class Fact:
    """One fact a reviewer's decision rests on, captured when the proposal is made.

    ``verified``: read from our own systems; False for what someone wrote (a customer's message).
    """

    label: str
    value: str
    verified: bool = True


# A hard policy rule: a pure predicate over the validated arguments and the run's facts.
Policy = Callable[[Any, RunFacts], Verdict]


@dataclass(frozen=True)
class ToolContext:
    """What a tool's implementation receives besides its arguments."""

    run_id: str
    facts: RunFacts
    idempotency_key: str | None  # pass downstream as the provider's idempotency key
    services: Mapping[str, Any]  # the workflow's injected clients/adapters


@dataclass(frozen=True)
class Tool[Args: BaseModel]:
    """One tool. ``run`` returns JSON-able data; raising ToolError returns an is_error result."""

    name: str
    description: str  # when to use it: the model reads this
    args: type[Args]
    run: Callable[[Args, ToolContext], Any]
    summary: Callable[[Args], str]  # one line, built by code from the real arguments
    risk: Risk = Risk.READ
    policies: tuple[Policy, ...] = ()
    untrusted_result: bool = False  # its result is third-party content (email, web page)
    # For ACT tools: after the run read untrusted content, does this tool need a person?
    # Only set False when hard policies already pin down every harmful argument.
    needs_person_when_tainted: bool = True
    # Returns why a person must approve these arguments (e.g. over a threshold), or None.
    approval_threshold: Callable[[Args, RunFacts], str | None] | None = None
    # The business identity of the side effect for the ledger (e.g. "refund#A-1042#25.00").
    identity: Callable[[Args], str] | None = None
    # The identity is unique within one run only (e.g. "one reply per recipient per run"): a model
    # asked again after a crash may word the call differently, and must not make a second one.
    identity_per_run: bool = False
    # What a call acts on (e.g. the order id): at most one proposal per (task, tool, target) waits
    # for a person; a further one is refused with the pending one's summary. None: no such limit.
    target: Callable[[Args], str] | None = None
    high_stakes: bool = False  # needs two distinct reviewers (approvals)
    reversible: bool = False  # may run after a veto window instead of waiting for approval
    # For untrusted_result tools: how a person should read "this run read …" (e.g. "an email from x@y").
    taint_label: Callable[[Args, Any], str] | None = None
    # For side-effect tools: what a call with this idempotency key did downstream (the
    # reconcile-operations job asks when the ledger says UNKNOWN). Returns the call's result if it
    # happened, None if no trace of it was found; raises OutcomeUnknown if it cannot tell.
    reconcile: Callable[[str, Mapping[str, Any]], Any] | None = None
    # For a person deciding: the facts the decision rests on, read from our own systems when the
    # proposal is made (e.g. the order's status and total) and stored on it.
    facts: Callable[[Args, RunFacts], Sequence[Fact]] | None = None
    # The one-line summary with what the arguments lack (e.g. the order's currency); else ``summary``.
    summary_with_facts: Callable[[Args, RunFacts], str] | None = None
    # What follows a person's decision besides running it or not (e.g. "the customer is emailed").
    after_approve: str = ""
    after_reject: str = ""

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
        """A fingerprint of the argument schema: a proposal made under another one is not run."""
        return fingerprint(self.args.model_json_schema())

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
