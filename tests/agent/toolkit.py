"""A small test task with one tool of every kind, and recorders for their side effects."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from lockgate.actions.facts import RunFacts
from lockgate.actions.tools import OutcomeUnknown, Risk, Tool, ToolContext, ToolError, Verdict
from lockgate.agent.tasks import Start, Task
from lockgate.inbox.routing import InboxEvent


class LookupArgs(BaseModel):
    item_id: str = Field(pattern=r"^I-\d{3}$", description="Item ids look like I-123")


class PageArgs(BaseModel):
    url: str


class SendArgs(BaseModel):
    to: str
    text: str


class PayArgs(BaseModel):
    amount: float = Field(gt=0)


class NoArgs(BaseModel):
    pass


class Effects:
    """Records every side effect a tool really performed."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.paid: list[dict[str, Any]] = []
        self.wiped = 0
        self.pages: dict[str, str] = {}
        self.pay_fails_unknown = False


def to_owner(args: SendArgs, facts: RunFacts) -> Verdict:
    if args.to.lower() != str(facts.get("owner", "")).lower():
        return Verdict.deny(f"messages may only go to {facts.get('owner')}")
    return Verdict.allow()


def make_tools(effects: Effects) -> list[Tool[Any]]:
    def lookup(args: LookupArgs, ctx: ToolContext) -> Any:
        if args.item_id == "I-999":
            raise ToolError("No item called 'I-999'. Item ids look like I-123.")
        return {"item_id": args.item_id, "price": 10}

    def fetch(args: PageArgs, ctx: ToolContext) -> Any:
        return {"url": args.url, "text": effects.pages.get(args.url, "nothing here")}

    def send(args: SendArgs, ctx: ToolContext) -> Any:
        effects.sent.append({"to": args.to, "text": args.text, "key": ctx.idempotency_key})
        return {"sent": True}

    def pay(args: PayArgs, ctx: ToolContext) -> Any:
        if effects.pay_fails_unknown:
            raise OutcomeUnknown("timed out after sending")
        effects.paid.append({"amount": args.amount, "key": ctx.idempotency_key})
        return {"paid": args.amount}

    def wipe(args: NoArgs, ctx: ToolContext) -> Any:
        effects.wiped += 1
        return {"wiped": True}

    return [
        Tool("lookup", "Look up an item by id.", LookupArgs, lookup, lambda a: f"look up {a.item_id}"),
        Tool(
            "fetch_page",
            "Fetch a web page.",
            PageArgs,
            fetch,
            lambda a: f"fetch {a.url}",
            untrusted_result=True,
        ),
        Tool(
            "send",
            "Send a message to the owner.",
            SendArgs,
            send,
            lambda a: f"send to {a.to}",
            risk=Risk.ACT,
            policies=(to_owner,),
            needs_person_when_tainted=False,
        ),
        Tool(
            "pay",
            "Pay an amount.",
            PayArgs,
            pay,
            lambda a: f"pay ${a.amount:.2f}",
            risk=Risk.ACT,
            approval_threshold=lambda a, f: "payments over $50 need a person" if a.amount > 50 else None,
            identity=lambda a: f"{a.amount:.2f}",
        ),
        Tool("wipe", "Wipe everything.", NoArgs, wipe, lambda a: "wipe everything", risk=Risk.APPROVAL),
    ]


def make_task(effects: Effects, **overrides: Any) -> Task:
    def start(event: InboxEvent, services: Any) -> Start:
        return Start(
            prompt=f"Handle event {event.delivery.delivery_id}.",
            facts=RunFacts(values={"owner": "owner@example.com"}),
        )

    fields: dict[str, Any] = {
        "name": "test-task",
        "source": "github",
        "event_type": "*",
        "system": "You are a test agent.",
        "tools": make_tools(effects),
        "start": start,
        "model": "claude-sonnet-5-5",
        "max_steps": 6,
    }
    fields.update(overrides)
    return Task(**fields)
