"""Reading ``template.yaml``: a YAML loader for CloudFormation's short-form tags,
and the ``LocalPlan`` the embedded stack builds from it.

The template is the single source of truth: tables, queues, buckets, routes and
event sources exist locally because they are declared there, never by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lockgate_infra.local.functions import (
    FunctionPlan,
    Route,
    Schedule,
    SqsSource,
    StreamSource,
    build_function,
    build_scheduler_schedule,
)
from lockgate_infra.local.intrinsics import ACCOUNT_ID, REGION, Resolver, TemplateError
from lockgate_infra.local.resources import (
    BucketPlan,
    QueuePlan,
    SecretPlan,
    TablePlan,
    build_bucket,
    build_queue,
    build_secret,
    build_table,
    local_references,
)

__all__ = [
    "DEFAULT_ENDPOINT",
    "BucketPlan",
    "FunctionPlan",
    "LocalPlan",
    "QueuePlan",
    "Route",
    "Schedule",
    "SecretPlan",
    "SqsSource",
    "StreamSource",
    "TablePlan",
    "TemplateError",
    "load_template",
]

DEFAULT_ENDPOINT = "http://127.0.0.1:5000"
_TAGS = (
    "And", "Base64", "Cidr", "Equals", "FindInMap", "GetAZs", "If", "ImportValue",
    "Join", "Not", "Or", "Select", "Split", "Sub", "Transform", "ToJsonString", "Length",
)  # fmt: skip


# libyaml's parser when PyYAML was built with it (about 10x faster on template.yaml), else pure Python.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _CloudFormationLoader(_SafeLoader):  # type: ignore[valid-type,misc]
    """SafeLoader plus CloudFormation's short-form intrinsic tags."""


def _construct(node: yaml.Node, loader: yaml.SafeLoader) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    raise yaml.constructor.ConstructorError(None, None, f"unexpected node {node.tag}", node.start_mark)


def _long_form(name: str) -> Any:
    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
        return {name: _construct(node, loader)}

    return construct


