"""Asking the worker about an edited version before it is recorded: would it run, and what does it need?

The approval side has no tools: it cannot validate a call with the tool's own model, run its hard
policies against current facts, build its summary or evaluate its Python approval rules. The worker
can (``lockgate.approvals.version_checks``), and answers one synchronous invocation with a
``VersionCheck``. It reads the proposal itself (the caller names only its id and the arguments),
changes nothing, and can only refuse or ask for more: the approval side still applies the
``lockgate.toml`` rules it reads itself, and the worker checks everything again before running.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.config.rules import Requirement
from lockgate.telemetry import Log

CHECK_EVENT = "check-version"  # the worker tells this invocation from an SQS batch by {"lockgate": ...}
MAX_ANSWER_BYTES = 64 * 1024


class CheckUnavailable(Exception):  # noqa: N818 - a state the caller reports, like StoreUnavailable
    """The worker could not be asked (or its answer could not be read): nothing may be recorded."""


@dataclass(frozen=True)
class VersionCheck:
    """The worker's answer about one version: refused (and why), or its summary, requirement and key."""

    refusal: str = ""  # not empty: the worker would not run this version, and why
    summary: str = ""  # the tool's own one line for this version (what a reviewer reads)
    requirement: Requirement | None = None  # who must approve it, by which rules (hooks included)
    op_key: str = ""  # the ledger key it would run under, so a screen can say what became of it

    def to_json(self) -> dict[str, Any]:
        """The invocation's answer."""
        return {
            "refusal": self.refusal,
            "summary": self.summary,
            "requirement": self.requirement.to_json() if self.requirement else None,
            "op_key": self.op_key,
        }

    @classmethod
    def from_json(cls, data: Any) -> VersionCheck:
        """From ``to_json``'s output; CheckUnavailable for anything else."""
        if not isinstance(data, dict) or not isinstance(data.get("refusal"), str):
            raise CheckUnavailable("the worker's answer is not a version check")
        requirement = Requirement.from_json(data.get("requirement"))
        if not data["refusal"] and requirement is None:
            raise CheckUnavailable("the worker's answer has no requirement")
        return cls(
            refusal=data["refusal"][:1000],
            summary=str(data.get("summary", ""))[:500],
            requirement=requirement,
            op_key=str(data.get("op_key", ""))[:1024],
        )


class CheckVersion(Protocol):
    """Checks one version of a proposal as the worker would run it."""

    def check(self, approval_id: str, args: Mapping[str, Any]) -> VersionCheck:
        """The worker's answer; CheckUnavailable when it cannot be had."""
        ...


def check_request(approval_id: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """The invocation's payload."""
    return {"lockgate": CHECK_EVENT, "approval_id": approval_id, "args": dict(args)}


class WorkerVersionChecks:
    """``CheckVersion`` over Lambda: one RequestResponse invocation of the agent worker's alias."""

    def __init__(self, lambda_client: Any, function: str, log: Log) -> None:
        self._lambda = lambda_client  # a client whose read timeout allows a worker's cold start
        self._function = function
        self._log = log

    def check(self, approval_id: str, args: Mapping[str, Any]) -> VersionCheck:
        """Invoke the worker; its answer, or CheckUnavailable (logged with why, never the arguments)."""
        payload = json.dumps(check_request(approval_id, args)).encode()
        try:
            response = self._lambda.invoke(
                FunctionName=self._function, InvocationType="RequestResponse", Payload=payload
            )
            body = response["Payload"].read(MAX_ANSWER_BYTES + 1)
        except (ClientError, BotoCoreError) as exc:
            return self._unavailable(approval_id, type(exc).__name__)
        if response.get("FunctionError"):
            return self._unavailable(approval_id, f"the worker failed ({response['FunctionError']})")
        if len(body) > MAX_ANSWER_BYTES:
            return self._unavailable(approval_id, "the worker's answer is too large")
        try:
            return VersionCheck.from_json(json.loads(body))
        except (ValueError, CheckUnavailable) as exc:
            return self._unavailable(approval_id, str(exc)[:200])

    def _unavailable(self, approval_id: str, why: str) -> VersionCheck:
        self._log.warning("edit not checked", extra={"approval": approval_id[:40], "why": why})
        raise CheckUnavailable(why)
