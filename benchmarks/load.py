"""Load on the embedded local stack (loopback only): many concurrent senders, duplicates and forgeries.

Three receivers take the same traffic (ids of their own) through the same gateway, moto server and
tables, one at a time: Lockgate's whole Lambda handler (``functions/webhook_receiver``, with
Powertools' logger and metrics decorators), the same receiver core without them, and the core of the
Powertools-idempotency baseline from ``benchmarks/baseline.py``.

Every phase starts alike: an empty queue and the same tables. After each Lockgate phase the worker
drains its queue (its pollers run only then, never while a phase is timed); each baseline phase gets
a fresh scratch queue, which the worker never sees; then everything the phase wrote to the Inbox and
State tables is deleted. (When the phases shared one undrained queue, 20 → 2,634 messages, moto's
SendMessage slowed as it filled, 4 → 26 ms, and the ratio measured moto; within a phase both
receivers send one pointer per new delivery, so their queues fill alike.) The run repeats (``--repeats``,
default 3), the order reversed every other repeat (ABC, CBA, ABC, ...) so that drift favours no one.

Figures per phase: deliveries per second (wall clock, all senders), and p50/p99 of the handler's own
time: the time inside the function minus the time it spent in AWS calls (botocore to the moto server
and back), i.e. our code, not moto's. Each is reported as the median over the repeats with its
min–max; each ratio is taken within one repeat, then reported the same way.

Checks (exit 1 on any failure), in every Lockgate phase: stored = the distinct valid deliveries;
every new delivery and every duplicate answered 200; every forgery answered 401; every stored
delivery processed exactly once (done, attempt 1); and every phase began with an empty queue and the
same table sizes. Target (exit 1 when missed): lockgate core ÷ baseline core deliveries/s, median
≥ 1.00 (``load_report.TARGET_THROUGHPUT_RATIO``).

Run: ``python -m benchmarks.load [--deliveries 2000] [--senders 20] [--repeats 3]``; deliveries
are per repeat; 8–9 min on 2 cores shared with other work (the worker's drains included).
``--rounds N`` sends each phase in rounds (``load_rounds``), ``--faults`` fails receiver calls and has
the provider resend (``load_faults``); ``make bench-load-20k`` runs 20,000 deliveries so, one repeat.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from benchmarks.load_faults import NO_FAULTS, FaultRates, ReceiverFaults, Retries
from benchmarks.load_report import BASELINE, HANDLER, RECEIVERS, Phase, check_phase, report
from benchmarks.load_rounds import Rounds, between_rounds, process, quiet_gateway, sweep_stranded
from benchmarks.load_tables import Tables
from benchmarks.load_traffic import Request, body, renamed, send_all, traffic

RECEIVER = "WebhookReceiverFunction"
REPEATS = 3  # the default, and the fewest that give a spread
DEPTH = "ApproximateNumberOfMessages"
FORGED = "not-the-secret-at-all"  # noqa: S105 - the forger's key, by design
Signer = Callable[[Request], dict[str, str]]
Invoke = Callable[[str, Any], Any]


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


def run(  # noqa: PLR0913 - the command line's options
    deliveries: int,
    senders: int,
    repeats: int = REPEATS,
    out: Any = sys.stdout,
    rounds: int = 0,
    faults: FaultRates = NO_FAULTS,
) -> int:
    """Every repeat's phases, each checked, then the report; 0 when every check passed and the target held.

    ``rounds`` > 0 sends each phase in rounds of that many requests (``load_rounds``); ``faults`` fails
    some of the receivers' AWS calls and has the provider resend (``load_faults``).
    """
    import os

    from lockgate_infra.local.stack import LocalStack

    requests = traffic(deliveries)
    injector = ReceiverFaults(faults)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    quiet = {
        "POWERTOOLS_LOG_LEVEL": "ERROR",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "APPROVAL_CHANNELS": "print",
    }
    # The functions' own JSON logs and the gateway's error lines would bury the report.
    faulty = injector.active() if faults != NO_FAULTS else contextlib.nullcontext()
    with (
        quiet_gateway(),
        contextlib.redirect_stdout(io.StringIO()),
        LocalStack(environment=quiet) as stack,
    ):
        signer, secret = _seeded(stack)
        gateway = stack.start_gateway(0)
        _warm_up(gateway, _baseline(stack, secret), signer, senders)
        process(stack, timeout=60.0)  # the warm-up's pointers: the worker warms up too, the queue empties
        bench = Bench(stack, gateway, signer, secret, senders, Tables(stack))
        bench.rounds, bench.faults = rounds, injector
        with faulty:
            phases = [
                bench.phase(name, repeat, requests) for repeat in range(repeats) for name in order(repeat)
            ]
    return report(requests, phases, out, injector)


def order(repeat: int) -> tuple[str, ...]:
    """The receivers in the order they run in ``repeat``: forwards, then backwards (ABC CBA ...), so
    that drift over the run (the machine, moto's state) does not favour one of them."""
    return RECEIVERS if repeat % 2 == 0 else RECEIVERS[::-1]


class Bench:
    """One stack, gateway and warm-up; runs one receiver over the traffic at a time."""

    def __init__(
        self, stack: Any, gateway: Any, signer: Signer, secret: str, senders: int, tables: Tables
    ) -> None:
        self.stack, self.gateway, self.signer, self.secret = stack, gateway, signer, secret
        self.senders, self.tables = senders, tables
        self._warm = tables.keys()  # each phase leaves the tables as the warm-up did
        self._sqs = stack.client("sqs")
        self.rounds, self.faults = 0, ReceiverFaults(NO_FAULTS)

    def phase(self, name: str, repeat: int, requests: list[Request]) -> Phase:
        """``name`` takes the traffic (ids of its own) from an empty queue, then the tables are reset:
        Lockgate's queue is drained by the worker (and its deliveries checked), the baseline's deleted."""
        label = f"r{repeat + 1}-{name.replace(' ', '-')}"
        queue_url, invoke = self._receiver(name, label)
        depth = self._sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=[DEPTH])["Attributes"]
        start = (int(depth[DEPTH]), *self.tables.sizes())
        mine = renamed(requests, label)
        # A bound for "stuck", not a speed target: a busy machine drains 1,300 deliveries slowly.
        timeout = max(300.0, min(len(requests), self.rounds or len(requests)) * 0.5)
        drain = None if name == BASELINE else lambda: process(self.stack, timeout)
        rounds = Rounds(self.rounds)
        between = between_rounds(self.stack, queue_url, drain)
        with self.faults.counting(name):
            phase = _phase(self.gateway, name, self.faults.receiving(invoke), mine, self, rounds, between)
        phase.repeat, phase.start, phase.resent = repeat, start, rounds.resent
        if name == BASELINE:
            self._sqs.delete_queue(QueueUrl=queue_url)
        else:
            drained = process(self.stack, timeout)
            if self.faults.rates != NO_FAULTS:  # stored without a pointer: the sweep's job, as deployed
                phase.swept = sweep_stranded(self.stack)
                drained = drained and process(self.stack, timeout)
            prefix = "github#"
            rows = [row for row in self.tables.inbox() if row["pk"]["S"].startswith(f"{prefix}{label}-")]
            check_phase(phase, mine, rows, drained, prefix)
        self.tables.reset(self._warm)
        print(f"load: repeat {repeat + 1}, {name}: {phase.per_second:.0f} deliveries/s", file=sys.stderr)
        return phase

    def _receiver(self, name: str, label: str) -> tuple[str, Invoke]:
        """Where ``name`` sends its pointers, and the gateway's invoke for it."""
        from benchmarks.receivers import answer

        if name == BASELINE:  # a fresh scratch queue: the worker never sees the baseline's pointers
            url = self._sqs.create_queue(QueueName=f"baseline-load-{label}")["QueueUrl"]
            baseline = _baseline(self.stack, self.secret, url)
            return url, lambda _, event: baseline.handle(event)
        url = self.stack.resources["InboxQueue"]
        if name == HANDLER:
            return url, self.stack.invoke
        receiver = self.stack.load_function(RECEIVER).module.receiver
        return url, lambda _, event: answer(receiver, event).to_apigw()  # without the decorators


