"""A configured MCP server: its URL, pinned protocol version, credential, timeouts and size limits."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

MODERN_PROTOCOLS = ("2026-07-28",)  # sessionless: no handshake, a version pin adopted as is
HANDSHAKE_PROTOCOLS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # initialize + session
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP header name (RFC 9110 token)
# Headers the SDK or HTTP itself sets: a configured name may not replace one.
RESERVED_HEADERS = frozenset(
    {"host", "content-type", "content-length", "accept", "connection", "transfer-encoding", "last-event-id"}
)


@dataclass(frozen=True)
class Credential:
    """A resolved secret sent as one request header; its value never shows in a repr."""

    header: str
    value: str = field(repr=False)

    def __post_init__(self) -> None:
        check_header_name(self.header, "the credential's header")
        if not self.value or any(ch in self.value for ch in "\r\n\0"):
            raise ValueError(f"the credential for header {self.header} is empty or holds a line break")

    @classmethod
    def bearer(cls, token: str) -> Credential:
        """``Authorization: Bearer <token>``."""
        return cls("Authorization", f"Bearer {token}")


def check_header_name(name: str, what: str) -> None:
    """ValueError unless ``name`` is an HTTP header name that neither HTTP nor MCP already uses."""
    if not TOKEN.fullmatch(name) or name.lower() in RESERVED_HEADERS or name.lower().startswith("mcp-"):
        raise ValueError(f"{what} {name!r} is not a header name Lockgate can send")


@dataclass(frozen=True)
class ServerSettings:
    """One configured MCP server: where it is, how to authenticate, how long to wait, how much to read."""

    name: str
    url: str
    protocol: str = MODERN_PROTOCOLS[0]
    """The pinned protocol version; ``auto`` negotiates (only to pin: it falls back on any error)."""
    credential: Credential | None = field(default=None, repr=False)
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    """Seconds to wait for each answer, and the SDK's deadline per request."""
    max_result_bytes: int = 100_000
    """A result's content over this is cut, with a note saying so."""
    max_response_bytes: int = 1_048_576
    """An answer over this is not read at all (McpResultTooLarge)."""

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"MCP server {self.name!r}: url must be http:// or https:// with a host")
        if parts.username is not None or parts.password is not None:
            # httpx2 logs each request's URL (INFO): a credential belongs in the credential's header.
            raise ValueError(f"MCP server {self.name!r}: put credentials in its secret, not in the url")
        known = (*MODERN_PROTOCOLS, *HANDSHAKE_PROTOCOLS, "auto")
        if self.protocol not in known:
            raise ValueError(f"MCP server {self.name!r}: protocol must be one of {', '.join(known)}")
        if min(self.connect_timeout, self.read_timeout) <= 0:
            raise ValueError(f"MCP server {self.name!r}: timeouts must be positive")
        if not 0 < self.max_result_bytes <= self.max_response_bytes:
            raise ValueError(f"MCP server {self.name!r}: need 0 < max_result_bytes <= max_response_bytes")

    @property
    def shown_url(self) -> str:
        """The URL without user, password, query or fragment: what may be logged, pinned or shown."""
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        if parts.port is not None:
            netloc += f":{parts.port}"
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
