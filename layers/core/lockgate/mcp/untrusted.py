"""Text a server supplied, made safe to show: clipped, on one line, control characters escaped."""

from __future__ import annotations

import hashlib


def one_line(text: str, limit: int = 200) -> str:
    """Untrusted text made safe to show: control characters escaped, one line, at most ``limit``."""
    shown = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def clip(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters; a longer one ends with a note and a digest of the rest."""
    if len(text) <= limit:
        return text
    rest = text[limit:]
    digest = hashlib.sha256(rest.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{text[:limit]}… [cut: {len(rest)} more characters, sha256 {digest}]"
