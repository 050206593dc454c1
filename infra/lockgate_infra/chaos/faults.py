"""Seeded faults at every AWS and model call our code makes.

AWS calls are intercepted below the adapters (``BaseClient._make_api_call``), so each fault
reaches our code exactly as botocore would raise it once its own retries gave up:

- ``throttle`` and ``5xx``: a ClientError before the request reaches the service;
- ``timeout-before``: a connect timeout, nothing applied;
- ``timeout-after``: the service applied the request, then the read timed out — the effect
  happened and the caller saw an error (the kind that makes "exactly once" hard);
- ``crash``: after a side-effect write applied, the process dies (a BaseException no handler
  catches), the way a Lambda killed mid-invocation leaves things;
- ``reenter``: in the middle of processing, a second invocation runs against the same state
  (SQS redelivering the message, or the sweep racing the worker).

Faults fire only inside ``active()``, so the harness's own reads and the event source
mapping's polling (AWS's side, not ours) see a healthy account.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

from botocore.exceptions import ClientError, ConnectTimeoutError, ReadTimeoutError

from lockgate_infra.api_calls import intercepted

THROTTLE_CODES = {"dynamodb": "ThrottlingException", "sqs": "RequestThrottled", "ses": "Throttling"}
# Writes that are a customer-visible side effect: a crash right after one is the worst moment.
# (A TransactWriteItems counts only when it writes the shop's payments: the refund. The spend
# gate and the usage rollup use transactions too, and are not side effects.)
SIDE_EFFECTS = frozenset({"TransactWriteItems", "SendEmail", "SendRawEmail"})
EFFECT_TABLE = "ShopPaymentsTable"


class WorkerCrash(BaseException):  # noqa: N818 - it is not an error our code may handle
    """The process died (a BaseException, so no ``except Exception`` in our code catches it)."""


@dataclass(frozen=True)
class Rates:
    """Probabilities per call; the defaults make most events meet at least one fault."""

    aws_before: float = 0.02  # throttle, 5xx or connect timeout (after botocore gave up), split evenly
    aws_after: float = 0.01  # applied, then a read timeout
    crash_after_effect: float = 0.15  # of side-effect writes
    reenter: float = 0.01  # per AWS call while a delivery is processed
    model: float = 0.08  # 529 overloaded, 429 with retry-after, or 500
    clock_skew_seconds: float = 20.0  # each function's clock is off by up to this much


class FaultPlan:
    """Decides, from one seed, which call fails and how; counts what it injected."""

    def __init__(self, seed: int, rates: Rates = Rates()) -> None:
        self.rng = random.Random(seed)  # noqa: S311 - a reproducible fault schedule, not security
        self.rates = rates
        self.injected: Counter[str] = Counter()
        self._local = threading.local()
        self._reentry: Callable[[], None] | None = None

    @contextmanager
    def active(self, reentry: Callable[[], None] | None = None) -> Iterator[None]:
        """Faults on for calls made inside (on this thread); ``reentry`` may run once, mid-way.

        Each ``active`` is one invocation, alive when it starts (see ``kill``).
        """
        previous, self._local.on = getattr(self._local, "on", False), True
        was_dead, self._local.dead = getattr(self._local, "dead", False), False
        saved, self._reentry = self._reentry, reentry
        try:
            yield
        finally:
            self._local.on, self._reentry, self._local.dead = previous, saved, was_dead

    def kill(self, why: str) -> NoReturn:
        """The invocation dies now: WorkerCrash, and every AWS call it still tries (an ``except`` or
        ``finally`` recording what happened) dies too, so nothing after this moment is written."""
        self._local.dead = True
        raise WorkerCrash(why)

    @contextmanager
    def quiet(self) -> Iterator[None]:
        """Faults off inside (a nested invocation decides its own faults through ``active``)."""
        previous, self._local.on = getattr(self._local, "on", False), False
        try:
            yield
        finally:
            self._local.on = previous

    def call(self, service: str, operation: str, params: dict[str, Any], send: Callable[[], Any]) -> Any:
        """Make one AWS call, with whatever fault the plan draws for it."""
        if getattr(self._local, "dead", False):
            raise WorkerCrash(f"{operation} after the process died")
        if not getattr(self._local, "on", False):
            return send()
        self._maybe_reenter()
        roll = self.rng.random()
        if roll < self.rates.aws_before:
            kind = self.rng.choice(("throttle", "5xx", "timeout-before"))
            self.injected[kind] += 1
            raise _before(kind, service, operation)
        result = send()
        if roll < self.rates.aws_before + self.rates.aws_after:
            self.injected["timeout-after"] += 1
            raise ReadTimeoutError(endpoint_url=f"https://{service}.chaos")
        if _is_side_effect(operation, params) and self.rng.random() < self.rates.crash_after_effect:
            self.injected["crash"] += 1
            self.kill(f"killed after {operation} applied")
        return result

    def model_fault(self) -> tuple[int, str, float | None] | None:
        """None, or (status, error type, retry-after seconds) for one model request."""
        if self.rng.random() >= self.rates.model:
            return None
        status, kind, retry_after = self.rng.choice(
            ((529, "overloaded_error", None), (429, "rate_limit_error", 2.0), (500, "api_error", None))
        )
        self.injected[f"model-{status}"] += 1
        return status, kind, retry_after

    def skew(self) -> float:
        """A clock offset for one function, in seconds."""
        return self.rng.uniform(-self.rates.clock_skew_seconds, self.rates.clock_skew_seconds)

    def _maybe_reenter(self) -> None:
        reentry = self._reentry
        if reentry is None or self.rng.random() >= self.rates.reenter:
            return
        self._reentry = None  # once per invocation: a redelivery does not itself redeliver
        self.injected["reenter"] += 1
        with self.quiet():
            reentry()


def _is_side_effect(operation: str, params: dict[str, Any]) -> bool:
    if operation not in SIDE_EFFECTS:
        return False
    if operation != "TransactWriteItems":
        return True
    return EFFECT_TABLE in str(params.get("TransactItems", ""))


def _before(kind: str, service: str, operation: str) -> Exception:
    if kind == "timeout-before":
        return ConnectTimeoutError(endpoint_url=f"https://{service}.chaos")
    code = THROTTLE_CODES.get(service, "Throttling") if kind == "throttle" else "InternalServerError"
    status = 400 if kind == "throttle" else 500
    response: dict[str, Any] = {
        "Error": {"Code": code, "Message": "injected fault"},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(response, operation)  # type: ignore[arg-type]


def inject_aws(plan: FaultPlan) -> AbstractContextManager[None]:
    """Route every botocore API call in this process through ``plan``."""

    def faulty(client: Any, operation: str, params: dict[str, Any], send: Callable[[], Any]) -> Any:
        return plan.call(client.meta.service_model.service_name, operation, params, send)

    return intercepted(faulty)
