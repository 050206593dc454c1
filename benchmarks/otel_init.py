"""Init time the OpenTelemetry wrapper adds to every function, vs the same process without it.

Deployed with ``OtelLayerArn``, Lambda runs each function through the ADOT layer's wrapper
(``AWS_LAMBDA_EXEC_WRAPPER=/opt/otel-instrument``): before the handler module is imported, it
loads AWS's OpenTelemetry distro, configures the SDK and instruments the libraries it finds. That
is a fixed cost per cold start, paid before (and apart from) the handler's own imports, which
``benchmarks/cold_start.py`` measures; Lockgate's own code imports nothing of OpenTelemetry
unless the wrapper has loaded it (``lockgate.tracing``).

Each sample is a fresh process of a Python that has ``aws-opentelemetry-distro`` installed
(``make bench-otel`` makes ``.venv-otel``): one kind imports boto3 and creates the receiver's
three clients; the other first runs the distro's auto-instrumentation initialisation with the
environment the layer sets (distro ``aws_distro``, configurator ``aws_configurator``; exporters
off, so no network), then does the same. The kinds alternate so drift cancels out. This is the
PyPI distro on this machine, not the layer on Lambda's arm64: read the ratio, not the milliseconds.

Run: ``python -m benchmarks.otel_init --python .venv-otel/bin/python [--runs 15]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

CHILD = """
import time
start = time.perf_counter()
if {wrapped}:
    from opentelemetry.instrumentation.auto_instrumentation import initialize
    initialize()
import boto3
for service in ("dynamodb", "sqs", "s3"):
    boto3.client(service, region_name="us-east-1")
print((time.perf_counter() - start) * 1000)
"""

# What the ADOT Python layer's wrapper sets for the distro (exporters off: nothing leaves the box).
WRAPPER_ENV = {
    "OTEL_PYTHON_DISTRO": "aws_distro",
    "OTEL_PYTHON_CONFIGURATOR": "aws_configurator",
    "OTEL_TRACES_EXPORTER": "none",
    "OTEL_METRICS_EXPORTER": "none",
    "OTEL_LOGS_EXPORTER": "none",
    "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
    "AWS_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
}


def sample(python: str, *, wrapped: bool) -> float:
    """One fresh process: milliseconds from its first line to three clients made."""
    done = subprocess.run(  # noqa: S603 - our own child script
        [python, "-c", CHILD.format(wrapped=wrapped)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **WRAPPER_ENV},
        timeout=120,
    )
    return float(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Print both medians, the added milliseconds and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=".venv-otel/bin/python", help="a Python with the distro")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args(argv)
    check = subprocess.run(  # noqa: S603
        [args.python, "-c", "import amazon.opentelemetry.distro"], capture_output=True, check=False
    )
    if check.returncode != 0:
        print(f"{args.python} has no aws-opentelemetry-distro: run `make bench-otel`", file=sys.stderr)
        return 2
    sample(args.python, wrapped=True)  # compile both once: the first import writes bytecode
    sample(args.python, wrapped=False)
    bare, wrapped = [], []
    for _ in range(args.runs):
        bare.append(sample(args.python, wrapped=False))
        wrapped.append(sample(args.python, wrapped=True))
    b, w = statistics.median(bare), statistics.median(wrapped)
    print(f"OpenTelemetry wrapper init: median of {args.runs} fresh processes each, alternating")
    print(f"  boto3 + 3 clients                       {b:8.1f} ms")
    print(f"  distro initialise, then the same        {w:8.1f} ms")
    print(f"  added by the wrapper                    {w - b:8.1f} ms   ratio {w / b:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
