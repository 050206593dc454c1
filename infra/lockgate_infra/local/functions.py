"""Serverless functions and what invokes them (routes, queues, streams, schedules), from the template."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lockgate_infra.local.intrinsics import (
    ACCOUNT_ID,
    NO_VALUE,
    REGION,
    Resolver,
    TemplateError,
    logical_id_of,
)
from lockgate_infra.local.resources import local_name

DEFAULT_TIMEOUT = 3  # SAM's defaults
DEFAULT_MEMORY = 128


@dataclass(frozen=True)
class FunctionPlan:
    """An AWS::Serverless::Function as the local stack runs it."""

    logical_id: str
    name: str
    code_dir: Path
    handler: str  # "module.function", as in the template
    timeout: int = DEFAULT_TIMEOUT
    memory_mb: int = DEFAULT_MEMORY
    environment: dict[str, str] = field(default_factory=dict)
    alias: str | None = None  # AutoPublishAlias: SAM's alias (``!Ref NAME.Alias``, ``NAMEAlias<alias>``)

    @property
    def arn(self) -> str:
        """The function's ARN as a deployed one would look."""
        return f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{self.name}"

    @property
    def alias_arn(self) -> str | None:
        """Its alias's ARN (what ``!Ref NAME.Alias`` gives), or None without AutoPublishAlias."""
        return f"{self.arn}:{self.alias}" if self.alias else None

    @property
    def module_path(self) -> Path:
        """The handler's source file (``app.handler`` → ``<CodeUri>/app.py``)."""
        module = self.handler.rsplit(".", 1)[0]
        return self.code_dir / (module.replace(".", "/") + ".py")

    @property
    def handler_name(self) -> str:
        """The handler's function name inside its module."""
        return self.handler.rsplit(".", 1)[1]


@dataclass(frozen=True)
class Route:
    """An HttpApi route: ``POST /webhooks/{source}`` → a function (``$default`` catches the rest)."""

    method: str  # upper-case, or "ANY"
    path: str
    function: str

    @property
    def route_key(self) -> str:
        """The routeKey API Gateway puts in the event."""
        return "$default" if self.path == "$default" else f"{self.method} {self.path}"


@dataclass(frozen=True)
class SqsSource:
    """An SQS event source mapping."""

    function: str
    event: str
    queue: str  # logical id
    batch_size: int = 10
    report_batch_item_failures: bool = False
    maximum_concurrency: int | None = None
    maximum_batching_window: float = 0.0  # seconds Lambda may wait to fill a batch
    enabled: bool = True


@dataclass(frozen=True)
class StreamSource:
    """A DynamoDB stream event source mapping (run locally by ``StreamPoller``)."""

    function: str
    event: str
    table: str  # logical id
    starting_position: str = "LATEST"
    batch_size: int = 100
    report_batch_item_failures: bool = False
    maximum_retry_attempts: int | None = None  # None: Lambda's default (-1, until the record expires)
    bisect_on_error: bool = False
    on_failure: str | None = None  # logical id of the on-failure destination (an SQS queue)
    enabled: bool = True


@dataclass(frozen=True)
class Schedule:
    """A schedule that invokes a function with a fixed input."""

    name: str
    expression: str  # "rate(5 minutes)", "cron(...)", "at(...)"
    function: str
    input: str | None = None
    timezone: str = "UTC"
    enabled: bool = True
    origin: str = ""  # where it is declared, for messages


@dataclass
class BuiltFunction:
    """A function plan plus everything that invokes it."""

    function: FunctionPlan
    routes: list[Route] = field(default_factory=list)
    sqs_sources: list[SqsSource] = field(default_factory=list)
    stream_sources: list[StreamSource] = field(default_factory=list)
    schedules: list[Schedule] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def build_function(
    logical_id: str,
    properties: Mapping[str, Any],
    globals_: Mapping[str, Any],
    resolver: Resolver,
    base_dir: Path,
) -> BuiltFunction:
    """A function with Globals merged in (SAM's rules: maps merge, scalars override)."""
    where = f"{logical_id}.Properties"
    merged = {**globals_, **properties}

    def get(key: str, default: Any = None) -> Any:
        return resolver.resolve(merged.get(key, default), f"{where}.{key}")

    code_uri, handler = get("CodeUri"), get("Handler")
    if not isinstance(code_uri, str):
        raise TemplateError(f"{where}.CodeUri: expected a local folder, got {code_uri!r}")
    if not isinstance(handler, str) or "." not in handler:
        raise TemplateError(f"{where}.Handler: expected 'module.function', got {handler!r}")
    variables = {
        **((globals_.get("Environment") or {}).get("Variables") or {}),
        **((properties.get("Environment") or {}).get("Variables") or {}),
    }
    environment: dict[str, str] = {}
    for key, value in variables.items():
        here = f"{where}.Environment.Variables.{key}"
        resolved = resolver.resolve(value, here)
        if resolved is not NO_VALUE:
            environment[key] = resolver.stringify(resolved, here)
    built = BuiltFunction(
        FunctionPlan(
            logical_id=logical_id,
            name=local_name(logical_id),
            code_dir=(base_dir / code_uri).resolve(),
            handler=handler,
            timeout=int(get("Timeout", DEFAULT_TIMEOUT)),
            memory_mb=int(get("MemorySize", DEFAULT_MEMORY)),
            environment=environment,
            alias=str(get("AutoPublishAlias")) if get("AutoPublishAlias") else None,
        )
    )
    for event_name, event in (properties.get("Events") or {}).items():
        _add_event(built, event_name, event or {}, resolver)
    return built


