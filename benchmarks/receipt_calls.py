"""AWS API calls and in-process time per webhook delivery: Lockgate's Receiver vs a
Powertools-idempotency baseline, both over the same in-process moto.

Calls are counted with a botocore ``before-send`` hook on every client each receiver
uses, so retries would count too. Time is ``perf_counter`` around one delivery, from the
API Gateway event to the reply; "excl. moto" subtracts the time spent inside moto's
request dispatch, leaving our code plus botocore's serialisation. moto's time is not AWS
latency: on AWS each call is a network round trip (single-digit ms), so the call count is
what dominates a real delivery's latency.

Run: ``python -m benchmarks.receipt_calls [--new 300] [--dup 300]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.moto_counting import CallCounter, MotoTimer, moto_stack, timed_moto

SECRET = "It's a Secret to Everybody"
TARGET_NEW, TARGET_DUP = 2, 1


@dataclass
class PathFigures:
    """Per-delivery figures for one path (new or duplicate) of one receiver."""

    calls: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    backend_seconds: list[float] = field(default_factory=list)
    operations: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)

    @property
    def calls_per_delivery(self) -> float:
        return statistics.fmean(self.calls)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.seconds) * 1000

    @property
    def median_ms_excl_moto(self) -> float:
        return (
            statistics.median(s - b for s, b in zip(self.seconds, self.backend_seconds, strict=True)) * 1000
        )

    def operations_per_delivery(self) -> str:
        n = len(self.calls)
        return ", ".join(f"{op} ×{count / n:g}" for op, count in sorted(self.operations.items()))


@dataclass
class Contender:
    """A receiver under test: how to post one API Gateway event, and what counts its calls."""

    name: str
    post: Callable[[dict[str, Any]], int]
    counter: CallCounter
    new: PathFigures = field(default_factory=PathFigures)
    duplicate: PathFigures = field(default_factory=PathFigures)

    def deliver(self, event: dict[str, Any], timer: MotoTimer, into: PathFigures | None) -> None:
        calls_before, backend_before = self.counter.total, timer.seconds
        operations_before = Counter(self.counter.operations)
        started = time.perf_counter()
        status = self.post(event)
        elapsed = time.perf_counter() - started
        if into is None:  # warm-up
            return
        into.calls.append(self.counter.total - calls_before)
        into.seconds.append(elapsed)
        into.backend_seconds.append(timer.seconds - backend_before)
        into.operations.update(self.counter.operations - operations_before)
        into.statuses[status] += 1


@dataclass
class Result:
    """Everything one run measured."""

    ours: Contender
    baseline: Contender
    other_paths: dict[str, PathFigures]
    n_new: int
    n_dup: int


# ------------------------------------------------------------------ deliveries


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


def _quiet_logger() -> logging.Logger:
    log = logging.getLogger("lockgate.benchmark")
    log.addHandler(logging.NullHandler())
    log.propagate = False
    return log


def lockgate_receiver(session: Any, names: dict[str, str], clock: Any, secret_ref: str) -> Contender:
    """Lockgate's Receiver for one GitHub source, wired as the handler wires it, with its calls counted."""
    from lockgate.config import parse_config
    from lockgate.errors import LockgateError
    from lockgate.http import RawRequest, error_response
    from lockgate.inbox.bodies import BodyStore
    from lockgate.inbox.queue import InboxQueue
    from lockgate.inbox.receipt import Receiver
    from lockgate.inbox.store import InboxStore
    from lockgate.secrets import SecretResolver
    from lockgate.telemetry import CountingMetrics

    config = parse_config({"sources": {"github": {"scheme": "github", "secrets": [secret_ref]}}})
    clients = {s: session.client(s) for s in ("dynamodb", "sqs", "s3", "secretsmanager")}
    receiver = Receiver(
        config=config,
        secrets=SecretResolver(
            {"GITHUB_WEBHOOK_SECRET": SECRET}, secretsmanager=lambda: clients["secretsmanager"], clock=clock
        ),
        inbox=InboxStore(clients["dynamodb"], names["InboxTable"]),
        queue=InboxQueue(clients["sqs"], names["InboxQueue"]),
        bodies=BodyStore(clients["s3"], names["BodyBucket"]),
        clock=clock,
        log=_quiet_logger(),
        metrics=CountingMetrics(),
    )
    counter = CallCounter()
    counter.attach(*clients.values())
    receiver.check_secrets()

    def post(event: dict[str, Any]) -> int:
        try:
            return receiver.receive(RawRequest.from_apigw_v2(event)).status
        except LockgateError as exc:
            return error_response(exc).status

    return Contender("ours", post, counter)


