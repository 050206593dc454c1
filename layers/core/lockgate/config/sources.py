"""What the webhook receiver reads of ``lockgate.toml``: ``[sources]`` and ``[inbox]``.

Apart from the rest of the config so that the receiver's cold start builds only these types
(each dataclass is about half a millisecond of generated code; benchmarks/cold_start.py). The
other functions read the whole file through ``lockgate.config.parsing``, which parses these two
sections with the functions here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lockgate.config.files import known_sections, no_unknown, positive_int, read_config, table
from lockgate.errors import ConfigError

SCHEMES = frozenset({"github", "stripe", "standard", "slack", "shopify", "hmac"})
SECRET_PREFIXES = ("env:", "secretsmanager:")
SOURCE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
DEFAULT_MAX_BODY_BYTES = 1_048_576
_STRING_OPTIONS = (
    "header",
    "encoding",
    "prefix",
    "algorithm",
    "id_header",
    "id_field",
    "event_type_header",
    "event_type_field",
)


@dataclass(frozen=True)
class SourceConfig:
    """One webhook provider: how its deliveries are signed and identified."""

    name: str
    scheme: str  # github, stripe, standard (Standard Webhooks / Svix), slack, shopify or hmac
    secrets: tuple[str, ...]  # "env:NAME" or "secretsmanager:ID" references; two while rotating
    tolerance_seconds: int = 300  # how far a signed timestamp may be from now, either way
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES  # larger deliveries are refused (413)
    # Options of the generic ``hmac`` scheme: the signature header, its prefix and encoding.
    header: str | None = None
    encoding: str = "hex"  # hex or base64
    prefix: str = ""  # e.g. "sha256=" before the signature
    algorithm: str = "sha256"  # sha1, sha256 or sha512
    id_header: str | None = None  # the delivery id's header (else id_field, else the body's hash)
    id_field: str | None = None  # the delivery id's JSON field (dotted path)
    event_type_header: str | None = None  # the event type's header
    event_type_field: str | None = None  # the event type's JSON field (dotted path)


@dataclass(frozen=True)
class InboxConfig:
    """How deliveries are retried and kept."""

    max_attempts: int = 5  # attempts before a delivery is set aside in the dead-letter queue
    backoff_base_seconds: int = 2  # first retry delay; doubles each attempt (full jitter)
    backoff_cap_seconds: int = 900  # longest retry delay
    requeue_after_seconds: int = 120  # the sweeper re-queues a delivery left this long unclaimed
    retention_days: int = 14  # how long deliveries are kept (TTL), longer than any provider retries
    max_item_body_bytes: int = 200_000  # larger bodies go to S3 with a pointer
    defer_limit_hours: int = 48  # how long a deferred delivery may keep waiting after it arrived


@dataclass(frozen=True)
class ReceiptConfig:
    """The sections the webhook receiver reads: its sources and the inbox's limits."""

    sources: Mapping[str, SourceConfig]
    inbox: InboxConfig = field(default_factory=InboxConfig)

    def source(self, name: str) -> SourceConfig | None:
        """The source called ``name``, or None."""
        return self.sources.get(name)


def load_receipt_config(path: str | Path, stage: str | None = None) -> ReceiptConfig:
    """Read and validate ``[sources]`` and ``[inbox]`` of a ``lockgate.toml`` (with its stage overlay).

    The other sections are only checked to be sections lockgate.toml has (a misspelt
    ``[source.github]`` is an error, not a missing source): every other function reads the whole
    file at its own cold start (``load_config``).
    """
    raw, origin = read_config(path, stage)
    known_sections(raw, origin)
    return ReceiptConfig(sources=parse_sources(raw, origin), inbox=parse_inbox(raw, origin))


def parse_sources(raw: Mapping[str, Any], origin: str) -> dict[str, SourceConfig]:
    """``[sources.*]`` of an already-parsed document, each validated."""
    return {
        name: _source(name, table(body, f"{origin}: [sources.{name}]"), origin)
        for name, body in table(raw.get("sources", {}), f"{origin}: [sources]").items()
    }


def parse_inbox(raw: Mapping[str, Any], origin: str) -> InboxConfig:
    """``[inbox]`` of an already-parsed document: positive whole numbers over the defaults."""
    body = table(raw.get("inbox", {}), f"{origin}: [inbox]")
    no_unknown(body, set(InboxConfig.__dataclass_fields__), f"{origin}: [inbox]")
    return InboxConfig(**{k: positive_int(v, f"{origin}: inbox.{k}") for k, v in body.items()})


def _source(name: str, body: Mapping[str, Any], origin: str) -> SourceConfig:
    where = f"{origin}: [sources.{name}]"
    if not SOURCE_NAME.match(name):
        raise ConfigError(f"{where}: source names are lowercase letters, digits, '-' and '_'")
    no_unknown(body, {f for f in SourceConfig.__dataclass_fields__ if f != "name"}, where)
    scheme = body.get("scheme")
    if scheme not in SCHEMES:
        raise ConfigError(f"{where}: scheme must be one of {sorted(SCHEMES)}, got {scheme!r}")
    secrets = body.get("secrets")
    if not isinstance(secrets, list) or not secrets:
        raise ConfigError(f'{where}: secrets must be a non-empty list, e.g. ["env:NAME"]')
    for ref in secrets:
        if not isinstance(ref, str) or not ref.startswith(SECRET_PREFIXES) or ref.endswith(":"):
            raise ConfigError(f'{where}: each secret is "env:NAME" or "secretsmanager:NAME"')
    options: dict[str, Any] = {}
    for key in ("tolerance_seconds", "max_body_bytes"):
        if key in body:
            options[key] = positive_int(body[key], f"{where} {key}")
    for key in _STRING_OPTIONS:
        if key in body:
            if not isinstance(body[key], str):
                raise ConfigError(f"{where}: {key} must be a string")
            options[key] = body[key]
    if scheme == "hmac":
        if not options.get("header"):
            raise ConfigError(f'{where}: the hmac scheme needs header = "X-Signature-Header"')
        if options.get("encoding", "hex") not in ("hex", "base64"):
            raise ConfigError(f'{where}: encoding must be "hex" or "base64"')
        if options.get("algorithm", "sha256") not in ("sha1", "sha256", "sha512"):
            raise ConfigError(f"{where}: algorithm must be sha1, sha256 or sha512")
    return SourceConfig(name=name, scheme=scheme, secrets=tuple(secrets), **options)
