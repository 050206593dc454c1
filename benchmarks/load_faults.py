"""Faults for the load run: the receiver's AWS calls fail now and then, and the provider retries.

Injected at the same seam as the chaos harness (``lockgate_infra.api_calls``), only on the threads
that are running a receiver's invocation, so the worker's drains and the run's own reads see a
healthy account. Each fault reaches the receiver as botocore raises it once its own retries gave up:

- ``throttle``: PutItem refused with ThrottlingException, nothing stored (the receiver answers 503);
- ``stored_then_timeout``: PutItem applied, then the read timed out (503, yet the delivery is stored
  and no pointer was queued: only the inbox sweep, or a late duplicate, re-queues it);
- ``send_fails``: SendMessage refused with a 500, the delivery stored but its pointer never queued
  (the receiver answers 200: the sweep re-queues it).

The provider side (``Retries``): a 5xx answer is sent again, at once, with the same delivery id;
and some 200s are "lost" (the provider timed out first) and the delivery is sent again too.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError, ReadTimeoutError

from lockgate_infra.api_calls import intercepted


@dataclass(frozen=True)
class FaultRates:
    """Probabilities per receiver call (AWS faults) and per 200 answer (lost acknowledgements)."""

    throttle: float = 0.01
    stored_then_timeout: float = 0.005
    send_fails: float = 0.01
    lost_ack: float = 0.02
    retries: int = 8  # a provider's attempts after the first, before it gives up

    def describe(self) -> str:
        """One line for the report."""
        return (
            f"faults: PutItem throttled {self.throttle:.1%}, PutItem applied then timed out "
            f"{self.stored_then_timeout:.1%}, SendMessage failed {self.send_fails:.1%} of the receiver's "
            f"calls; {self.lost_ack:.1%} of 200s lost (the provider resends); a 5xx is resent at once, "
            f"up to {self.retries} times"
        )


NO_FAULTS = FaultRates(0.0, 0.0, 0.0, 0.0, 0)


class ReceiverFaults:
    """Decides from one seed which receiver call fails and how; counts what it injected."""

    def __init__(self, rates: FaultRates, seed: int = 11) -> None:
        self.rates = rates
        self._rng = random.Random(seed)  # noqa: S311 - a reproducible fault schedule, not security
        self._lock = threading.Lock()
        self._local = threading.local()
        self.injected: Counter[str] = Counter()
        self.by_receiver: dict[str, Counter[str]] = {}  # what each receiver's phases met

    @contextmanager
    def counting(self, receiver: str) -> Iterator[None]:
        """Add what is injected inside to ``receiver``'s count."""
        before = Counter(self.injected)
        try:
            yield
        finally:
            self.by_receiver.setdefault(receiver, Counter()).update(self.injected - before)

    def receiving(self, invoke: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
        """``invoke`` with faults on for the AWS calls it makes."""

        def faulty(logical_id: str, event: Any) -> Any:
            self._local.on = True
            try:
                return invoke(logical_id, event)
            finally:
                self._local.on = False

        return faulty

    @contextmanager
    def active(self) -> Iterator[None]:
        """Faults on, inside ``receiving``, for every botocore call in this process while inside."""

        def call(client: Any, operation: str, params: dict[str, Any], send: Callable[[], Any]) -> Any:
            fault = self._draw(operation) if getattr(self._local, "on", False) else None
            if fault == "throttle":
                raise _client_error("ThrottlingException", 400, operation)
            if fault == "send_fails":
                raise _client_error("InternalError", 500, operation)
            result = send()
            if fault == "stored_then_timeout":
                raise ReadTimeoutError(endpoint_url=client.meta.endpoint_url)
            return result

        with intercepted(call):
            yield

    def _draw(self, operation: str) -> str | None:
        choices = {
            "PutItem": (
                ("throttle", self.rates.throttle),
                ("stored_then_timeout", self.rates.stored_then_timeout),
            ),
            "SendMessage": (("send_fails", self.rates.send_fails),),
        }.get(operation, ())
        with self._lock:
            roll = self._rng.random()
            for fault, rate in choices:
                if roll < rate:
                    self.injected[fault] += 1
                    return fault
                roll -= rate
        return None


def _client_error(code: str, status: int, operation: str) -> ClientError:
    response: Any = {
        "Error": {"Code": code, "Message": "injected"},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(response, operation)


class Retries:
    """The provider's side: which 200s it never saw (seeded per delivery and attempt)."""

    def __init__(self, rates: FaultRates, seed: int = 13) -> None:
        self.rates = rates
        self._seed = seed

    def lost(self, delivery_id: str, attempt: int) -> bool:
        """Whether this attempt's 200 is lost to the provider's timeout (it sends again)."""
        if not self.rates.lost_ack:
            return False
        rng = random.Random(f"{self._seed}:{delivery_id}:{attempt}")  # noqa: S311 - reproducible, not security
        return rng.random() < self.rates.lost_ack
