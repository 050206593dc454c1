"""`lockgate demo`: signed sample deliveries through a fresh embedded stack, and what became of them."""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from lockgate.config import LockgateConfig, load_config
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.webhooks.signing import sign
from lockgate_infra.inbox_ops import InboxOps
from lockgate_infra.local import demo_tickets
from lockgate_infra.local.console import Console, routed_output
from lockgate_infra.local.demo_approval import SentLinks, approve_refund
from lockgate_infra.local.loopback import request
from lockgate_infra.local.model import local_model
from lockgate_infra.local.model_provider import provider_config
from lockgate_infra.local.outside_apis import stand_ins_of
from lockgate_infra.local.run import seed_secrets
from lockgate_infra.local.stack import LocalStack, default_template_path
from lockgate_infra.local.workflows import seed_workflows


@dataclass(frozen=True)
class Sample:
    """One request the demo sends, and the reply it expects."""

    label: str
    source: str
    body: bytes
    delivery_id: str
    event_type: str
    expect: int
    secret: str | None = None  # None: the source's real (development) secret
    signed_at_offset: int = 0  # seconds relative to now; outside the tolerance → stale


# A ticket opened at the tickets workflow's service (its MCP server), in the round after the emails':
# its proposals' links come after the refund's, every run.
TICKET = Sample(
    "ticket T-1 opened (agent, MCP tools)", "tickets", demo_tickets.OPENED, "tkt-1", "ticket.opened", 200
)


# The handlers' own JSON logs and metrics would bury the demo's summary.
QUIET = {
    "POWERTOOLS_LOG_LEVEL": "ERROR",
    "POWERTOOLS_METRICS_DISABLED": "true",
    "APPROVAL_CHANNELS": "print",
    # The summary prints each run's dollars: runs side by side would share the stand-in's prompt
    # cache in whatever order their calls happen to arrive, and the figures would vary per run.
    "WORKER_RECORD_CONCURRENCY": "1",
}


def order_update(order_id: str, status: str, updated_at: int) -> bytes:
    """A partner's order.updated body."""
    return json.dumps(
        {"type": "order.updated", "order": {"id": order_id, "status": status, "updated_at": updated_at}}
    ).encode()


def _email(message_id: str, sender: str, subject: str, text: str) -> bytes:
    """A helpdesk delivery body."""
    return json.dumps({"message_id": message_id, "from": sender, "subject": subject, "text": text}).encode()


def _order(label: str, status: str, updated_at: int, delivery_id: str) -> Sample:
    """A partner's update of order A-1042."""
    body = order_update("A-1042", status, updated_at)
    return Sample(label, "partner", body, delivery_id, "order.updated", 200)


def samples(now: int) -> list[list[Sample]]:
    """Rounds of requests; each round is processed before the next is sent."""
    where = _email(
        "msg-demo-1",
        "ada@example.com",
        "Where is my order A-1042?",
        "Hi, I ordered last week and haven't seen it yet. Where is order A-1042? Thanks, Ada",
    )
    refund = _email(
        "msg-demo-2",
        "grace@example.com",
        "Broken teapot, order A-2001",
        "My order A-2001 arrived broken. Please refund it. Grace",
    )
    stale = json.dumps({"id": "evt_demo", "type": "charge.refunded", "created": now - 600}).encode()
    push = b'{"ref":"refs/heads/main"}'
    return [
        [
            _order("order A-1042 paid", "paid", now - 60, "p-100"),
            _order("  the provider retries it (duplicate)", "paid", now - 60, "p-100"),
            Sample("email: where is my order? (agent)", "helpdesk", where, "msg-demo-1", "unknown", 200),
            Sample("email: please refund A-2001 (agent)", "helpdesk", refund, "msg-demo-2", "unknown", 200),
            Sample("GitHub push", "github", push, "gh-1", "push", 200),
        ],
        [_order("order A-1042 shipped", "shipped", now, "p-101"), TICKET],
        [
            _order("late, older update: A-1042 paid", "paid", now - 30, "p-099"),
            Sample(
                "forged GitHub push (wrong secret)",
                "github",
                push,
                "gh-2",
                "push",
                401,
                secret="not-the-secret",  # noqa: S106 - the forgery the demo shows being refused
            ),
            Sample(
                "stale Stripe event (signed 10 min ago)",
                "stripe",
                stale,
                "evt_demo",
                "charge.refunded",
                401,
                signed_at_offset=-600,
            ),
            Sample(
                "broken order.updated (no order)",
                "partner",
                b'{"type":"order.updated"}',
                "p-102",
                "order.updated",
                200,
            ),
            Sample("unknown source", "gitlab", b"{}", "x", "push", 404),
        ],
    ]


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    return request(url, body, headers)


def _send(
    sample: Sample, gateway_url: str, config: LockgateConfig, secrets: dict[str, str], now: int
) -> tuple[int, str]:
    source = config.source(sample.source)
    headers = {"content-type": "application/json"}
    if source is not None:
        headers = sign(
            source,
            sample.secret or secrets[sample.source],
            sample.body,
            now + sample.signed_at_offset,
            delivery_id=sample.delivery_id,
            event_type=sample.event_type,
        )
    return _post(f"{gateway_url}/webhooks/{sample.source}", sample.body, headers)