def baseline_receiver(session: Any, names: dict[str, str], clock: Any) -> Contender:
    """The Powertools-idempotency baseline on the same tables and queue, with its calls counted."""
    from benchmarks.baseline import PowertoolsReceiver

    dynamodb, sqs = session.client("dynamodb"), session.client("sqs")
    baseline = PowertoolsReceiver(
        dynamodb,
        sqs,
        deliveries_table=names["InboxTable"],
        idempotency_table=names["StateTable"],
        queue_url=names["InboxQueue"],
        secret=SECRET,
        now=clock.now,
    )
    counter = CallCounter()
    counter.attach(dynamodb, sqs)
    return Contender("baseline", lambda e: int(baseline.handle(e)["statusCode"]), counter)


# ------------------------------------------------------------------ the run


def measure(n_new: int = 300, n_dup: int = 300, warmup: int = 20, n_other: int = 20) -> Result:
    """Send ``n_new`` new and ``n_dup`` duplicate deliveries to each receiver, interleaved."""
    from lockgate.clock import FixedClock

    clock = FixedClock(float(int(time.time())))
    timer = MotoTimer()
    with moto_stack() as (session, names), timed_moto(timer):
        ours = lockgate_receiver(session, names, clock, "env:GITHUB_WEBHOOK_SECRET")
        base = baseline_receiver(session, names, clock)
        contenders = (ours, base)

        def events(count: int) -> list[dict[str, Any]]:
            return [signed_event(github_body(i), clock.now(), str(uuid.uuid4())) for i in range(count)]

        for event in events(warmup):  # botocore loads models and endpoints on first use
            for c in contenders:
                c.deliver(event, timer, None)
                c.deliver(event, timer, None)
        sent: dict[str, list[dict[str, Any]]] = {c.name: [] for c in contenders}
        for i in range(n_new):
            for c in contenders if i % 2 == 0 else contenders[::-1]:  # alternate to cancel drift
                event = signed_event(github_body(i), clock.now(), str(uuid.uuid4()))
                c.deliver(event, timer, c.new)
                sent[c.name].append(event)
        for i in range(n_dup):  # a provider retry: the very same request again, within seconds
            for c in contenders if i % 2 == 0 else contenders[::-1]:
                c.deliver(sent[c.name][i % len(sent[c.name])], timer, c.duplicate)
        other = _other_paths(ours, clock, timer, n_other)
        other["new, secretsmanager: secret, 300 s cache expired"] = _secret_refresh(
            session, names, clock, timer, n_other
        )
    return Result(ours=ours, baseline=base, other_paths=other, n_new=n_new, n_dup=n_dup)


def _other_paths(ours: Contender, clock: Any, timer: MotoTimer, n: int) -> dict[str, PathFigures]:
    """Lockgate's less common paths, for the record: big bodies and late duplicates."""
    big, big_dup, late = PathFigures(), PathFigures(), PathFigures()
    padding = b" " * 250_000  # over the 200 KB item limit: the body goes to S3
    waiting = []
    for i in range(n):
        body = github_body(i).rstrip(b"}") + padding + b"}"
        event = signed_event(body, clock.now(), str(uuid.uuid4()))
        ours.deliver(event, timer, big)
        ours.deliver(event, timer, big_dup)
        waiting.append(signed_event(github_body(i), clock.now(), str(uuid.uuid4())))
        ours.deliver(waiting[-1], timer, None)
    clock.advance(121)  # past requeue_after_seconds, the delivery still 'received': re-queue it
    for event in waiting:
        ours.deliver(event, timer, late)
    return {
        "new, body > item limit (S3)": big,
        "duplicate, body > item limit": big_dup,
        "duplicate after 120 s, still waiting": late,
    }


