"""Agent test fixtures: the real SDK against the local stub, the loop on moto or in-memory stores."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from lockgate.actions.ledger import Ledger
from lockgate.actions.once import Operations
from lockgate.agent.loop import AgentLoop
from lockgate.agent.runs import Runs, RunStore
from lockgate.agent.screen import Screener
from lockgate.clock import FixedClock
from lockgate.inbox.routing import InboxEvent
from lockgate.model.client import ModelClient
from lockgate.telemetry import CountingMetrics
from lockgate_infra.stub.client import stub_client
from lockgate_infra.stub.server import StubAnthropic
from tests.support import LOG, PRICES, Aws


@pytest.fixture
def stub() -> Iterator[StubAnthropic]:
    from lockgate_infra.stub.models import Scripted

    with StubAnthropic(Scripted([]), min_cacheable_tokens=0) as server:
        yield server


@dataclass
class AgentRig:
    """The loop wired to moto and the stub, with the sleeps it asked for recorded."""

    aws: Aws
    stub: StubAnthropic
    clock: FixedClock
    metrics: CountingMetrics = field(default_factory=CountingMetrics)
    sleeps: list[float] = field(default_factory=list)
    stores: tuple[Runs, Operations] | None = None  # in-memory runs and ledger (tests/fakes.py), or moto

    def model_client(self, **kwargs: Any) -> ModelClient:
        def factory() -> Any:
            return stub_client(self.stub.base_url, "test-key")

        return ModelClient(factory, self.clock, LOG, sleep=self.sleeps.append, **kwargs)

    def loop(self, controls: dict[str, Any] | None = None, **kwargs: Any) -> AgentLoop:
        """The loop; ``controls`` are extra AgentLoop arguments (spend, responses, batches, rollup)."""
        model = self.model_client(**kwargs)
        if self.stores is not None:
            runs, ledger = self.stores
        else:
            db = self.aws.client("dynamodb")
            runs, ledger = (
                RunStore(db, self.aws.state_table, self.clock),
                Ledger(db, self.aws.state_table, self.clock),
            )
        return AgentLoop(
            model=model,
            prices=PRICES,
            runs=runs,
            ledger=ledger,
            clock=self.clock,
            log=LOG,
            metrics=self.metrics,
            screener=Screener(self.clock),
            **(controls or {}),
        )

    def runs(self) -> Runs:
        if self.stores is not None:
            return self.stores[0]
        return RunStore(self.aws.client("dynamodb"), self.aws.state_table, self.clock)


@pytest.fixture
def rig(aws: Aws, stub: StubAnthropic, clock: FixedClock) -> AgentRig:
    return AgentRig(aws, stub, clock)


def event(delivery_id: str = "d-1", source: str = "github", body: bytes = b"{}") -> InboxEvent:
    """An inbox event as the worker hands it to a handler."""
    return InboxEvent.claimed(source, delivery_id, "push", body)
