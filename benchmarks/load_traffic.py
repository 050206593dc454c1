"""The load benchmark's traffic: new deliveries, duplicates and forgeries, and the senders posting
them concurrently over keep-alive connections."""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Request:
    """One POST the senders make."""

    delivery_id: str
    body: bytes
    kind: str  # new | duplicate | forged


def traffic(count: int, seed: int = 7) -> list[Request]:
    """``count`` requests: ~30% duplicates of earlier deliveries, ~5% forged, in a shuffled order."""
    rng = random.Random(seed)  # noqa: S311 - reproducible traffic, not security
    requests: list[Request] = []
    distinct: list[Request] = []
    for n in range(count):
        roll = rng.random()
        if roll < 0.05:
            requests.append(Request(f"forged-{n:05d}", body(n), "forged"))
        elif roll < 0.35 and distinct:
            original = rng.choice(distinct)
            requests.append(Request(original.delivery_id, original.body, "duplicate"))
        else:
            request = Request(f"load-{n:05d}", body(n), "new")
            distinct.append(request)
            requests.append(request)
    return requests


def renamed(requests: list[Request], label: str) -> list[Request]:
    """The same requests with ids of their own for the phase ``label`` (else later ones see duplicates)."""
    return [Request(f"{label}-{r.delivery_id}", r.body, r.kind) for r in requests]


def body(n: int) -> bytes:
    """A small GitHub ``push`` payload, different per ``n``."""
    return json.dumps(
        {"ref": "refs/heads/main", "after": f"{n:040x}", "commits": [{"id": f"{n:040x}"}]}
    ).encode()


def send_all(
    url: str, requests: list[Request], sign: Callable[[Request], dict[str, str]], senders: int
) -> tuple[float, dict[str, Counter[int]]]:
    """Every request, from ``senders`` threads each with its own keep-alive connection."""
    parts = urlsplit(url)
    statuses: dict[str, Counter[int]] = {"new": Counter(), "duplicate": Counter(), "forged": Counter()}
    lock = threading.Lock()
    local = threading.local()

    def post(request: Request) -> None:
        if not hasattr(local, "conn"):
            local.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
        local.conn.request("POST", "/webhooks/github", body=request.body, headers=sign(request))
        response = local.conn.getresponse()
        response.read()
        with lock:
            statuses[request.kind][response.status] += 1

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=senders) as pool:
        list(pool.map(post, requests))
    return time.perf_counter() - started, statuses