def _secret_refresh(session: Any, names: dict[str, str], clock: Any, timer: MotoTimer, n: int) -> PathFigures:
    """As deployed (``secretsmanager:`` secret): a delivery after the resolver's cache expired."""
    session.client("secretsmanager").create_secret(Name="lockgate/webhooks/github", SecretString=SECRET)
    ours = lockgate_receiver(session, names, clock, "secretsmanager:lockgate/webhooks/github")
    figures = PathFigures()
    for i in range(n):
        clock.advance(301)
        ours.deliver(signed_event(github_body(i), clock.now(), str(uuid.uuid4())), timer, figures)
    return figures


# ------------------------------------------------------------------ output


def render(result: Result) -> str:
    """The table: absolute figures for both receivers and the ratios ours/baseline."""
    ours, base = result.ours, result.baseline
    lines = [
        f"Receipt cost per delivery — {result.n_new} new + {result.n_dup} duplicate GitHub deliveries "
        "per receiver, interleaved, in-process moto",
        "",
        f"{'':26}{'calls':>7}{'target':>8}{'median ms':>11}{'excl. moto':>12}",
    ]
    for c, target in ((ours, True), (base, False)):
        for label, path, goal in (("new", c.new, TARGET_NEW), ("duplicate", c.duplicate, TARGET_DUP)):
            lines.append(
                f"{c.name + ' ' + label:26}{path.calls_per_delivery:>7.2f}"
                f"{(str(goal) if target else ''):>8}{path.median_ms:>11.2f}{path.median_ms_excl_moto:>12.2f}"
            )
    lines.append("")
    lines.append(f"{'ratio ours/baseline':26}{'calls':>7}{'':>8}{'time':>11}{'excl. moto':>12}")
    for label, a, b in (("new", ours.new, base.new), ("duplicate", ours.duplicate, base.duplicate)):
        lines.append(
            f"{label:26}{a.calls_per_delivery / b.calls_per_delivery:>7.2f}{'':>8}"
            f"{a.median_ms / b.median_ms:>11.2f}{a.median_ms_excl_moto / b.median_ms_excl_moto:>12.2f}"
        )
    lines += ["", "Calls by operation (per delivery):"]
    for c in (ours, base):
        for label, path in (("new", c.new), ("duplicate", c.duplicate)):
            statuses = ",".join(f"{s}×{n}" for s, n in sorted(path.statuses.items()))
            lines.append(f"  {c.name} {label}: {path.operations_per_delivery()}   [HTTP {statuses}]")
    lines += ["", "Lockgate's other paths (calls per delivery):"]
    for label, path in result.other_paths.items():
        lines.append(f"  {label}: {path.calls_per_delivery:.2f} — {path.operations_per_delivery()}")
    lines += [
        "",
        "Calls: botocore 'before-send' events (HTTP attempts, retries included). Time: perf_counter",
        "around one delivery, API Gateway event to reply; 'excl. moto' leaves our code + botocore.",
        "On AWS each call is a network round trip, so calls dominate real latency; moto's time is not AWS's.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new", type=int, default=300, help="new deliveries per receiver")
    parser.add_argument("--dup", type=int, default=300, help="duplicate deliveries per receiver")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    result = measure(args.new, args.dup)
    print(render(result))
    print(f"\n(run took {time.perf_counter() - started:.1f} s, Python {sys.version.split()[0]})")
    ok = set(result.ours.new.calls) == {TARGET_NEW} and set(result.ours.duplicate.calls) == {TARGET_DUP}
    print("targets met: new = 2 calls, duplicate = 1 call" if ok else "TARGETS MISSED: see the calls above")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