def run_demo(
    config_path: str | Path | None = None,
    out: TextIO | None = None,
    model: str | None = None,
    provider: str | None = None,
) -> int:
    """Run the demo; 0 if every reply and outcome was as expected.

    ``provider`` (bedrock, aws, anthropic; None: the config's) is the wire format the model calls take.
    """
    out = out or sys.stdout
    ok = True
    sent = SentLinks()  # the notifier's links, shown in their own section, not amid the tables
    with (
        provider_config(config_path or default_template_path().parent / "lockgate.toml", provider) as wire,
        local_model(model, os.environ, wire.name, config_path=wire.config_path) as chosen,
        stand_ins_of(wire.config_path, (), None) as apis,  # the MCP server, quiet: the summary shows it
        LocalStack(
            config_path=wire.config_path,
            environment={**QUIET, **chosen.environment, **{v: api.url for v, api in apis.items()}},
            keep_spans=True,
            stand_ins=apis,
        ) as stack,
        # The functions' output (e.g. the broken delivery's error) goes to a file, not the summary.
        routed_output(Console(out), stack.root / ".lockgate" / "demo.log", summaries=False, watch=sent),
    ):
        config = load_config(stack.config_path)
        secrets = seed_secrets(stack)
        seed_workflows(stack)
        gateway = stack.start_gateway(0)
        stack.start_pollers(wait_seconds=0)
        print(f"Lockgate demo: embedded stack at {gateway.url} (AWS endpoint {stack.endpoint_url})", file=out)
        print(f"Model: {chosen.description}", file=out)
        if provider is not None:  # the default run's output is the README's, line for line
            print(f"Model provider: {wire.description}", file=out)
        print(file=out)
        print("Deliveries sent", file=out)
        for round_ in samples(int(time.time())):
            for sample in round_:
                status, reply = _send(sample, gateway.url, config, secrets, int(time.time()))
                mark = "ok" if status == sample.expect else f"UNEXPECTED (wanted {sample.expect})"
                ok &= status == sample.expect
                print(f"  {status}  {sample.label:<42} {reply:<60} {mark}", file=out)
            stack.drain(timeout=30)
        store = InboxStore(stack.client("dynamodb"), stack.resources["InboxTable"])
        ok &= _show_worker(store, out)
        ok &= _show_agent(stack, out)
        sent.show(out)
        ok &= approve_refund(stack, sent, out)
        ok &= demo_tickets.approve_tickets(stack, sent, out)
        ok &= demo_tickets.show_effects(stack, out)
        _show_status(stack, store, out)
    print(
        "\nDemo " + ("finished: every reply and outcome was as expected." if ok else "FAILED: see above."),
        file=out,
    )
    return 0 if ok else 1


def _show_worker(store: InboxStore, out: TextIO) -> bool:
    """What the worker did with each delivery; True if the plain handlers' outcomes are as expected."""
    print("\nWhat the worker did", file=out)
    for pk in (
        "partner#p-100",
        "partner#p-101",
        "partner#p-099",
        "partner#p-102",
        "helpdesk#msg-demo-1",
        "helpdesk#msg-demo-2",
        demo_tickets.RUN,
        "github#gh-1",
    ):
        delivery = store.get(pk)
        result = delivery.outcome or delivery.last_error or ""
        print(f"  {delivery.status.value:<9} {pk:<22} attempts={delivery.attempts}  {result}", file=out)
    return (
        store.get("partner#p-101").outcome == "order A-1042 is now shipped"
        and (store.get("partner#p-099").outcome or "").startswith("stale, not applied")
        and store.get("partner#p-102").status.value == "failed"
    )


def _show_status(stack: LocalStack, store: InboxStore, out: TextIO) -> None:
    """What ``lockgate inbox status`` says at the end."""
    sqs = stack.client("sqs")
    ops = InboxOps(store, InboxQueue(sqs, stack.resources["InboxQueue"]), sqs, stack.resources["InboxDLQ"])
    summary = ops.status(int(time.time()))
    print("\nInbox status (lockgate inbox status)", file=out)
    counts = "  ".join(f"{k}: {v}" for k, v in summary.counts.items())
    print(f"  {counts}   dead letters: {summary.dead_letters}", file=out)
    for failed in summary.failed:
        print(f"  FAILED {failed['id']}: {failed['error']}", file=out)


def _show_agent(stack: LocalStack, out: TextIO) -> bool:
    """What the support-inbox agent did: its tool calls and decisions, the emails SES recorded, refunds."""
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.ses.models import ses_backends

    from lockgate.agent.runs import RunStore
    from lockgate.clock import SystemClock

    runs = RunStore(stack.client("dynamodb"), stack.resources["StateTable"], SystemClock())
    print("\nWhat the agent did (lockgate runs show ID)", file=out)
    for run_id in ("helpdesk#msg-demo-1", "helpdesk#msg-demo-2", demo_tickets.RUN):
        run = runs.get(run_id)
        if run is None:
            print(f"  {run_id}: no run recorded", file=out)
            return False
        cost = run.totals.get("cost_usd", 0)
        print(
            f"  {run_id}: {run.status}, {run.totals.get('model_calls', 0)} model calls, ${cost:.4f}", file=out
        )
        for step in run.steps:
            for call in step.data.get("calls", []) if step.kind == "tools" else []:
                verdict = (
                    "ran" if call["check"] == "cleared" else f"BLOCKED ({call['check']}: {call['reason']})"
                )
                print(f"      {call.get('summary') or call['tool']}: {verdict}", file=out)
    sent = list(ses_backends[DEFAULT_ACCOUNT_ID][stack.region].sent_messages)
    print("\nEmails sent (recorded by the embedded SES)", file=out)
    for message in sent:
        to = ", ".join(message.destinations.get("ToAddresses", []))
        print(f"  to {to}: {message.subject}", file=out)
    payments = stack.client("dynamodb").scan(TableName=stack.resources["ShopPaymentsTable"])["Items"]
    print(f"\nRefunds recorded: {len(payments)} (the A-2001 refund waits for a person)", file=out)
    untouched = demo_tickets.show_waiting(stack, out)
    recipients = sorted(to for m in sent for to in m.destinations.get("ToAddresses", []))
    return recipients == ["ada@example.com", "grace@example.com"] and not payments and untouched
