"""Latency from webhook receipt to the reply sent, on the embedded stack with modelled AWS and model
latency, at steady rates and in bursts of ten times the rate.

Customer emails ("where is my order?") go to the helpdesk webhook open-loop, on a fixed schedule. The
worker takes them from the Inbox queue as the template deploys it: as many SQS pollers as the event
source's ``MaximumConcurrency`` (at most that many worker invocations at once), each filling batches
of ``BatchSize`` within ``MaximumBatchingWindowInSeconds``; the worker runs a batch's records
side by side (``WORKER_RECORD_CONCURRENCY``). All four come from ``template.yaml``. Every AWS call
and every model call waits its modelled latency (``benchmarks/latency_model.py``: figures and
sources). The example's rate limits and daily budgets are raised so that they never bind: this
measures the pipeline, not the example's caps.

Times (``perf_counter``): receipt is when the email's POST was due (open-loop: a late sender does not
shorten it); acknowledged is when its 200 came back; reply sent is when the shop's ``send_email``
tool's SES ``SendEmail`` call returned (the customer-visible effect; its subject carries the email's
tag). The sender resends, with the same id, an email that got a 5xx or no answer, as a provider does.
Each phase ends when the queue is drained; the inbox sweep then re-queues what was stored without a
pointer (as its schedule would, later), and the queue is drained again; then it checks nothing was
lost or doubled: every email answered 200, stored once, ``done``, and replied to exactly once.

Run: ``python -m benchmarks.latency [--rates 0.1 0.2] [--steady-seconds 120] [--burst-seconds 60]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.latency_model import ModelledAws, slowed
from benchmarks.latency_report import Deployed, Result, report
from benchmarks.latency_traffic import schedule, send_on_schedule
from benchmarks.load_rounds import sweep_stranded

WORKER = "AgentWorkerFunction"
BURST_FACTOR = 10
CAP_FACTOR = 100  # the example's rate limits and budgets, times this: they never bind here
QUIET = {"POWERTOOLS_LOG_LEVEL": "ERROR", "POWERTOOLS_METRICS_DISABLED": "true", "APPROVAL_CHANNELS": "print"}


def run(
    rates: list[float], steady_seconds: float, burst_seconds: float, out: Any = sys.stdout, scale: float = 1.0
) -> int:
    """Each rate's steady phase, then its burst; the report; 0 when nothing was lost or doubled.

    ``scale`` multiplies every modelled delay: 1 measures; less only makes a smoke test quicker.
    """
    from lockgate_infra.local.model import local_model
    from lockgate_infra.local.stack import LocalStack, default_template_path
    from lockgate_infra.stub import with_judge
    from shop.model import scripted_model

    shop_model = scripted_model()

    aws = ModelledAws(scale=scale)
    with (
        tempfile.TemporaryDirectory() as scratch,
        contextlib.redirect_stdout(io.StringIO()),  # the functions' own logs would bury the report
        local_model("demo", os.environ) as chosen,
    ):
        config = uncapped_config(default_template_path().parent / "lockgate.toml", Path(scratch))
        assert chosen.stand_in is not None  # noqa: S101 - "demo" is an offline model
        chosen.stand_in.set_model(slowed(with_judge(shop_model), scale=scale))
        environment = {**QUIET, **chosen.environment}
        with LocalStack(config_path=config, environment=environment) as stack, aws.active():
            bench = Bench(stack, aws)
            bench.phase("warm-up", 1.0, 3)
            results = []
            for rate in rates:
                results.append(bench.phase(f"steady {rate:g}/s", rate, steady_seconds))
                results.append(
                    bench.phase(f"burst {rate * BURST_FACTOR:g}/s", rate * BURST_FACTOR, burst_seconds)
                )
            deployed = Deployed.from_plan(stack.plan, WORKER)
    return report(results, deployed, aws, out)


def uncapped_config(shipped: Path, folder: Path) -> Path:
    """A copy of ``lockgate.toml`` with every rate limit and budget ``CAP_FACTOR`` times the shipped one."""
    import tomlkit

    document: Any = tomlkit.parse(shipped.read_text(encoding="utf-8"))
    budget = document.get("budget", {})
    if "daily_usd" in budget:
        budget["daily_usd"] = float(budget["daily_usd"]) * CAP_FACTOR
    for task in budget.get("tasks", {}):
        budget["tasks"][task] = float(budget["tasks"][task]) * CAP_FACTOR
    capacity = document.get("capacity", {})
    for group in ("models", "sources"):
        for limits in capacity.get(group, {}).values():
            for key in ("requests_per_minute", "tokens_per_minute"):
                if key in limits:
                    limits[key] = int(limits[key]) * CAP_FACTOR
    path = folder / "lockgate.toml"
    path.write_text(tomlkit.dumps(document), encoding="utf-8")
    return path


class Bench:
    """The stack with its gateway, the worker's pollers as deployed, and a signer for the helpdesk."""

    def __init__(self, stack: Any, aws: ModelledAws) -> None:
        from lockgate.config import load_config
        from lockgate.webhooks.signing import sign
        from lockgate_infra.local.run import seed_secrets
        from lockgate_infra.local.sources import start_sqs_pollers
        from lockgate_infra.local.workflows import seed_workflows

        self.stack, self.aws = stack, aws
        secret = seed_secrets(stack)["helpdesk"]
        seed_workflows(stack)
        source = load_config(stack.config_path).sources["helpdesk"]
        self.sign = lambda mail: sign(source, secret, mail.body, int(time.time()), mail.tag, "email.received")
        self.gateway = stack.start_gateway(0)
        where = (stack.plan, stack.resources, stack.client, stack.invoke, stack.load_function)
        stack.pollers = start_sqs_pollers(*where, wait_seconds=1, as_deployed=True)

    def phase(self, label: str, rate: float, seconds: float) -> Result:
        """``rate`` emails a second for ``seconds``, then until the queue is drained; checked."""
        tag = label.replace(" ", "").replace("/s", "ps").replace(".", "_")
        plan = schedule(tag, rate, seconds)
        print(f"latency: {label}, {len(plan)} emails", file=sys.stderr, flush=True)
        cpu, wall = time.process_time(), time.perf_counter()
        sent = send_on_schedule(self.gateway.url, plan, self.sign)
        drained = self.stack.drain(timeout=max(600.0, len(plan) * 2.0))
        # Stored but never queued (the receiver's answer or its pointer lost): the inbox sweep's job.
        swept = sweep_stranded(self.stack)
        if swept.get("requeued"):
            drained = self.stack.drain(timeout=max(600.0, len(plan) * 2.0)) and drained
        result = Result(label, rate, seconds, [m.tag for _, m in plan], sent, drained)
        result.swept = swept.get("requeued", 0)
        result.cpu_seconds = time.process_time() - cpu
        result.wall_seconds = time.perf_counter() - wall
        result.check(self._rows(tag), self.aws.replies)
        return result

    def _rows(self, tag: str) -> list[dict[str, Any]]:
        from lockgate.dynamo import read_all

        rows = read_all(self.stack.client("dynamodb").scan, TableName=self.stack.resources["InboxTable"])
        return [row for row in rows if row["pk"]["S"].startswith(f"helpdesk#{tag}-")]


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", type=float, nargs="+", default=[0.1, 0.2], help="steady emails/s")
    parser.add_argument("--steady-seconds", type=float, default=120.0)
    parser.add_argument("--burst-seconds", type=float, default=60.0)
    args = parser.parse_args(argv)
    return run(args.rates, args.steady_seconds, args.burst_seconds)


if __name__ == "__main__":
    sys.exit(main())
