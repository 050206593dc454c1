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
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from benchmarks.load_faults import Retries


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
    url: str,
    requests: list[Request],
    sign: Callable[[Request], dict[str, str]],
    senders: int,
    retries: Retries | None = None,
    resent: Counter[str] | None = None,
) -> tuple[float, dict[str, Counter[int]]]:
    """Every request, from ``senders`` threads each with its own keep-alive connection.

    With ``retries``, the provider sends a request again (same id) after a 5xx, and after a 200 it
    never saw; ``resent`` counts those by reason. The status kept is the last one.
    """
    parts = urlsplit(url)
    statuses: dict[str, Counter[int]] = {"new": Counter(), "duplicate": Counter(), "forged": Counter()}
    lock = threading.Lock()
    local = threading.local()
    again = retries.rates.retries if retries else 0

    def once(request: Request) -> int:
        if not hasattr(local, "conn"):
            local.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
        local.conn.request("POST", "/webhooks/github", body=request.body, headers=sign(request))
        response = local.conn.getresponse()
        response.read()
        return response.status

    def resend_reason(request: Request, status: int, attempt: int) -> str | None:
        if status >= 500:
            return "5xx"
        if status == 200 and retries is not None and retries.lost(request.delivery_id, attempt):
            return "lost 200"
        return None

    def post(request: Request) -> None:
        for attempt in range(again + 1):
            status = once(request)
            reason = resend_reason(request, status, attempt)
            if reason is None or attempt == again:
                break
            if resent is not None:
                with lock:
                    resent[reason] += 1
        with lock:
            statuses[request.kind][status] += 1

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=senders) as pool:
        list(pool.map(post, requests))
    return time.perf_counter() - started, statuses
