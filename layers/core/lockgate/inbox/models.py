"""What the inbox stores about a delivery."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lockgate.index_shards import index_shard


class Status(StrEnum):
    """Where a delivery is in its life."""

    RECEIVED = "received"
    PROCESSING = "processing"
    DONE = "done"
    FAILED = "failed"


def delivery_key(source: str, delivery_id: str) -> str:
    """The inbox key: stable across provider retries, so a repeat is a duplicate."""
    return f"{source}#{delivery_id}"


@dataclass(frozen=True)
class Delivery:
    """One stored delivery; ``body`` is inline unless ``body_ref`` points to S3."""

    pk: str
    source: str
    delivery_id: str
    event_type: str
    status: Status
    received_at: int
    available_at: int
    attempts: int = 0
    deferrals: int = 0  # times a handler said "not now" (capacity, budget, a batch): not attempts
    event_time: int | None = None
    body: bytes | None = None
    body_ref: str | None = None
    body_sha256: str = ""
    body_bytes: int = 0
    content_type: str = ""
    lease_owner: str | None = None
    lease_expires_at: int | None = None
    last_error: str | None = None
    outcome: str | None = None
    updated_at: int | None = None
    ttl: int | None = None
    replay_of: str | None = None  # an operator's replay: the done delivery it runs again
    replayed_by: str | None = None
    trace: str | None = None  # the W3C traceparent of the span that stored it (lockgate.tracing)

    def to_item(self) -> dict[str, Any]:
        """The DynamoDB item (resource-style, plain Python values), without empty fields."""
        item: dict[str, Any] = {
            "pk": self.pk,
            "source": self.source,
            "delivery_id": self.delivery_id,
            "event_type": self.event_type,
            "status": self.status.value,
            "received_at": self.received_at,
            "available_at": self.available_at,
            "attempts": self.attempts,
            "body_sha256": self.body_sha256,
            "body_bytes": self.body_bytes,
            "index_shard": index_shard(self.pk),  # its partition in the by-status-sharded index
        }
        optional = {
            "event_time": self.event_time,
            "body": self.body,
            "body_ref": self.body_ref,
            "content_type": self.content_type or None,
            "lease_owner": self.lease_owner,
            "lease_expires_at": self.lease_expires_at,
            "last_error": self.last_error,
            "outcome": self.outcome,
            "updated_at": self.updated_at,
            "ttl": self.ttl,
            "deferrals": self.deferrals or None,
            "replay_of": self.replay_of,
            "replayed_by": self.replayed_by,
            "trace": self.trace,
        }
        item.update({k: v for k, v in optional.items() if v is not None})
        return item

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> Delivery:
        """Rebuild from a DynamoDB item in low-level (typed) form."""
        plain = {k: _plain(v) for k, v in item.items()}
        return cls(
            pk=plain["pk"],
            source=plain.get("source", ""),
            delivery_id=plain.get("delivery_id", ""),
            event_type=plain.get("event_type", "unknown"),
            status=Status(plain.get("status", Status.RECEIVED.value)),
            received_at=int(plain.get("received_at", 0)),
            available_at=int(plain.get("available_at", 0)),
            attempts=int(plain.get("attempts", 0)),
            deferrals=int(plain.get("deferrals", 0)),
            event_time=_opt_int(plain.get("event_time")),
            body=plain.get("body"),
            body_ref=plain.get("body_ref"),
            body_sha256=plain.get("body_sha256", ""),
            body_bytes=int(plain.get("body_bytes", 0)),
            content_type=plain.get("content_type", ""),
            lease_owner=plain.get("lease_owner"),
            lease_expires_at=_opt_int(plain.get("lease_expires_at")),
            last_error=plain.get("last_error"),
            outcome=plain.get("outcome"),
            updated_at=_opt_int(plain.get("updated_at")),
            ttl=_opt_int(plain.get("ttl")),
            replay_of=plain.get("replay_of"),
            replayed_by=plain.get("replayed_by"),
            trace=plain.get("trace"),
        )


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _plain(value: dict[str, Any]) -> Any:
    """One low-level attribute value ({"S": ...}) as a Python value."""
    ((kind, raw),) = value.items()
    if kind == "S":
        return raw
    if kind == "N":
        return int(raw) if raw.lstrip("-").isdigit() else float(raw)
    if kind == "B":
        return bytes(raw)
    if kind == "BOOL":
        return bool(raw)
    if kind == "NULL":
        return None
    raise ValueError(f"unsupported attribute type {kind}")


def to_attribute(value: Any) -> dict[str, Any]:
    """A Python value as a low-level attribute value."""
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, (int, float)):
        return {"N": str(value)}
    if isinstance(value, (bytes, bytearray)):
        return {"B": bytes(value)}
    if value is None:
        return {"NULL": True}
    return {"S": str(value)}
