"""What must hold of an MCP chaos run, judged from the MCP server's own record (``desk.effects``:
what it actually did, under which key, with which arguments; ``seen``: every request it got),
beside the account's tables, never from Lockgate's word about itself:

- once: each idempotency key acted at most once, and each business identity the config sets
  (``identity``) at most once; every write carried its key, and none was sent again once it had
  acted (no tool here is ``safe_to_retry``); every effect's key is one the ledger issued;
- approved: every effect of a tool that needs a person (risk ``approval``; ``act`` after a tainted
  read, which every run of the tickets task makes first) is exactly the arguments of a version a
  person approved (the edited one, if edited), by as many allowed reviewers as required, under that
  proposal's run, decided before the server acted;
- nothing lost: no ledger entry left open (``invariants.settled``); every write the ledger calls
  SUCCEEDED the server did, and none it calls FAILED (a reconciliation, or a person's answer, that
  disagrees with the server is a violation);
- a changed definition is never called: after the change, no ``tools/call`` of that tool arrived;
- a tool the config refuses is never called.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate.config.mcp import McpServerConfig
from lockgate_infra.chaos.invariants import Findings
from lockgate_infra.chaos.mcp_faults import Change
from lockgate_infra.chaos.world import World
from lockgate_infra.mcp_example import Effect, McpExample

SERVER = "tickets"


@dataclass(frozen=True)
class Approved:
    """One version of a proposal that enough allowed reviewers approved."""

    tool: str
    run_id: str
    args: Mapping[str, Any]
    digest: str
    approvers: frozenset[str]
    at: int  # the last counted approval
    version: int  # 0: as proposed; n: the nth edit


@dataclass
class McpFindings(Findings):
    """The end state of an MCP run, judged, and what it held."""

    counts: Counter[str] = field(default_factory=Counter)


def judge_mcp(world: World, server: McpExample, change: Change | None, skew: float = 0.0) -> McpFindings:
    """Every MCP invariant, against the server's record and the account's tables; ``skew``: how far
    the approval desk's clock may be ahead of the server's."""
    verdict = McpFindings()
    config: McpServerConfig = world.config.mcp[SERVER]
    writes = {name for name, tool in config.tools.items() if tool.risk in ("act", "approval")}
    ops = {
        item["idempotency_key"]["S"]: item
        for item in world.scan("StateTable")
        if item["pk"]["S"].startswith("op#") and item.get("tool", {}).get("S", "").startswith(f"{SERVER}__")
    }
    effects = list(server.desk.effects)
    once(verdict, server, effects, config, writes)
    approved_only(verdict, world, effects, ops, config, skew)
    agrees(verdict, server, ops, writes)
    unchanged(verdict, server, change)
    for effect in effects:
        verdict.counts[f"effect:{effect.tool}"] += 1
    for seen in server.calls():
        verdict.counts[f"call:{seen.tool}"] += 1
    return verdict


def once(
    verdict: Findings, server: McpExample, effects: list[Effect], config: McpServerConfig, writes: set[str]
) -> None:
    """(a) No double effect, by key and by business identity; every write keyed, none re-sent."""
    for key, count in Counter(e.key for e in effects).items():
        if key is None:
            verdict.fail(f"{count} effects made under no idempotency key")
        elif count > 1:
            verdict.fail(f"the server acted {count} times under one key {key}")
    for name, tool in config.tools.items():
        if not tool.identity:
            continue
        per = Counter(tuple(e.arguments.get(a) for a in tool.identity) for e in effects if e.tool == name)
        for identity, count in per.items():
            if count > 1:
                verdict.fail(f"{count} {name} effects for one business identity {identity}")
    for key, name in server.desk.replays:
        if not config.tools[name].safe_to_retry:
            verdict.fail(f"{name} sent again under {key} after the server had acted on it")
    refused = {name for name, tool in config.tools.items() if tool.risk == "refused"}
    for seen in server.calls():
        if seen.tool in writes and not seen.idempotency_key:
            verdict.fail(f"a {seen.tool} call arrived without its idempotency key")
        if seen.tool in refused:
            verdict.fail(f"{seen.tool}, which lockgate.toml refuses, was called")


def approved_only(  # noqa: PLR0913 - the run, and what it is judged against
    verdict: McpFindings,
    world: World,
    effects: list[Effect],
    ops: Mapping[str, Any],
    config: McpServerConfig,
    skew: float = 0.0,
) -> None:
    """(b) Every effect needing a person is exactly a version a person approved, before it happened."""
    # Every run of the tickets task reads the ticket first (untrusted content): its act tools then
    # need a person too (needs_person_when_tainted), not only its approval tools.
    needs = {
        n
        for n, t in config.tools.items()
        if t.risk == "approval" or (t.risk == "act" and t.needs_person_when_tainted)
    }
    approved = approved_versions(world)
    for effect in effects:
        op = ops.get(effect.key or "")
        if op is None:
            verdict.fail(f"{effect.tool} effect {effect.id} under a key no ledger entry holds ({effect.key})")
            continue
        if effect.tool not in needs:
            continue
        tool, run_id, digest = f"{SERVER}__{effect.tool}", op["run_id"]["S"], op["fingerprint"]["S"]
        matches = [
            a
            for a in approved
            if (a.tool, a.run_id, a.digest) == (tool, run_id, digest)
            and dict(a.args) == dict(effect.arguments)
            and a.at <= effect.at + skew
        ]
        if not matches:
            verdict.fail(
                f"{effect.tool} effect {effect.id} {dict(effect.arguments)} matches no version a person "
                f"approved for run {run_id}"
            )
        else:
            verdict.counts["effects approved"] += 1
            verdict.counts["effects of an edit"] += any(a.version > 0 for a in matches)


def approved_versions(world: World) -> list[Approved]:
    """Each version of each proposal that enough reviewers allowed for its tool approved."""
    approvals = world.config.approvals
    decisions = world.scan("DecisionsTable")
    found = []
    for proposal in world.scan("ApprovalsTable"):
        approval_id, tool = proposal["approval_id"]["S"], proposal["tool"]["S"]
        rule = approvals.for_tool(tool)
        allowed = {r.id for r in approvals.reviewers if not rule.roles or set(r.roles) & set(rule.roles)}
        required = max(rule.reviewers_required, int(proposal.get("reviewers_required", {}).get("N", "1")))
        versions = {0: (json.loads(proposal["args"]["S"]), proposal["digest"]["S"])}
        mine = [d for d in decisions if d["approval_id"]["S"] == approval_id]
        for item in mine:
            if item.get("kind", {}).get("S") == "version":
                versions[int(item["version"]["N"])] = (json.loads(item["args"]["S"]), item["digest"]["S"])
        for n, (args, digest) in versions.items():
            approving = [
                d
                for d in mine
                if d.get("verdict", {}).get("S") == "approve"
                and int(d.get("version", {}).get("N", "0")) == n
                and d["digest"]["S"] == digest
                and d["by"]["S"] in allowed
            ]
            approvers = frozenset(d["by"]["S"] for d in approving)
            if len(approvers) >= required:
                at = max(int(d["decided_at"]["N"]) for d in approving)
                found.append(Approved(tool, proposal["run_id"]["S"], args, digest, approvers, at, n))
    return found


def agrees(verdict: McpFindings, server: McpExample, ops: Mapping[str, Any], writes: set[str]) -> None:
    """(c) Every write the ledger settled, it settled as the server's record has it."""
    for key, op in ops.items():
        tool, state = op["tool"]["S"].removeprefix(f"{SERVER}__"), op["state"]["S"]
        if tool not in writes:
            continue
        acted = server.desk.acted(key)
        result = json.loads(op["result"]["S"]) if "result" in op else None
        error = op.get("error", {}).get("S", "")
        if state == "SUCCEEDED" and not acted:
            verdict.fail(
                f"the ledger says {tool} under {key} SUCCEEDED ({str(result)[:120]}); the server never did it"
            )
        if state == "FAILED" and acted:
            verdict.fail(f"the ledger says {tool} under {key} FAILED ({error[:120]}); the server did it")
        verdict.counts[f"ledger {state}"] += 1
        if "could not be reached" in error:
            verdict.counts["not sent: server down"] += 1
        elif "changed it since it was reviewed" in error:
            verdict.counts["not sent: definition changed"] += 1
        if isinstance(result, dict) and result.get("source") == f"mcp:{SERVER}/find_effect":
            verdict.counts["unknown settled by find_effect"] += 1
        elif isinstance(result, dict) and "confirmed_by" in result:
            verdict.counts["unknown settled by a person: happened"] += 1
        elif state == "FAILED" and error.startswith("a person confirmed it did not happen"):
            verdict.counts["unknown settled by a person: did not"] += 1


def unchanged(verdict: Findings, server: McpExample, change: Change | None) -> None:
    """(d) No call of a tool after its definition changed (each was refused before anything was sent)."""
    if change is None:
        return
    after = [
        s for s in server.seen[change.seen_before :] if s.method == "tools/call" and s.tool == change.tool
    ]
    if after:
        verdict.fail(f"{change.tool} was called {len(after)} times after its definition changed")