def _seeded(stack: Any) -> tuple[Signer, str]:
    """The stack's secrets and workflows seeded; a signer for the traffic, and GitHub's secret."""
    from lockgate.config import load_config
    from lockgate.webhooks.signing import sign
    from lockgate_infra.local.run import seed_secrets
    from lockgate_infra.local.workflows import seed_workflows

    config = load_config(stack.config_path)
    secrets = seed_secrets(stack)
    seed_workflows(stack)
    source = config.sources["github"]

    def signer(request: Request) -> dict[str, str]:
        secret = FORGED if request.kind == "forged" else secrets["github"]
        return sign(source, secret, request.body, int(time.time()), request.delivery_id, "push")

    return signer, secrets["github"]


def _baseline(stack: Any, secret: str, queue_url: str | None = None) -> Any:
    """The Powertools baseline on the stack's tables; its pointers go to a scratch queue, not the worker's."""
    from benchmarks.baseline import PowertoolsReceiver

    sqs = stack.client("sqs")
    return PowertoolsReceiver(
        stack.client("dynamodb"),
        sqs,
        deliveries_table=stack.resources["InboxTable"],
        idempotency_table=stack.resources["StateTable"],
        queue_url=queue_url or sqs.create_queue(QueueName="baseline-load-warm")["QueueUrl"],
        secret=secret,
        now=time.time,
    )


