"""Webhook receipt: verify, identify, store once, queue a pointer, answer fast."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from lockgate import tracing
from lockgate.clock import Clock
from lockgate.config import DEFAULT_MAX_BODY_BYTES, ReceiptConfig, SourceConfig
from lockgate.errors import ConfigError, InvalidSignature, QueueUnavailable, SecretUnavailable, UnknownSource
from lockgate.http import HttpResponse, RawRequest, json_response
from lockgate.inbox.bodies import BodyStore
from lockgate.inbox.models import Delivery, Status, delivery_key
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.secrets import SecretResolver
from lockgate.telemetry import Log, Metrics
from lockgate.webhooks.schemes import DeliveryIdentity, Scheme, check_secrets, scheme_for

DAY = 86_400


@dataclass(frozen=True)
class VerifiedSource:
    """A configured source with its scheme, ready to verify."""

    config: SourceConfig
    scheme: Scheme


class Receiver:
    """The webhook receiver's core. Clients and settings are injected by the handler."""

    def __init__(
        self,
        *,
        config: ReceiptConfig,
        secrets: SecretResolver,
        inbox: InboxStore,
        queue: InboxQueue,
        bodies: BodyStore,
        clock: Clock,
        log: Log,
        metrics: Metrics,
    ) -> None:
        self._config = config
        self._secrets = secrets
        self._inbox = inbox
        self._queue = queue
        self._bodies = bodies
        self._clock = clock
        self._log = log
        self._metrics = metrics
        self._sources = {name: VerifiedSource(src, scheme_for(src)) for name, src in config.sources.items()}

    def check_secrets(self) -> None:
        """Read every source's secrets at cold start (one round trip); log the sources that cannot verify."""
        self._secrets.prefetch([ref for s in self._sources.values() for ref in s.config.secrets])
        for name, source in self._sources.items():
            try:
                self._keys(source)
            except SecretUnavailable as exc:
                # Not fatal: this source answers 503 until its secret exists, the others work.
                self._log.warning("source cannot verify yet", extra=_secret_context(source, exc))
                continue
            self._log.info("source ready", extra={"source": name, "scheme": source.config.scheme})

    def _keys(self, source: VerifiedSource) -> list[str]:
        """The source's usable secrets, else SecretUnavailable: that source fails closed, no other."""
        refs = source.config.secrets
        try:
            keys = self._secrets.resolve_all(refs)
            check_secrets(source.config, keys)
        except ConfigError as exc:  # missing, empty or unusable: never verify with it, never skip it
            self._secrets.distrust(refs)
            raise SecretUnavailable(str(exc)) from exc
        return keys

    def receive(self, request: RawRequest) -> HttpResponse:
        """Handle one POST /webhooks/{source}; raise domain errors for the caller to map."""
        name = request.path_params.get("source", "")
        source = self._sources.get(name)
        request.check_size(source.config.max_body_bytes if source else DEFAULT_MAX_BODY_BYTES)
        if source is None:
            raise UnknownSource(name[:64])
        body = request.body()
        now = self._clock.now()
        try:
            keys = self._keys(source)
        except SecretUnavailable as exc:
            self._metrics.add_metric(name="SecretUnavailable", unit="Count", value=1)
            self._log.error("secret unavailable, answering 503", extra=_secret_context(source, exc))
            raise
        try:
            source.scheme.verify(body, request.headers, keys, now)
        except InvalidSignature as exc:
            self._metrics.add_metric(name="SignatureRejected", unit="Count", value=1)
            self._log.warning("signature rejected", extra={"source": name, "reason": exc.reason})
            raise
        identity = source.scheme.identify(body, request.headers)
        if identity.challenge is not None:
            return json_response(200, {"challenge": identity.challenge})
        pk = delivery_key(name, identity.delivery_id)
        attributes = {
            "lockgate.delivery.id": pk,
            "lockgate.source": name,
            "lockgate.event_type": identity.event_type,
        }
        with tracing.span(f"receive {name}", attributes=attributes):
            return self._store(source.config, identity, pk, body, request.headers, int(now))

    def _store(
        self,
        source: SourceConfig,
        identity: DeliveryIdentity,
        pk: str,
        body: bytes,
        headers: Mapping[str, str],
        now: int,
    ) -> HttpResponse:
        inline = len(body) <= self._config.inbox.max_item_body_bytes
        delivery = Delivery(
            pk=pk,
            source=source.name,
            delivery_id=identity.delivery_id,
            event_type=identity.event_type,
            event_time=identity.event_time,
            status=Status.RECEIVED,
            received_at=now,
            available_at=now,
            body=body if inline else None,
            body_ref=None if inline else self._bodies.put(pk, body),
            body_sha256=hashlib.sha256(body).hexdigest(),
            body_bytes=len(body),
            content_type=headers.get("content-type", "")[:100],
            ttl=now + self._config.inbox.retention_days * DAY,
            # The worker's span, hours later maybe, joins this trace; an untraced receiver (deployed
            # without the wrapper, docs/operate.md) still names the delivery's trace.
            trace=tracing.traceparent() or tracing.mint(),
        )
        stored = self._inbox.put_new(delivery)
        context = {"delivery": pk, "event_type": identity.event_type}
        # A put applied whose answer was lost, which botocore then retried, finds its own item: its
        # trace is this receipt's (one per receipt), so the delivery is new and its pointer owed.
        if stored.created or (stored.existing is not None and stored.existing.trace == delivery.trace):
            self._metrics.add_metric(name="DeliveryStored", unit="Count", value=1)
            self._log.info("delivery stored", extra=context)
            self._send_pointer(pk)
            return json_response(200, {"status": "accepted", "delivery": pk})
        self._metrics.add_metric(name="DeliveryDuplicate", unit="Count", value=1)
        existing = stored.existing
        tracing.annotate(
            {
                "lockgate.duplicate": True,
                "lockgate.stored_trace": tracing.trace_id(existing.trace if existing else None),
            }
        )
        if existing and existing.status is Status.RECEIVED and self._looks_stranded(existing, now):
            # The first queue send may have failed after the store: re-queue. A spare
            # pointer is harmless, the worker's lease makes it a no-op.
            self._log.info("duplicate of a waiting delivery, re-queueing", extra=context)
            self._send_pointer(pk)
        else:
            self._log.info("duplicate delivery", extra=context)
        return json_response(200, {"status": "duplicate", "delivery": pk})

    def _looks_stranded(self, existing: Delivery, now: int) -> bool:
        waited_since = max(existing.received_at, existing.available_at)
        return now - waited_since >= self._config.inbox.requeue_after_seconds

    def _send_pointer(self, pk: str) -> None:
        try:
            self._queue.send(pk)
        except QueueUnavailable as exc:
            # Stored is acknowledged: a later duplicate or the inbox sweep re-queues it.
            self._metrics.add_metric(name="QueueSendFailed", unit="Count", value=1)
            self._log.error(
                "queue send failed; delivery stays stored", extra={"delivery": pk, "error": str(exc)}
            )


def _secret_context(source: VerifiedSource, exc: SecretUnavailable) -> dict[str, object]:
    """What a log line says about a source's unavailable secret: references and reason, never a value."""
    return {"source": source.config.name, "secrets": list(source.config.secrets), "reason": str(exc)}
