"""The worker's core: claim a delivery under a lease, run its handler, finish or retry."""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from lockgate import tracing
from lockgate.clock import Clock
from lockgate.config import InboxConfig
from lockgate.errors import (
    BadDelivery,
    Deferred,
    DeliveryNotFound,
    LeaseLost,
    NotClaimable,
    PermanentFailure,
    QueueUnavailable,
    StaleEvent,
)
from lockgate.freshness import EntityVersions
from lockgate.inbox.bodies import BodyStore
from lockgate.inbox.models import Delivery
from lockgate.inbox.queue import DeadLetters, InboxQueue
from lockgate.inbox.routing import InboxEvent, Router, TaskContext
from lockgate.inbox.store import InboxStore
from lockgate.telemetry import Log, Metrics

# A deferral longer than SQS's longest message delay parks the delivery in the table instead of
# holding its message back: each hold is another receive, and the queue's redrive counts receives.
PARK_AFTER_SECONDS = 900
_WORD = re.compile(r"[\w.#-]{1,64}")  # a task name or a status, not a sentence


class RetryLater(Exception):  # noqa: N818 - a signal to the batch processor, not a fault
    """Tell the SQS batch that this message must come back (its visibility was already set)."""


@dataclass(frozen=True)
class Leasing:
    """How long a claim lasts: at least the function timeout, plus a margin for clock skew."""

    lease_seconds: int

    @classmethod
    def for_timeout(cls, function_timeout_seconds: int, margin_seconds: int = 30) -> Leasing:
        """A lease that outlives any single invocation of the worker."""
        return cls(function_timeout_seconds + margin_seconds)


