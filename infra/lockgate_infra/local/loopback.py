"""HTTP to the embedded stack's gateway (loopback only): (status, text), no raise on 4xx/5xx."""

from __future__ import annotations

import urllib.error
import urllib.request


def request(url: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, str]:
    """GET, or POST when a body is given; returns (status, text)."""
    method = "POST" if body is not None else "GET"
    req = urllib.request.Request(url, data=body, headers=headers or {}, method=method)  # noqa: S310 - loopback
    try:
        with urllib.request.urlopen(req, timeout=10) as response:  # noqa: S310 - loopback only
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
