"""``TestStack``: your workflow on the embedded stack, in the test's own process, with your model.

It is ``lockgate local`` without the terminal: moto on loopback with every resource of
template.yaml, the functions loaded as Lambda loads them, the gateway, the queue and stream
pollers, and your offline model behind a local Messages API stub. Each call that sends something
waits until the stack is quiet, so what you assert next has happened. The functions' logs go to
stdout, which pytest shows for a failing test.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Self

from lockgate.actions.ledger import Operation
from lockgate.agent.runs import Run, RunStore
from lockgate.approvals.proposals import Proposal
from lockgate.clock import SystemClock
from lockgate.config import LockgateConfig, load_config
from lockgate.errors import DeliveryNotFound
from lockgate.inbox.models import Delivery
from lockgate.inbox.store import InboxStore
from lockgate_infra.local.approval_walk import Step, decide, local_signer, pending_proposals
from lockgate_infra.local.loopback import request
from lockgate_infra.local.outside_apis import stand_ins_of
from lockgate_infra.local.run import seed_secrets
from lockgate_infra.local.spans import SpanRecord, delivery_trace
from lockgate_infra.local.stack import LocalStack, default_template_path
from lockgate_infra.local.workflows import seed_workflows
from lockgate_infra.serving import Serving
from lockgate_infra.stub import Model, StubAnthropic, with_judge
from lockgate_infra.stub.replies import Switchable
from lockgate_infra.testing.deliveries import (
    Sent,
    TestStackError,
    delivery_key,
    outgoing,
    raw_body,
    stored_key,
    why_no_run,
)
from lockgate_infra.testing.ledger import LedgerView

STUB_KEY = "test-stub-key"  # the stub checks that a key is sent, not which


class TestStack(Serving):
    """Your workflows on the embedded stack with ``model`` answering as Claude.

    ``model`` is any offline model (a ``ScriptedModel``); ``config`` is your lockgate.toml and
    ``template`` your template.yaml (default: the checkout's); ``environment`` adds to every
    function's environment; ``timeout`` is how long, in seconds, a step waits for the stack to go
    quiet before ``TestStackError``. Use as a context manager, or through the pytest fixture
    ``lockgate_stack``.
    """

    __test__ = False  # not a test class, whatever pytest thinks of its name

    def __init__(
        self,
        model: Model,
        *,
        config: str | Path | None = None,
        template: str | Path | None = None,
        environment: Mapping[str, str] | None = None,
        timeout: float = 60.0,
    ) -> None:
        self._model = Switchable(model)
        self._config_path = config
        self._template_path = template
        self._environment = dict(environment or {})
        self._timeout = timeout
        self._stub: StubAnthropic | None = None
        self._local: LocalStack | None = None
        self._running = ExitStack()
        self._secrets: dict[str, str] = {}
        self._config: LockgateConfig | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> Self:
        """Start the stub model, your workflows' stand-ins, the stack, its gateway and pollers; seed
        secrets and your data."""
        self._stub = self._running.enter_context(StubAnthropic(with_judge(self._model)))
        template = Path(self._template_path or default_template_path()).resolve()
        config = Path(self._config_path or template.parent / "lockgate.toml")
        try:
            # Your workflows' own (``local_stand_ins``), but where ``environment`` points elsewhere.
            apis = self._running.enter_context(stand_ins_of(config, (), print, given=list(self._environment)))
            environment = {
                "ANTHROPIC_BASE_URL": self._stub.base_url,
                "ANTHROPIC_API_KEY_REF": "env:LOCKGATE_STUB_KEY",
                "LOCKGATE_STUB_KEY": STUB_KEY,
                "APPROVAL_CHANNELS": "print",
                # A test reads effects, not metric blobs (and Powertools warns of each empty one).
                "POWERTOOLS_METRICS_DISABLED": "true",
                **{variable: api.url for variable, api in apis.items()},
                **self._environment,
            }
            local = LocalStack(template, config_path=config, environment=environment, stand_ins=apis)
            self._local = self._running.enter_context(local)
            self._config = load_config(local.config_path)
            self._secrets = seed_secrets(local)
            seed_workflows(local)
            local.start_gateway(0)
            local.start_pollers(wait_seconds=0)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop everything started; the environment and stdout are as they were."""
        self._running.close()
        self._local = None
        self._stub = None

    @property
    def local(self) -> LocalStack:
        """The underlying ``LocalStack`` (clients, resources, functions)."""
        if self._local is None:
            raise TestStackError("the test stack is not started")
        return self._local

    @property
    def model(self) -> Model:
        """The model answering now; assign another to change it between steps."""
        return self._model.model

    @model.setter
    def model(self, model: Model) -> None:
        self._model.model = model

    @property
    def stand_ins(self) -> Mapping[str, Any]:
        """The servers playing outside services, by the variable that gives their URL: your workflows'
        own (their ``local_stand_ins``), e.g. ``stack.stand_ins["TICKETS_MCP_URL"].desk.effects``."""
        return self.local.stand_ins

    def client(self, service: str) -> Any:
        """A boto3 client on the stack's moto: ``stack.client("dynamodb")``."""
        return self.local.client(service)

    def table(self, logical_id: str) -> str:
        """The name of a template table (``stack.table("ShopOrdersTable")``)."""
        return self.local.resources[logical_id]

    # -- sending ------------------------------------------------------------------------------

    def send(
        self,
        source: str,
        body: Mapping[str, Any] | bytes | str,
        *,
        event: str = "",
        delivery_id: str | None = None,
        secret: str | None = None,
        signed_at: int | None = None,
        wait: bool = True,
    ) -> Sent:
        """POST ``body`` to ``/webhooks/<source>``, signed as that source's provider signs it.

        ``body`` is sent as JSON (a mapping), or as given (bytes or text: a form, Shopify's XML),
        with the content type its provider sends it with. ``event`` is the provider's event type
        where the provider puts it in a header (GitHub's X-GitHub-Event, Shopify's topic); where the
        body carries it (Stripe's ``type``, Slack's ``event.type``), ``event`` is checked against it.
        ``delivery_id`` is the id where a header carries it (default: a fresh one); Stripe and Slack
        take theirs from the body. ``secret`` signs with another secret (a forgery); ``wait`` (the
        default) returns once everything the delivery set off has finished. The key returned is the
        one the receiver stored it under. TestStackError when ``event`` or ``delivery_id`` disagree
        with the body (the message says where the provider carries them).
        """
        raw = raw_body(body)
        url = f"{self.gateway_url}/webhooks/{source}"
        configured = self._configured().source(source)
        if configured is None:  # no such source: the receiver answers 404, as it would a stranger
            status, answer = request(url, raw, {"content-type": "application/json"})
            return Sent(status, answer, "")
        at = int(time.time()) if signed_at is None else signed_at
        signed = outgoing(
            configured,
            secret or self._secrets.get(source, ""),
            raw,
            at,
            event=event,
            delivery_id=delivery_id,
        )
        status, answer = request(url, signed.body, signed.headers)
        if wait:
            self.drain()
        return Sent(status, answer, stored_key(answer))

    def drain(self, timeout: float | None = None) -> None:
        """Wait until every queue and stream is empty and nothing runs; TestStackError if it never is."""
        if not self.local.drain(timeout or self._timeout):
            raise TestStackError(f"the stack was still busy after {timeout or self._timeout:g} s")

    @property
    def gateway_url(self) -> str:
        """``http://127.0.0.1:PORT``, the local API Gateway."""
        if self.local.gateway is None:
            raise TestStackError("the gateway is not running")
        return self.local.gateway.url

    # -- reading ------------------------------------------------------------------------------

    def delivery(self, key: str | Sent) -> Delivery:
        """The inbox item for a delivery (``"github#abc"``, or what ``send`` returned)."""
        pk = delivery_key(key)
        try:
            return InboxStore(self.client("dynamodb"), self.table("InboxTable")).get(pk)
        except DeliveryNotFound:
            raise TestStackError(f"no delivery {pk} in the inbox: see what send() returned") from None

    def run(self, key: str | Sent) -> Run:
        """The agent run a delivery started (runs are keyed by their delivery)."""
        pk = delivery_key(key)
        found = RunStore(self.client("dynamodb"), self.table("StateTable"), SystemClock()).get(pk)
        if found is None:
            raise TestStackError(f"no agent run for {pk}: {why_no_run(self.delivery(pk))}")
        return found

    @property
    def ledger(self) -> LedgerView:
        """The operation ledger: ``stack.ledger.ran("add_label")``."""
        return LedgerView(self.client("dynamodb"), self.table("StateTable"))

    def operations(self) -> list[Operation]:
        """Every ledger entry, oldest first."""
        return self.ledger.operations()

    def proposals(self) -> list[Proposal]:
        """Every proposal written (decided or not), oldest first."""
        return sorted(pending_proposals(self.local), key=lambda p: p.created_at)

    def emails(self) -> list[dict[str, Any]]:
        """Every email the embedded SES recorded: ``{"to": [...], "subject": ..., "body": ...}``."""
        from moto.core.models import DEFAULT_ACCOUNT_ID
        from moto.ses.models import ses_backends

        return [
            {"to": list(m.destinations.get("ToAddresses", [])), "subject": m.subject, "body": m.body}
            for m in ses_backends[DEFAULT_ACCOUNT_ID][self.local.region].sent_messages
        ]

    def trace(self, key: str | Sent) -> list[SpanRecord]:
        """The spans of the trace a delivery started, in start order (what ``lockgate runs trace`` shows)."""
        return delivery_trace(self.local.spans.spans(), delivery_key(key))

    # -- deciding -----------------------------------------------------------------------------

    def approve(self, proposal: Proposal | str, *, as_: str) -> list[Step]:
        """Approve through reviewer ``as_``'s own signed link, as their browser would; then drain."""
        return self._decide(proposal, as_, "approve")

    def reject(self, proposal: Proposal | str, *, as_: str, reason: str = "") -> list[Step]:
        """Reject through reviewer ``as_``'s own signed link (``reason``: typed in as theirs); then drain."""
        return self._decide(proposal, as_, "reject", reason)

    def edit(self, proposal: Proposal | str, *, as_: str, **changes: str) -> list[Step]:
        """Approve a changed call through ``as_``'s own link ("Approve with these changes": the
        tool's editable fields, e.g. ``amount="40.00"``); then drain."""
        return self._decide(proposal, as_, "edit", changes=changes)

    def _decide(
        self,
        proposal: Proposal | str,
        reviewer: str,
        decision: str,
        reason: str = "",
        changes: Mapping[str, str] | None = None,
    ) -> list[Step]:
        if isinstance(proposal, str):
            found = next((p for p in self.proposals() if p.approval_id == proposal), None)
            if found is None:
                raise TestStackError(f"no proposal {proposal}: see stack.proposals()")
            proposal = found
        config = self._configured().approvals
        # The link the notifier sends this reviewer: signed with the stack's own link secret.
        links = local_signer(self.local, config, f"{self.gateway_url}/approvals").links_for(proposal)
        if reviewer not in links:
            raise TestStackError(
                f"{reviewer!r} gets no link for {proposal.tool}: the reviewers who do are "
                f"{', '.join(sorted(links)) or 'none'} ([[approvals.reviewers]] and their roles)"
            )
        steps = decide(links[reviewer], decision, reason=reason, changes=changes)
        self.drain()
        return steps

    def _configured(self) -> LockgateConfig:
        if self._config is None:
            raise TestStackError("the test stack is not started")
        return self._config
