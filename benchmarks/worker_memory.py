"""The worker's Lambda dollars per event by memory size, a batch's records one after another (as
before) vs side by side (``WORKER_RECORD_CONCURRENCY``), from measured CPU time and memory.

Measured: the shop's example traffic runs through the functions as ``lockgate.runtime`` builds
them, on moto with the stub model and no faults (the chaos world, as ``lockgate cost`` runs it).
Per invocation of ``Worker.process`` (a record): own CPU time (this thread's, less moto's answering
its AWS calls; the stub answers in another thread), AWS calls and model calls. Memory: the peak
RSS of a fresh process initialising the worker as deployed (SnapStart's pre-imported SDK, a client
made), the most one record allocates at a time (tracemalloc, a second, short pass), and this whole
process's peak (moto, the stub and the harness included: an upper bound).

Assumed, as ``lockgate cost`` does: 4 s per model call and 8 ms per AWS call, billed while the
worker waits. Lambda's CPU share grows with memory to a whole vCPU at 1,769 MB, so own CPU time is
scaled by 1769 / MB below that. A batch is billed one after another for the sum over its records
of CPU + waits; side by side for the sum of their CPU (the GIL: it never overlaps) + the longest
record's waits. Records are taken in the sample's order, ``occupancy`` at a time; cold starts and
SnapStart restores are left out.

Run: ``python -m benchmarks.worker_memory [--events 20] [--seed 1]``; exits 1 when the deployed
default (template.yaml's memory and concurrency) is not at most 0.35x of today's dollars per event
(1,024 MB, one after another), judged on batches of 5 (half of BatchSize 10); every batch size is
printed beside it (a queue too quiet to put two records in a batch saves what the memory saves).
"""

from __future__ import annotations

import argparse
import logging
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.moto_counting import MotoTimer, timed_moto
from benchmarks.worker_start import LAYER_DIR, ROOT, WORKER_DIR, environment
from lockgate.clock import FixedClock
from lockgate_infra.api_calls import intercepted
from lockgate_infra.chaos.drive import drive, seeded
from lockgate_infra.chaos.faults import FaultPlan, Rates
from lockgate_infra.chaos.housekeeping import housekeeping
from lockgate_infra.chaos.run import START, account
from lockgate_infra.chaos.traffic import traffic
from lockgate_infra.cost.bill import FULL_CPU_MB, Assumptions
from lockgate_infra.cost.prices import PRICES

SIZES = (256, 512, 1024)
OCCUPANCIES = (1, 2, 5, 10)
TARGET = 0.35
TARGET_OCCUPANCY = 5  # the target is judged on half-full batches (BatchSize 10)
HEADROOM = 0.6  # the estimated peak may use at most this share of the memory size
ASSUMED = Assumptions()  # lockgate cost's: 4 s per model call, 8 ms per AWS call
MARKER = "WORKER-RSS "
CHILD = f"""
import importlib, sys
sys.path[:0] = sys.argv[1:]
app = importlib.import_module("app")
import anthropic
anthropic.Anthropic(api_key="not-used", base_url="http://127.0.0.1:9", max_retries=0)
from benchmarks.worker_memory import peak_rss_mb
print({MARKER!r} + str(peak_rss_mb()))
"""


@dataclass(frozen=True)
class Record:
    """One invocation of ``Worker.process``."""

    cpu_seconds: float
    aws_calls: int
    model_calls: int


@dataclass
class Sample:
    """What the example traffic measured."""

    events: int
    records: list[Record] = field(default_factory=list)
    record_peak_mb: float = 0.0  # the most one record allocated at a time (tracemalloc)
    process_rss_mb: float = 0.0  # this process's peak: moto, the stub and the harness too
    init_rss_mb: float = 0.0  # a fresh process with the worker initialised as deployed


class _AwsCalls:
    """Counts AWS calls (any thread; the harness drives the worker in one)."""

    def __init__(self) -> None:
        self.calls = 0

    def hook(self, client: Any, operation: str, params: dict[str, Any], send: Callable[[], Any]) -> Any:
        self.calls += 1
        return send()


