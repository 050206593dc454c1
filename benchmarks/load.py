"""Load on the embedded local stack (loopback only): many concurrent senders, duplicates and forgeries.

Two receivers take the same traffic through the same gateway, moto server and tables, one after
the other: Lockgate's receiver function (``functions/webhook_receiver``), then the Powertools-
idempotency baseline from ``benchmarks/baseline.py`` (its pointers go to a scratch queue, so the
worker never sees them). Then the worker's pollers start and everything Lockgate stored must be
processed, once.

Three phases, in this order: the whole Lambda handler (with Powertools' logger and metrics
decorators), the same receiver core without them, and the baseline core. Later phases run against
fuller tables, so the order favours the baseline if anything.

Figures: deliveries per second (wall clock, all senders), and p50/p99 of the handler's own time:
the time inside the function minus the time it spent in AWS calls (botocore to the moto server
and back), i.e. our code, not moto's. Ratios are ours ÷ baseline, measured in one process.

Checks (exit 1 on any failure): stored = the distinct valid deliveries; every duplicate answered
200; every forgery answered 401; every stored delivery processed exactly once (done, attempt 1).

Run: ``python -m benchmarks.load [--deliveries 2000] [--senders 20]``; ~5–8 min for 2,000 on
2 cores, most of it the local worker draining the queue.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import io
import json
import logging
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

RECEIVER = "WebhookReceiverFunction"
FORGED = "not-the-secret-at-all"  # noqa: S105 - the forger's key, by design


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
            requests.append(Request(f"forged-{n:05d}", _body(n), "forged"))
        elif roll < 0.35 and distinct:
            original = rng.choice(distinct)
            requests.append(Request(original.delivery_id, original.body, "duplicate"))
        else:
            request = Request(f"load-{n:05d}", _body(n), "new")
            distinct.append(request)
            requests.append(request)
    return requests


def _renamed(requests: list[Request], phase: int) -> list[Request]:
    return [Request(f"p{phase}-{r.delivery_id}", r.body, r.kind) for r in requests]


def _body(n: int) -> bytes:
    return json.dumps(
        {"ref": "refs/heads/main", "after": f"{n:040x}", "commits": [{"id": f"{n:040x}"}]}
    ).encode()


class HandlerClock:
    """Per request: time inside the function, and the part of it spent in AWS calls (per thread)."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self.own_seconds: list[float] = []

    def aws_calls(self) -> AbstractContextManager[None]:
        """Count time inside botocore's API calls towards the calling thread's AWS time."""
        from lockgate_infra.api_calls import intercepted

        def timed(client: Any, operation: str, params: dict[str, Any], send: Callable[[], Any]) -> Any:
            started = time.perf_counter()
            try:
                return send()
            finally:
                self._local.aws = getattr(self._local, "aws", 0.0) + time.perf_counter() - started

        return intercepted(timed)

    def wrap(self, invoke: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
        """The gateway's invoke, timed."""

        def timed(logical_id: str, event: Any) -> Any:
            self._local.aws = 0.0
            started = time.perf_counter()
            try:
                return invoke(logical_id, event)
            finally:
                own = time.perf_counter() - started - self._local.aws
                with self._lock:
                    self.own_seconds.append(own)

        return timed


@dataclass
class Phase:
    """One receiver's run over the traffic."""

    name: str
    seconds: float = 0.0
    statuses: dict[str, Counter[int]] = field(default_factory=dict)
    own_seconds: list[float] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return sum(sum(c.values()) for c in self.statuses.values()) / self.seconds

    def percentile_ms(self, q: float) -> float:
        ordered = sorted(self.own_seconds)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


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


def run(deliveries: int, senders: int, out: Any = sys.stdout) -> int:
    """Both phases, the processing check and the report; 0 when every check passed."""
    import os

    from benchmarks.baseline import PowertoolsReceiver
    from lockgate.config import load_config
    from lockgate.errors import LockgateError
    from lockgate.http import RawRequest, error_response
    from lockgate.webhooks.signing import sign
    from lockgate_infra.local.run import seed_secrets
    from lockgate_infra.local.stack import LocalStack
    from lockgate_infra.local.workflows import seed_workflows

    requests = traffic(deliveries)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    quiet = {
        "POWERTOOLS_LOG_LEVEL": "ERROR",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "APPROVAL_CHANNELS": "print",
    }
    # The functions' own JSON logs and the gateway's error lines would bury the report.
    with _quiet_gateway(), contextlib.redirect_stdout(io.StringIO()), LocalStack(environment=quiet) as stack:
        config = load_config(stack.config_path)
        secrets = seed_secrets(stack)
        seed_workflows(stack)
        gateway = stack.start_gateway(0)
        source = config.sources["github"]

        def signer(request: Request) -> dict[str, str]:
            secret = FORGED if request.kind == "forged" else secrets["github"]
            return sign(source, secret, request.body, int(time.time()), request.delivery_id, "push")

        baseline = PowertoolsReceiver(
            stack.client("dynamodb"),
            stack.client("sqs"),
            deliveries_table=stack.resources["InboxTable"],
            idempotency_table=stack.resources["StateTable"],
            queue_url=stack.client("sqs").create_queue(QueueName="baseline-load-scratch")["QueueUrl"],
            secret=secrets["github"],
            now=time.time,
        )
        # Warm both up (imports, first secret fetch, connections) outside the figures.
        warm = [Request(f"warm-{n}", _body(n), "new") for n in range(senders)]
        send_all(gateway.url, warm, signer, senders)
        gateway.invoke = lambda _, event: baseline.handle(event)
        send_all(
            gateway.url, [Request(f"warm-base-{n}", _body(n), "new") for n in range(senders)], signer, senders
        )
        receiver = stack.load_function(RECEIVER).module.receiver

        def core(_: str, event: Any) -> Any:  # what the handler does, without Powertools' decorators
            try:
                return receiver.receive(RawRequest.from_apigw_v2(event)).to_apigw()
            except LockgateError as exc:
                return error_response(exc).to_apigw()

        # The same traffic three times: the ids repeat, so phases 2 and 3 see only duplicates of
        # phase 1 unless each phase gets its own ids.
        contenders: list[tuple[str, Callable[[str, Any], Any]]] = [
            ("lockgate handler", stack.invoke),
            ("lockgate core", core),
            ("baseline core", lambda _, event: baseline.handle(event)),
        ]
        phases = []
        for n, (name, invoke) in enumerate(contenders):
            clock = HandlerClock()
            with clock.aws_calls():
                gateway.invoke = clock.wrap(invoke)
                phase = Phase(name)
                phase.seconds, phase.statuses = send_all(gateway.url, _renamed(requests, n), signer, senders)
                phase.own_seconds = clock.own_seconds
                phases.append(phase)
        stack.start_pollers(wait_seconds=0)
        processed = stack.drain(timeout=max(120.0, deliveries * 0.4))  # the local poller does ~10/s
        rows = _inbox_rows(stack)
    return report(requests, phases, rows, processed, out)


@contextmanager
def _quiet_gateway() -> Iterator[None]:
    logger = logging.getLogger("lockgate_infra.local")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _inbox_rows(stack: Any) -> list[dict[str, Any]]:
    db, items, start = stack.client("dynamodb"), list[dict[str, Any]](), None
    while True:
        page = db.scan(
            TableName=stack.resources["InboxTable"], **({"ExclusiveStartKey": start} if start else {})
        )
        items.extend(i for i in page["Items"] if i["pk"]["S"].startswith("github#p0-"))
        start = page.get("LastEvaluatedKey")
        if not start:
            return items


def report(
    requests: list[Request], phases: list[Phase], rows: list[dict[str, Any]], drained: bool, out: Any
) -> int:
    """Print the checks and the ratios; 0 when every check passed."""
    ours, core, base = phases
    distinct = {f"p0-{r.delivery_id}" for r in requests if r.kind == "new"}
    stored = {row["pk"]["S"].removeprefix("github#") for row in rows}
    once = [row for row in rows if row["status"]["S"] == "done" and row.get("attempts", {}).get("N") == "1"]
    checks = {
        "stored = distinct valid deliveries": stored == distinct,
        "every new delivery answered 200": set(ours.statuses["new"]) == {200},
        "every duplicate answered 200": set(ours.statuses["duplicate"]) <= {200},
        "every forgery answered 401": set(ours.statuses["forged"]) == {401},
        "every stored delivery processed once": drained and len(once) == len(distinct),
    }
    counts = Counter(r.kind for r in requests)
    print(f"Load: {len(requests)} requests ({counts['new']} new, {counts['duplicate']} duplicates, "
          f"{counts['forged']} forged) from the senders, on loopback", file=out)  # fmt: skip
    for name, ok in checks.items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}", file=out)
    if not checks["every stored delivery processed once"]:
        states = Counter((row["status"]["S"], row.get("attempts", {}).get("N")) for row in rows)
        print(f"       queue drained: {drained}; (status, attempts): {dict(states)}", file=out)
    print(
        "\n| receiver | deliveries/s | p50 own ms | p99 own ms | duplicates answered |\n"
        "|---|---|---|---|---|",
        file=out,
    )
    for phase in phases:
        dups = ", ".join(f"{status}×{n}" for status, n in sorted(phase.statuses["duplicate"].items()))
        print(f"| {phase.name} | {phase.per_second:.0f} | {phase.percentile_ms(0.5):.2f} | "
              f"{phase.percentile_ms(0.99):.2f} | {dups} |", file=out)  # fmt: skip
    print(f"\nRatios, lockgate core ÷ baseline core: deliveries/s {core.per_second / base.per_second:.2f}, "
          f"p50 {core.percentile_ms(0.5) / base.percentile_ms(0.5):.2f}, "
          f"p99 {core.percentile_ms(0.99) / base.percentile_ms(0.99):.2f}", file=out)  # fmt: skip
    decorators = ours.percentile_ms(0.5) / core.percentile_ms(0.5)
    print(f"The full handler (Powertools logger + metrics) takes {decorators:.2f}× the core's p50", file=out)
    return 0 if all(checks.values()) else 1


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=2000)
    parser.add_argument("--senders", type=int, default=20)
    args = parser.parse_args(argv)
    return run(args.deliveries, args.senders)


if __name__ == "__main__":
    sys.exit(main())
