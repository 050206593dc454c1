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
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any

from benchmarks.github_deliveries import SECRET, github_body, signed_event
from benchmarks.moto_counting import MotoTimer, moto_stack, timed_moto
from benchmarks.receivers import Contender, PathFigures, baseline_receiver, lockgate_receiver

TARGET_NEW, TARGET_DUP = 2, 1


@dataclass
class Result:
    """Everything one run measured."""

    ours: Contender
    baseline: Contender
    other_paths: dict[str, PathFigures]
    n_new: int
    n_dup: int


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