def run_traffic(events: int, seed: int, *, traced: bool = False) -> tuple[list[Record], float]:
    """Drive the example traffic; each worker invocation measured, and its peak allocation if ``traced``."""
    plan = FaultPlan(seed, Rates(aws_before=0, aws_after=0, crash_after_effect=0, reenter=0, model=0))
    sends = traffic(seeded(seed), events)
    records: list[Record] = []
    # moto answers in the calling thread: its CPU is AWS's side, not the worker's (botocore's own
    # signing, serialising and parsing stay in the worker's CPU time).
    aws, moto, peak = _AwsCalls(), MotoTimer(clock=time.thread_time), [0.0]
    import anthropic  # noqa: F401 - pre-imported, as the deployed worker's SnapStart snapshot has it

    with account(plan, FixedClock(START)) as world, intercepted(aws.hook), timed_moto(moto):
        stub = world.stub

        def measured(process: Callable[..., str]) -> Callable[..., str]:
            def invocation(*args: Any, **kwargs: Any) -> str:
                calls, moto_cpu, models = aws.calls, moto.seconds, stub.calls
                if traced:
                    base = tracemalloc.get_traced_memory()[0]
                    tracemalloc.reset_peak()
                started = time.thread_time()
                try:
                    return process(*args, **kwargs)
                finally:
                    cpu = time.thread_time() - started - (moto.seconds - moto_cpu)
                    records.append(Record(cpu, aws.calls - calls, stub.calls - models))
                    if traced:
                        peak[0] = max(peak[0], (tracemalloc.get_traced_memory()[1] - base) / 2**20)

            return invocation

        for worker in world.workers:
            worker.process = measured(worker.process)  # type: ignore[method-assign]
        drive(world, plan, sends, housekeeping(world))
    return records, peak[0]


def peak_rss_mb() -> float:
    """This process's peak RSS since it started (VmHWM: unlike ru_maxrss, not inherited across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def init_rss_mb() -> float:
    """Peak RSS of a fresh process after the worker's init (SnapStart-style: the SDK pre-imported)."""
    done = subprocess.run(  # noqa: S603 - our own child script
        [sys.executable, "-c", CHILD, str(WORKER_DIR), str(LAYER_DIR)],
        env=environment(snapstart=True),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=180,
    )
    line = next(li for li in done.stdout.splitlines() if li.startswith(MARKER))
    return float(line.removeprefix(MARKER))


def measure(events: int = 20, seed: int = 1, traced_events: int = 5) -> Sample:
    """Time pass, then memory pass (tracemalloc slows code down, so its CPU times are not used).

    The memory pass is short: tracemalloc counts moto's allocations too, and some of moto's grow
    with its tables, so a long pass would blame the worker for moto's bookkeeping.
    """
    records, _ = run_traffic(events, seed)
    rss = peak_rss_mb()  # before tracemalloc's own bookkeeping adds to it
    tracemalloc.start()
    try:
        _, record_peak = run_traffic(traced_events, seed, traced=True)
    finally:
        tracemalloc.stop()
    return Sample(events, records, record_peak, rss, init_rss_mb())


def batch_seconds(
    batch: Sequence[Record], memory_mb: int, side_by_side: bool, assume: Assumptions = ASSUMED
) -> float:
    """Billed seconds of one invocation running ``batch``."""
    scale = max(1.0, FULL_CPU_MB / memory_mb)
    cpu = sum(record.cpu_seconds * scale for record in batch)
    waits = [
        record.aws_calls * assume.call_ms / 1000 + record.model_calls * assume.model_seconds
        for record in batch
    ]
    return cpu + (max(waits, default=0.0) if side_by_side else sum(waits))


def dollars_per_event(sample: Sample, memory_mb: int, side_by_side: bool, occupancy: int) -> float:
    """Lambda compute and request dollars per example event."""
    records = sample.records
    batches = [records[i : i + occupancy] for i in range(0, len(records), occupancy)]
    seconds = sum(batch_seconds(batch, memory_mb, side_by_side) for batch in batches)
    compute = seconds * memory_mb / 1024 * PRICES.lambda_gb_second
    return (compute + len(batches) * PRICES.lambda_request) / sample.events