def _add_event(built: BuiltFunction, event_name: str, event: Mapping[str, Any], resolver: Resolver) -> None:
    function = built.function.logical_id
    where = f"{function}.Events.{event_name}"
    kind = event.get("Type")
    raw = event.get("Properties") or {}

    def get(key: str, default: Any = None) -> Any:
        return resolver.resolve(raw.get(key, default), f"{where}.{key}")

    if kind == "HttpApi":
        if str(get("PayloadFormatVersion", "2.0")) != "2.0":
            raise TemplateError(f"{where}.PayloadFormatVersion: the local gateway only builds 2.0 events")
        method = str(get("Method", "ANY")).upper()
        built.routes.append(Route("ANY" if method == "*" else method, str(get("Path", "$default")), function))
    elif kind == "SQS":
        queue = logical_id_of(raw.get("Queue"), ("Arn",))
        if queue is None:
            raise TemplateError(f"{where}.Queue: use !GetAtt <Queue>.Arn of a queue in this template")
        built.sqs_sources.append(
            SqsSource(
                function=function,
                event=event_name,
                queue=queue,
                batch_size=int(get("BatchSize", 10)),
                report_batch_item_failures="ReportBatchItemFailures" in (get("FunctionResponseTypes") or []),
                maximum_concurrency=_optional_int((get("ScalingConfig") or {}).get("MaximumConcurrency")),
                maximum_batching_window=float(get("MaximumBatchingWindowInSeconds", 0)),
                enabled=get("Enabled", True) in (True, "true", "True"),
            )
        )
    elif kind == "DynamoDB":
        built.stream_sources.append(_stream_source(function, event_name, raw, get, where))
    elif kind in ("ScheduleV2", "Schedule"):
        expression = get("ScheduleExpression" if kind == "ScheduleV2" else "Schedule")
        if not isinstance(expression, str):
            raise TemplateError(f"{where}: a {kind} event needs a schedule expression")
        enabled = get("Enabled", True) in (True, "true", "True") and str(get("State", "ENABLED")) == "ENABLED"
        built.schedules.append(
            Schedule(
                name=str(get("Name", f"{function}{event_name}")),
                expression=expression,
                function=function,
                input=_input(get("Input")),
                timezone=str(get("ScheduleExpressionTimezone", "UTC")),
                enabled=enabled,
                origin=where,
            )
        )
    else:
        built.ignored.append(f"{where} ({kind})")


def _stream_source(
    function: str, event_name: str, raw: Mapping[str, Any], get: Callable[..., Any], where: str
) -> StreamSource:
    """A DynamoDB stream event: the table it reads, batching, retries and where failures go."""
    table = logical_id_of(raw.get("Stream"), ("StreamArn",))
    if table is None:
        raise TemplateError(f"{where}.Stream: use !GetAtt <Table>.StreamArn of a table in this template")
    return StreamSource(
        function=function,
        event=event_name,
        table=table,
        starting_position=str(get("StartingPosition", "LATEST")),
        batch_size=int(get("BatchSize", 100)),
        report_batch_item_failures="ReportBatchItemFailures" in (get("FunctionResponseTypes") or []),
        maximum_retry_attempts=_optional_int(get("MaximumRetryAttempts")),
        bisect_on_error=get("BisectBatchOnFunctionError", False) in (True, "true", "True"),
        on_failure=logical_id_of(
            ((raw.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination"), ("Arn",)
        ),
        enabled=get("Enabled", True) in (True, "true", "True"),
    )


def build_scheduler_schedule(logical_id: str, properties: Mapping[str, Any], resolver: Resolver) -> Schedule:
    """An AWS::Scheduler::Schedule whose target is a function in the template."""
    where = f"{logical_id}.Properties"
    target = properties.get("Target") or {}
    function = logical_id_of(target.get("Arn"), ("Arn",))
    if function is None:
        raise TemplateError(f"{where}.Target.Arn: use !GetAtt <Function>.Arn of a function in this template")
    expression = resolver.resolve(properties.get("ScheduleExpression"), f"{where}.ScheduleExpression")
    if not isinstance(expression, str):
        raise TemplateError(f"{where}.ScheduleExpression is required")
    return Schedule(
        name=str(resolver.resolve(properties.get("Name", logical_id), f"{where}.Name")),
        expression=expression,
        function=function,
        input=_input(resolver.resolve(target.get("Input"), f"{where}.Target.Input")),
        timezone=str(resolver.resolve(properties.get("ScheduleExpressionTimezone", "UTC"), where)),
        enabled=str(resolver.resolve(properties.get("State", "ENABLED"), where)) == "ENABLED",
        origin=logical_id,
    )


def _input(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)  # Input is a JSON string; a mapping written in YAML means the same


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)
