"""The template's event source mappings, started as pollers: SQS queues and DynamoDB streams."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lockgate_infra.local.poller import SqsPoller
from lockgate_infra.local.runtime import LocalFunction
from lockgate_infra.local.streams import StreamPoller
from lockgate_infra.local.template import LocalPlan, StreamSource


def start_sqs_pollers(
    plan: LocalPlan,
    resources: Mapping[str, str],
    client: Callable[[str], Any],
    invoke: Callable[..., Any],
    load_function: Callable[[str], LocalFunction],
    *,
    wait_seconds: int,
    as_deployed: bool = False,
) -> list[SqsPoller]:
    """One running poller per enabled SQS event source, invoking its function as Lambda's mapping would.

    ``as_deployed`` runs as many pollers per source as its ``ScalingConfig.MaximumConcurrency`` (at most
    that many invocations at once, as Lambda caps them), each waiting up to the source's
    ``MaximumBatchingWindowInSeconds`` to fill a batch (a source without a MaximumConcurrency gets one,
    where Lambda would scale further); else one poller each, which never waits.
    """
    pollers = []
    for source in plan.sqs_sources:
        if not source.enabled:
            continue
        load_function(source.function)  # an import error shows now, not at the first message
        copies = (source.maximum_concurrency or 1) if as_deployed else 1
        for copy in range(copies):
            poller = SqsPoller(
                client("sqs"),
                resources[source.queue],
                plan.queues[source.queue].arn,
                functools.partial(invoke, source.function),
                batch_size=source.batch_size,
                report_batch_item_failures=source.report_batch_item_failures,
                wait_seconds=wait_seconds,
                batching_window=source.maximum_batching_window if as_deployed else 0.0,
                region=plan.region,
                name=f"{source.function}.{source.event}" + (f"#{copy + 1}" if copies > 1 else ""),
                function=source.function,
            )
            poller.start()
            pollers.append(poller)
    return pollers


def start_stream_pollers(
    plan: LocalPlan,
    resources: Mapping[str, str],
    client: Callable[[str], Any],
    invoke: Callable[..., Any],
    load_function: Callable[[str], LocalFunction],
) -> list[StreamPoller]:
    """One running poller per enabled DynamoDB stream event source: reads the stream, invokes the function."""
    return [
        _stream_poller(stream, resources, client, invoke, load_function(stream.function), plan.region)
        for stream in plan.stream_sources
        if stream.enabled
    ]


def _stream_poller(
    stream: StreamSource,
    resources: Mapping[str, str],
    client: Callable[[str], Any],
    invoke: Callable[..., Any],
    function: LocalFunction,
    region: str,
) -> StreamPoller:
    on_failure = None
    if stream.on_failure is not None:
        sqs, queue_url = client("sqs"), resources[stream.on_failure]

        def on_failure(record: dict[str, Any]) -> None:
            sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(record))

    poller = StreamPoller(
        client("dynamodb"),
        client("dynamodbstreams"),
        resources[stream.table],
        functools.partial(invoke, stream.function),
        batch_size=stream.batch_size,
        starting_position=stream.starting_position,
        report_batch_item_failures=stream.report_batch_item_failures,
        maximum_retry_attempts=stream.maximum_retry_attempts,
        bisect_on_error=stream.bisect_on_error,
        on_failure=on_failure,
        function_arn=function.plan.arn,
        region=region,
        name=f"{stream.function}.{stream.event}",
        function=stream.function,
    )
    poller.start()
    return poller


def drain_all(pollers: Sequence[SqsPoller | StreamPoller], timeout: float, *, include_retries: bool) -> bool:
    """Wait until every poller's queue or stream is empty and nothing is being processed; False on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        before = sum(p.processed for p in pollers)
        for poller in pollers:
            if not poller.drain(max(0.0, deadline - time.monotonic()), include_retries=include_retries):
                return False
        # A handler may have fed another poller's queue or stream: done only after a quiet pass.
        if sum(p.processed for p in pollers) == before:
            return True
