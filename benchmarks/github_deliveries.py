"""The deliveries the receiver benchmarks send: realistic GitHub payloads, signed as GitHub signs them."""

from __future__ import annotations

import json
from typing import Any

SECRET = "It's a Secret to Everybody"


def github_body(number: int) -> bytes:
    """A realistic GitHub ``issues`` payload (~2.5 KB), different per delivery."""
    user = {
        "login": "octocat",
        "id": 583231,
        "type": "User",
        "site_admin": False,
        "html_url": "https://github.com/octocat",
        "avatar_url": "https://avatars.githubusercontent.com/u/583231",
    }
    payload = {
        "action": "opened",
        "issue": {
            "url": f"https://api.github.com/repos/acme/shop/issues/{number}",
            "html_url": f"https://github.com/acme/shop/issues/{number}",
            "id": 1_000_000 + number,
            "number": number,
            "state": "open",
            "locked": False,
            "title": f"Refund for order #{40_000 + number} never arrived",
            "body": ("I was promised a refund two weeks ago and nothing has happened. " * 12).strip(),
            "user": user,
            "labels": [{"name": "support", "color": "d73a4a"}],
            "comments": 0,
            "created_at": "2026-01-01T10:00:00Z",
            "updated_at": "2026-01-01T10:00:00Z",
        },
        "repository": {
            "id": 4242,
            "name": "shop",
            "full_name": "acme/shop",
            "private": True,
            "owner": user,
            "html_url": "https://github.com/acme/shop",
            "default_branch": "main",
        },
        "sender": user,
        "installation": {"id": 77},
    }
    return json.dumps(payload, indent=2).encode()


def signed_event(body: bytes, now: float, delivery_id: str) -> dict[str, Any]:
    """The API Gateway v2 event for one GitHub delivery, signed as GitHub signs it."""
    from lockgate.config import SourceConfig
    from lockgate.webhooks.signing import sign

    source = SourceConfig(name="github", scheme="github", secrets=("env:GITHUB_WEBHOOK_SECRET",))
    headers = sign(source, SECRET, body, int(now), delivery_id=delivery_id, event_type="issues")
    return {
        "pathParameters": {"source": "github"},
        "headers": {**headers, "content-length": str(len(body))},
        "body": body.decode(),
        "isBase64Encoded": False,
    }