def _warm_up(gateway: Any, baseline: Any, signer: Signer, senders: int) -> None:
    """Warm both up (imports, first secret fetch, connections) outside the figures."""
    warm = [Request(f"warm-{n}", body(n), "new") for n in range(senders)]
    send_all(gateway.url, warm, signer, senders)
    gateway.invoke = lambda _, event: baseline.handle(event)
    send_all(
        gateway.url, [Request(f"warm-base-{n}", body(n), "new") for n in range(senders)], signer, senders
    )


def _phase(  # noqa: PLR0913 - one phase's parts
    gateway: Any,
    name: str,
    invoke: Invoke,
    requests: list[Request],
    bench: Bench,
    rounds: Rounds,
    between: Callable[[], None],
) -> Phase:
    """One receiver behind the gateway taking all the traffic, round by round; only the sending is timed."""
    clock = HandlerClock()
    phase = Phase(name, statuses={"new": Counter(), "duplicate": Counter(), "forged": Counter()})
    retries = Retries(bench.faults.rates)
    with clock.aws_calls():
        for part, more in rounds.split(requests):
            gateway.invoke = clock.wrap(invoke)
            seconds, statuses = send_all(
                gateway.url, part, bench.signer, bench.senders, retries, rounds.resent
            )
            phase.seconds += seconds
            for kind, counts in statuses.items():
                phase.statuses[kind].update(counts)
            if more:
                between()
        phase.own_seconds = clock.own_seconds
    return phase


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=2000, help="requests per repeat")
    parser.add_argument("--senders", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--rounds", type=int, default=0, help="send each phase in rounds of N requests")
    parser.add_argument("--faults", action="store_true", help="fail receiver calls; the provider resends")
    args = parser.parse_args(argv)
    long_run = args.rounds > 0 and args.repeats == 1
    if args.repeats < REPEATS and not long_run:
        parser.error(
            f"--repeats must be at least {REPEATS}: fewer give no spread to speak of "
            "(one is allowed with --rounds, for a long run, and the report says so)"
        )
    faults = FaultRates() if args.faults else NO_FAULTS
    return run(args.deliveries, args.senders, args.repeats, rounds=args.rounds, faults=faults)


if __name__ == "__main__":
    sys.exit(main())