def _get_att(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
    value = _construct(node, loader)
    if isinstance(value, str):  # !GetAtt Resource.Attribute (the attribute may itself contain dots)
        logical_id, _, attribute = value.partition(".")
        return {"Fn::GetAtt": [logical_id, attribute]}
    return {"Fn::GetAtt": value}


def _plain_string(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    # CloudFormation reads 2012-10-17 as a string; PyYAML would make it a date.
    return str(loader.construct_scalar(node))  # type: ignore[arg-type]


_CloudFormationLoader.add_constructor("tag:yaml.org,2002:timestamp", _plain_string)
_CloudFormationLoader.add_constructor("!Ref", _long_form("Ref"))
_CloudFormationLoader.add_constructor("!Condition", _long_form("Condition"))
_CloudFormationLoader.add_constructor("!GetAtt", _get_att)
for _tag in _TAGS:
    _CloudFormationLoader.add_constructor(f"!{_tag}", _long_form(f"Fn::{_tag}"))


def load_template(path: str | Path) -> dict[str, Any]:
    """Parse a CloudFormation/SAM template (YAML or JSON), short-form tags as long-form dicts."""
    try:
        with Path(path).open(encoding="utf-8") as handle:
            template = yaml.load(handle, Loader=_CloudFormationLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise TemplateError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(template, dict) or not isinstance(template.get("Resources"), dict):
        raise TemplateError(f"{path}: not a CloudFormation template (no Resources)")
    return template


def provider_parameters(provider: str) -> dict[str, str]:
    """The template parameters a config's ``[provider]`` deploys with, as ``sam deploy`` is told them:
    ModelProvider for an AWS provider; none for Anthropic's API (a template without it still plans)."""
    return {"ModelProvider": provider} if provider != "anthropic" else {}


@dataclass(frozen=True)
class LocalPlan:
    """Everything the local stack creates and runs, derived from one template."""

    endpoint_url: str
    tables: dict[str, TablePlan] = field(default_factory=dict)
    queues: dict[str, QueuePlan] = field(default_factory=dict)
    buckets: dict[str, BucketPlan] = field(default_factory=dict)
    secrets: dict[str, SecretPlan] = field(default_factory=dict)
    functions: dict[str, FunctionPlan] = field(default_factory=dict)
    routes: tuple[Route, ...] = ()
    sqs_sources: tuple[SqsSource, ...] = ()
    stream_sources: tuple[StreamSource, ...] = ()
    schedules: tuple[Schedule, ...] = ()
    ignored: tuple[str, ...] = ()  # declared but not run locally (e.g. SNS events), for a warning

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        parameters: Mapping[str, str] | None = None,
        *,
        endpoint_url: str = DEFAULT_ENDPOINT,
    ) -> LocalPlan:
        """Read ``path`` and plan it; CodeUri paths are relative to the template's folder."""
        path = Path(path).resolve()
        return cls.from_template(
            load_template(path), parameters, base_dir=path.parent, endpoint_url=endpoint_url
        )

    @classmethod
    def from_template(
        cls,
        template: Mapping[str, Any],
        parameters: Mapping[str, str] | None = None,
        *,
        base_dir: str | Path | None = None,
        endpoint_url: str = DEFAULT_ENDPOINT,
    ) -> LocalPlan:
        """Plan a parsed template; ``parameters`` override the template's Defaults."""
        endpoint_url = endpoint_url.rstrip("/")
        present, resolver = _present(template, parameters, endpoint_url)
        root = Path(base_dir) if base_dir is not None else Path.cwd()
        globals_ = (template.get("Globals") or {}).get("Function") or {}

        tables, queues, buckets, secrets, functions = {}, {}, {}, {}, {}
        routes: list[Route] = []
        sqs_sources: list[SqsSource] = []
        stream_sources: list[StreamSource] = []
        schedules: list[Schedule] = []
        ignored: list[str] = []
        for logical_id, spec in present.items():
            kind = spec.get("Type")
            properties = spec.get("Properties") or {}
            if kind in ("AWS::DynamoDB::Table", "AWS::Serverless::SimpleTable"):
                tables[logical_id] = build_table(logical_id, kind, properties, resolver)
            elif kind == "AWS::SQS::Queue":
                queues[logical_id] = build_queue(logical_id, properties, resolver, endpoint_url)
            elif kind == "AWS::S3::Bucket":
                buckets[logical_id] = build_bucket(logical_id)
            elif kind == "AWS::SecretsManager::Secret":
                secrets[logical_id] = build_secret(logical_id, properties, resolver)
            elif kind == "AWS::Serverless::Function":
                built = build_function(logical_id, properties, globals_, resolver, root)
                functions[logical_id] = built.function
                routes += built.routes
                sqs_sources += built.sqs_sources
                stream_sources += built.stream_sources
                schedules += built.schedules
                ignored += built.ignored
            elif kind == "AWS::Scheduler::Schedule":
                schedules.append(build_scheduler_schedule(logical_id, properties, resolver))

        plan = cls(
            endpoint_url=endpoint_url,
            tables=tables,
            queues=queues,
            buckets=buckets,
            secrets=secrets,
            functions=functions,
            routes=tuple(routes),
            sqs_sources=tuple(sqs_sources),
            stream_sources=tuple(stream_sources),
            schedules=tuple(schedules),
            ignored=tuple(ignored),
        )
        plan._check_references()
        return plan

    def _check_references(self) -> None:
        seen: dict[str, Route] = {}
        for route in self.routes:
            if route.route_key in seen:
                other = seen[route.route_key].function
                raise TemplateError(
                    f"route {route.route_key} is declared by both {other} and {route.function}"
                )
            seen[route.route_key] = route
        for source in self.sqs_sources:
            if source.queue not in self.queues:
                raise TemplateError(f"{source.function}.Events.{source.event}: {source.queue} is not a queue")
        for stream in self.stream_sources:
            if stream.table not in self.tables:
                raise TemplateError(f"{stream.function}.Events.{stream.event}: {stream.table} is not a table")
            if stream.on_failure is not None and stream.on_failure not in self.queues:
                raise TemplateError(
                    f"{stream.function}.Events.{stream.event}.DestinationConfig: {stream.on_failure} "
                    "is not a queue (the local stack sends failed batches to SQS only)"
                )
        for schedule in self.schedules:
            if schedule.function not in self.functions:
                raise TemplateError(f"schedule {schedule.name}: target {schedule.function} is not a function")
        for queue in self.queues.values():
            if queue.dead_letter_queue is not None and queue.dead_letter_queue not in self.queues:
                raise TemplateError(
                    f"{queue.logical_id}.RedrivePolicy: {queue.dead_letter_queue} is not a queue"
                )

    @property
    def region(self) -> str:
        """The region every local resource lives in."""
        return REGION

    @property
    def account_id(self) -> str:
        """The account moto reports."""
        return ACCOUNT_ID


def _present(
    template: Mapping[str, Any], parameters: Mapping[str, str] | None, endpoint_url: str
) -> tuple[dict[str, Any], Resolver]:
    """The resources whose conditions hold, and a resolver that knows their local names."""
    resources: Mapping[str, Any] = template.get("Resources") or {}
    # Conditions depend only on parameters and mappings, so a resolver without
    # resource names can decide which resources exist.
    conditional = Resolver(template, parameters, {}, {})
    present = {
        logical_id: spec
        for logical_id, spec in resources.items()
        if "Condition" not in spec or conditional.condition(spec["Condition"], logical_id)
    }
    refs, attributes = local_references(present, endpoint_url)
    return present, Resolver(template, parameters, refs, attributes)
