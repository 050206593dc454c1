"""The real SDK's client for a local stub: what tests, rigs and benchmarks call the stub with.

The stub speaks plain HTTP on loopback, so the client needs no TLS context. The SDK's default
builds one anyway (the system's trust store, ~30 ms), for every client: tests make thousands.
"""

from __future__ import annotations

from typing import Any


def stub_client(base_url: str, api_key: str = "stub", **options: Any) -> Any:
    """``anthropic.Anthropic`` at ``base_url`` (the stub's), no retries unless ``options`` say so."""
    import anthropic

    if not base_url.startswith("http://127.0.0.1:"):
        raise ValueError(f"stub_client is for a local stub on loopback, not {base_url!r}")
    plain = anthropic.DefaultHttpxClient(verify=False)  # noqa: S501 - plain HTTP on loopback: no TLS
    return anthropic.Anthropic(
        api_key=api_key, base_url=base_url, http_client=plain, **{"max_retries": 0, **options}
    )
