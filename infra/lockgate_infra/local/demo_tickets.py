"""The demo's tickets act: a ticket opened at the example ticketing service, worked on through its MCP
server's tools under Lockgate's guard; a person approves what the run proposed; each runs once there.

The service is the tickets workflow's own stand-in (``local_stand_ins``: the example MCP server,
``lockgate_infra.mcp_example``), started with the stack; what it did is read from it, not from
Lockgate's records, so the summary shows the effect itself: one per approved call, by its key.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TextIO

from lockgate_infra.local.approval_walk import decide, pending_proposals
from lockgate_infra.local.stack import LocalStack

if TYPE_CHECKING:
    from lockgate_infra.local.demo_approval import SentLinks

SERVER = "TICKETS_MCP_URL"  # the variable lockgate.toml's [mcp.servers.tickets] url names
RUN = "tickets#tkt-1"
TOOLS = ("tickets__add_comment", "tickets__issue_credit")  # what the run proposes for T-1
OPENED = json.dumps({"type": "ticket.opened", "data": {"ticket_id": "T-1"}}).encode()


def server(stack: LocalStack) -> Any:
    """The example MCP server playing the ticketing service for ``stack``."""
    return stack.stand_ins[SERVER]


def show_waiting(stack: LocalStack, out: TextIO) -> bool:
    """After the run: the server changed nothing yet; True if so."""
    effects = list(server(stack).desk.effects)
    print(
        f"Ticket changes made: {len(effects)} (the credit and the comment on T-1 wait for a person)", file=out
    )
    return not effects


def approve_tickets(stack: LocalStack, sent: SentLinks, out: TextIO) -> bool:
    """alice approves each call the tickets run proposed, through the link she was sent."""
    waiting = sorted(
        (p for p in pending_proposals(stack) if p.tool in TOOLS), key=lambda p: sent.order(p.summary)
    )
    ok = sorted(p.tool for p in waiting) == sorted(TOOLS)
    for proposal in waiting:
        print(f"  {proposal.summary} (why: {'; '.join(proposal.why)})", file=out)
        link = sent.of("alice", proposal.summary)
        steps = decide(link, "approve") if link is not None else []
        said = "no link was sent to her"
        if len(steps) == 2:
            said = f"opens it ({steps[0].status}), clicks Approve ({steps[1].status} {steps[1].title})"
        print(f"  alice's link: {said}", file=out)
        ok &= [step.status for step in steps] == [200, 200]
        stack.drain(timeout=30)  # each runs before the next is decided: the same order every time
    return ok


def show_effects(stack: LocalStack, out: TextIO) -> bool:
    """What the MCP server did, from its own record: each effect by tool and key; True if each approved
    call acted exactly once."""
    played = server(stack)
    calls = [seen.tool for seen in played.calls()]
    print(f"\nWhat the MCP server did (the example ticketing service, {played.url})", file=out)
    counted = "  ".join(f"{tool} x{calls.count(tool)}" for tool in dict.fromkeys(calls))
    print(f"  calls received: {counted}", file=out)
    for effect in played.desk.effects:
        times = played.desk.acted(effect.key) if effect.key else 0
        print(
            f"  {effect.id}  {effect.tool:<13} {effect.arguments['ticket_id']}  {effect.result['done']:<20}"
            f" key {effect.key} (acted {times} time{'s' if times != 1 else ''})",
            file=out,
        )
    tools = sorted(f"tickets__{effect.tool}" for effect in played.desk.effects)
    return tools == sorted(TOOLS) and all(played.desk.acted(e.key) == 1 for e in played.desk.effects)