class Worker:
    """Processes inbox pointers; every transition is conditional on owning the lease."""

    def __init__(
        self,
        *,
        inbox: InboxStore,
        bodies: BodyStore,
        queue: InboxQueue,
        dead_letters: DeadLetters,
        router: Router,
        versions: EntityVersions,
        settings: InboxConfig,
        leasing: Leasing,
        clock: Clock,
        log: Log,
        metrics: Metrics,
        rng: random.Random | None = None,
    ) -> None:
        self._inbox = inbox
        self._bodies = bodies
        self._queue = queue
        self._dead_letters = dead_letters
        self._router = router
        self._versions = versions
        self._settings = settings
        self._leasing = leasing
        self._clock = clock
        self._log = log
        self._metrics = metrics
        self.rng = rng or random.Random()  # noqa: S311 - jitter, not security

    def process(self, pk: str, receipt_handle: str, remaining_seconds: Callable[[], float]) -> str:
        """Handle one pointer; return what happened, or raise RetryLater to keep the message."""
        owner = uuid.uuid4().hex
        now = int(self._clock.now())
        try:
            delivery = self._inbox.claim(pk, owner, now, self._leasing.lease_seconds)
        except (NotClaimable, DeliveryNotFound) as exc:
            # Already done/failed, or a stray pointer: nothing to do, drop the message.
            self._log.info("pointer skipped", extra={"delivery": pk, "reason": str(exc)})
            return "skipped"
        except Deferred as exc:
            self._defer(receipt_handle, exc.delay_seconds)
            raise RetryLater(str(exc)) from exc
        if delivery.attempts > self._settings.max_attempts:
            # Earlier attempts died without recording a result (timeouts, crashes).
            return self._give_up(delivery, owner, "attempt limit reached: earlier attempts did not finish")
        event = InboxEvent(delivery, self._body(delivery))
        handler = self._router.route(delivery.source, delivery.event_type)
        task_context = TaskContext(
            run_id=f"run#{pk}",
            remaining_seconds=remaining_seconds,
            versions=self._versions,
            log=self._log,
            metrics=self._metrics,
        )
        attributes: tracing.Attributes = {
            "lockgate.delivery.id": pk,
            "lockgate.source": delivery.source,
            "lockgate.event_type": delivery.event_type,
            "lockgate.attempt": delivery.attempts,
        }
        with tracing.span(
            f"process {delivery.event_type}", kind="consumer", parent=delivery.trace, attributes=attributes
        ):
            outcome = self._handled(delivery, owner, handler, event, task_context, now, receipt_handle)
            tracing.annotate({"lockgate.outcome": outcome_kind(outcome)})
            return outcome

    def _handled(
        self,
        delivery: Delivery,
        owner: str,
        handler: Callable[[InboxEvent, TaskContext], str],
        event: InboxEvent,
        task_context: TaskContext,
        now: int,
        receipt_handle: str,
    ) -> str:
        pk, context = delivery.pk, {"delivery": delivery.pk, "attempt": delivery.attempts}
        try:
            outcome = handler(event, task_context)
        except StaleEvent as exc:
            outcome = f"stale, not applied: {exc}"
            self._metrics.add_metric(name="StaleEventSkipped", unit="Count", value=1)
        except Deferred as exc:
            return self._deferred(delivery, owner, exc, now, receipt_handle)
        except BadDelivery as exc:
            # Retrying cannot fix a malformed delivery: set it aside now.
            return self._give_up(delivery, owner, f"bad delivery: {exc}")
        except PermanentFailure as exc:
            return self._give_up(delivery, owner, f"permanent failure: {exc}")
        except Exception as exc:  # noqa: BLE001 - any handler fault is recorded and retried, never lost
            self._log.exception("handler failed", extra=context)
            error = f"{type(exc).__name__}: {exc}"
            if delivery.attempts >= self._settings.max_attempts:
                return self._give_up(delivery, owner, error)
            self._retry(delivery, owner, error, self._backoff(delivery.attempts), receipt_handle)
            raise RetryLater(error) from exc
        try:
            self._inbox.finish(pk, owner, outcome, int(self._clock.now()))
        except LeaseLost:
            # Our lease expired and another worker owns the delivery now: its result stands.
            self._metrics.add_metric(name="LateFinishRefused", unit="Count", value=1)
            self._log.warning("lease lost before finishing; result refused", extra=context)
            return "lease lost"
        self._metrics.add_metric(name="DeliveryProcessed", unit="Count", value=1)
        self._log.info("delivery processed", extra={**context, "outcome": outcome[:200]})
        return outcome

    def _deferred(self, delivery: Delivery, owner: str, exc: Deferred, now: int, receipt_handle: str) -> str:
        """The deferral rule: "not now" (capacity, a spent cap, a batch still running) is not a failed
        attempt; it may wait up to the defer limit, counted from when the delivery arrived."""
        limit = self._settings.defer_limit_hours * 3600
        if now + exc.delay_seconds - delivery.received_at > limit:
            hours = self._settings.defer_limit_hours
            return self._give_up(delivery, owner, f"still deferred {hours} h after it arrived: {exc}")
        # Longer than a message should be held back: the pointer is let go and the table keeps
        # the delivery; the sweep re-queues it once it is available again.
        parked = exc.delay_seconds > PARK_AFTER_SECONDS
        held = None if parked else receipt_handle
        self._retry(delivery, owner, f"deferred: {exc}", exc.delay_seconds, held, deferral=True)
        if parked:
            return f"parked for {exc.delay_seconds} s: {exc}"
        raise RetryLater(str(exc)) from exc

    def _body(self, delivery: Delivery) -> bytes:
        if delivery.body is not None:
            return delivery.body
        if delivery.body_ref:
            return self._bodies.get(delivery.body_ref)
        return b""

    def _backoff(self, attempts: int) -> int:
        """Full-jitter exponential backoff, at least one second."""
        ceiling = min(self._settings.backoff_cap_seconds, self._settings.backoff_base_seconds * 2**attempts)
        return max(1, int(self.rng.uniform(0, ceiling)))

    def _retry(
        self,
        delivery: Delivery,
        owner: str,
        error: str,
        delay: int,
        receipt_handle: str | None,
        *,
        deferral: bool = False,
    ) -> None:
        """Release the delivery until ``delay`` from now; hold its message back as long (None: let go)."""
        now = int(self._clock.now())
        if deferral:
            self._metrics.add_metric(name="DeliveryDeferred", unit="Count", value=1)
            release = self._inbox.defer
        else:
            self._metrics.add_metric(name="DeliveryRetried", unit="Count", value=1)
            release = self._inbox.release_for_retry
        try:
            release(delivery.pk, owner, error, now + delay, now)
        except LeaseLost:
            self._log.warning("lease lost before releasing", extra={"delivery": delivery.pk})
            return
        if receipt_handle is not None:
            self._defer(receipt_handle, delay)

    def _defer(self, receipt_handle: str, delay: int) -> None:
        try:
            self._queue.defer(receipt_handle, delay)
        except QueueUnavailable as exc:
            # The message comes back after the queue's own visibility timeout instead.
            self._log.warning("could not shorten the retry delay", extra={"error": str(exc)})

    def _give_up(self, delivery: Delivery, owner: str, error: str) -> str:
        if not set_aside(self._inbox, self._dead_letters, delivery.pk, owner, error, int(self._clock.now())):
            self._log.warning("lease lost before failing", extra={"delivery": delivery.pk})
            return "lease lost"
        self._metrics.add_metric(name="DeliveryFailed", unit="Count", value=1)
        self._log.error("delivery set aside as failed", extra={"delivery": delivery.pk, "error": error[:200]})
        return f"failed: {error}"


def outcome_kind(outcome: str) -> str | None:
    """An outcome's leading words ("support-inbox: completed"), without the summary that follows."""
    kept = []
    for part in outcome.split(": ", 2)[:2]:
        if not _WORD.fullmatch(part):
            break
        kept.append(part)
    return ": ".join(kept) or None


def set_aside(
    inbox: InboxStore, dead_letters: DeadLetters, pk: str, owner: str, error: str, now: int
) -> bool:
    """Dead-letter a delivery and mark it failed while ``owner`` holds it; False if the lease moved on."""
    # Dead-letter first: if marking failed then fails, the pointer is already set aside.
    dead_letters.send(pk, error)
    try:
        inbox.fail(pk, owner, error, now)
    except LeaseLost:
        return False
    return True