def deployed() -> tuple[int, int]:
    """template.yaml's worker memory and record concurrency (the parameters' defaults)."""
    from lockgate_infra.local.template import LocalPlan

    worker = LocalPlan.from_file(ROOT / "template.yaml").functions["AgentWorkerFunction"]
    return worker.memory_mb, int(worker.environment.get("WORKER_RECORD_CONCURRENCY", "1"))


def render(sample: Sample) -> tuple[str, bool]:
    """The report, and whether the deployed default meets the target."""
    today = dollars_per_event(sample, 1024, False, 1)  # before: 1,024 MB, one after another
    memory, concurrency = deployed()
    head = "| memory | records | " + " | ".join(f"batches of {n}: $/1M events (× today)" for n in OCCUPANCIES)
    lines = [head, "|---|---|" + "---|" * len(OCCUPANCIES)]
    for mb in SIZES:
        for side_by_side in (False, True):
            cells = []
            for n in OCCUPANCIES:
                dollars = dollars_per_event(sample, mb, side_by_side, n)
                cells.append(f"{dollars * 1e6:,.2f} ({dollars / today:.3f})")
            mode = "side by side" if side_by_side else "one after another"
            lines.append(f"| {mb} MB | {mode} | " + " | ".join(cells) + " |")
    records = sample.records
    cpu = sum(r.cpu_seconds for r in records) / sample.events
    models = sum(r.model_calls for r in records) / sample.events
    lines += ["", _measured(sample, cpu, models), ""]
    lines += _memory_lines(sample)
    ratios = {n: dollars_per_event(sample, memory, concurrency > 1, n) / today for n in OCCUPANCIES}
    met = ratios[TARGET_OCCUPANCY] <= TARGET
    each = ", ".join(f"{n}: {r:.3f}× ({'met' if r <= TARGET else 'not met'})" for n, r in ratios.items())
    lines += [
        "",
        f"Deployed default (template.yaml): {memory} MB, {concurrency} records at once. Lambda dollars "
        f"per event vs today, target ≤ {TARGET}×, by records per batch: {each}.",
        f"Judged on batches of {TARGET_OCCUPANCY}: {ratios[TARGET_OCCUPANCY]:.3f}× — "
        f"{'met' if met else 'NOT MET'}.",
    ]
    return "\n".join(lines), met


def _measured(sample: Sample, cpu: float, models: float) -> str:
    assume = ASSUMED
    return (
        f"Measured over {sample.events} example events ({len(sample.records)} worker records): per event "
        f"{cpu * 1000:.1f} ms own CPU at a whole vCPU, {models:.1f} model calls, "
        f"{sum(r.aws_calls for r in sample.records) / sample.events:.1f} AWS calls. Assumed: "
        f"{assume.model_seconds:g} s per model call, {assume.call_ms:g} ms per AWS call; CPU × 1769/MB "
        f"below 1,769 MB (×{FULL_CPU_MB / 256:.2f} at 256 MB). Today = 1,024 MB, one after another."
    )


def _memory_lines(sample: Sample) -> list[str]:
    ten = sample.init_rss_mb + 10 * sample.record_peak_mb  # the init + ten records' working sets
    lines = [
        f"Memory: the worker's init {sample.init_rss_mb:.0f} MB RSS (fresh process, SDK pre-imported); "
        f"one record allocates at most {sample.record_peak_mb:.2f} MB at a time; this whole process "
        f"peaked at {sample.process_rss_mb:.0f} MB (moto, the stub model and the harness included). "
        f"Estimated peak with 10 records at once: {ten:.0f} MB.",
        "",
        f"| memory | 10 at once fits (≤ {HEADROOM:.0%}) | CPU share | own CPU of a batch of 10 |",
        "|---|---|---|---|",
    ]
    per_record = sum(r.cpu_seconds for r in sample.records) / max(1, len(sample.records))
    for mb in SIZES:
        share = min(1.0, mb / FULL_CPU_MB)
        fits = f"{'yes' if ten <= HEADROOM * mb else 'no'} ({ten / mb:.0%})"
        lines.append(f"| {mb} MB | {fits} | {share:.2f} vCPU | {10 * per_record / share:.2f} s |")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    logging.getLogger("lockgate").setLevel(logging.ERROR)  # the example's refusals are expected
    report, met = render(measure(args.events, args.seed))
    print(report)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
