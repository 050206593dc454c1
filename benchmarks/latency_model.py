"""Modelled latency for the latency benchmark: each AWS call and each model call waits as long as it
would on AWS and on Claude, so that the embedded stack's timings stand for a deployment's.

AWS: every botocore call the process makes (``lockgate_infra.api_calls``, the seam the chaos harness
and the load benchmark use) first sleeps for a delay drawn from its service's log-normal
distribution, given by a median and a p99. The figures and where they come from are in
``AWS_CALLS``; where AWS publishes none, the figure is an assumption and says so.

Model: the stub's scripted model answers at once; ``slowed`` makes each answer wait a time to first
token plus its output tokens (as the stub bills them) at a fixed output speed.
"""

from __future__ import annotations

import math
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from lockgate_infra.api_calls import intercepted

Z99 = 2.3263  # the standard normal's 99th percentile


@dataclass(frozen=True)
class Delay:
    """A log-normal delay given by its median and p99 (milliseconds), and where the figures come from."""

    median_ms: float
    p99_ms: float
    source: str

    def draw(self, rng: random.Random) -> float:
        """One delay, in seconds."""
        sigma = math.log(self.p99_ms / self.median_ms) / Z99
        return self.median_ms * math.exp(rng.gauss(0.0, sigma)) / 1000


_DYNAMO = "AWS: DynamoDB delivers 'single-digit millisecond performance at any scale'; p99 assumed 3x"
_SQS = "assumption: AWS publishes no SQS figure; third-party measurements put a call at 10-20 ms"
AWS_CALLS: dict[str, Delay] = {
    "dynamodb": Delay(5, 15, _DYNAMO),
    "dynamodb transaction": Delay(10, 30, "assumption: a transaction commits in two phases, 2x a write"),
    "sqs": Delay(10, 40, _SQS),
    "s3": Delay(30, 100, "AWS S3 performance guide: small requests' 'median latencies ... tens of ms'"),
    "secretsmanager": Delay(30, 100, "assumption (a cached read: 300 s secret cache)"),
    "ses": Delay(60, 200, "assumption: AWS publishes no SendEmail figure"),
}
DEFAULT_CALL = Delay(20, 60, "assumption: any other service")
TRANSACTIONS = frozenset({"TransactWriteItems", "TransactGetItems"})


@dataclass(frozen=True)
class ModelSpeed:
    """A model call's latency: time to first token (log-normal) plus output tokens at a fixed speed."""

    ttft: Delay
    tokens_per_second: float

    def seconds(self, output_tokens: int, rng: random.Random) -> float:
        """How long one reply of ``output_tokens`` takes."""
        return self.ttft.draw(rng) + output_tokens / self.tokens_per_second


MODEL = ModelSpeed(
    Delay(1800, 4000, "Artificial Analysis, Claude Sonnet 4.5: TTFT 1.80 s median; p99 assumed 4 s"),
    63.0,  # Artificial Analysis, Claude Sonnet 4.5: 63 output tokens/s; every model call taken as Sonnet
)


def delay_for(service: str, operation: str) -> Delay:
    """The modelled delay of one call."""
    if service == "dynamodb" and operation in TRANSACTIONS:
        return AWS_CALLS["dynamodb transaction"]
    return AWS_CALLS.get(service, DEFAULT_CALL)


def describe() -> list[str]:
    """The modelled figures and their sources, one line each, for the report."""
    lines = [
        f"  {name:<22} median {d.median_ms:>4.0f} ms, p99 {d.p99_ms:>4.0f} ms  ({d.source})"
        for name, d in AWS_CALLS.items()
    ]
    ttft = MODEL.ttft
    lines.append(
        f"  {'model call':<22} TTFT median {ttft.median_ms / 1000:.1f} s, p99 {ttft.p99_ms / 1000:.1f} s, "
        f"+ output tokens at {MODEL.tokens_per_second:.0f}/s  ({ttft.source}; 63 tokens/s from the same)"
    )
    return lines


SUBJECT_TAG = re.compile(r"\[(?P<tag>[A-Za-z0-9_.-]+)\]\s*$")


class ModelledAws:
    """Every AWS call sleeps its modelled delay first; each email sent is recorded by its subject's tag."""

    def __init__(self, seed: int = 1, scale: float = 1.0) -> None:
        self._rng = random.Random(seed)  # noqa: S311 - a reproducible delay schedule, not security
        self.scale = scale  # every delay times this: 1 measures; the smoke test runs faster
        self._lock = threading.Lock()
        self.calls = 0
        self.waited = 0.0
        self.replies: dict[str, list[float]] = {}  # subject tag → when each SendEmail for it returned

    @contextmanager
    def active(self) -> Iterator[None]:
        """Delays on for every botocore call in this process while inside."""

        def call(client: Any, operation: str, params: dict[str, Any], send: Callable[[], Any]) -> Any:
            service = client.meta.service_model.service_name
            with self._lock:
                pause = delay_for(service, operation).draw(self._rng) * self.scale
                self.calls += 1
                self.waited += pause
            time.sleep(pause)
            result = send()
            if operation == "SendEmail":
                self._sent(str(params.get("Message", {}).get("Subject", {}).get("Data", "")))
            return result

        with intercepted(call):
            yield

    def _sent(self, subject: str) -> None:
        found = SUBJECT_TAG.search(subject)
        if found:
            with self._lock:
                self.replies.setdefault(found["tag"], []).append(time.perf_counter())


def slowed(
    model: Callable[[dict[str, Any]], Any], speed: ModelSpeed = MODEL, seed: int = 2, scale: float = 1.0
) -> Any:
    """``model`` answering after the modelled time for its reply's output tokens (as the stub bills them),
    times ``scale``."""
    from lockgate_infra.stub.accounting import estimate_tokens
    from lockgate_infra.stub.replies import Reply

    rng = random.Random(seed)  # noqa: S311 - a reproducible delay schedule, not security
    lock = threading.Lock()

    def answer(request: dict[str, Any]) -> Any:
        reply = model(request)
        tokens = max(1, estimate_tokens(reply.content)) if isinstance(reply, Reply) else 1
        with lock:
            pause = speed.seconds(tokens, rng) * scale
        time.sleep(pause)
        return reply

    return answer
