"""Tables, queues, buckets and secrets as the local stack creates them, from their template properties."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lockgate_infra.local.intrinsics import ACCOUNT_ID, REGION, Resolver, TemplateError, logical_id_of

LOCAL_PREFIX = "lockgate-local-"

# CloudFormation queue property → SQS attribute; RedrivePolicy is handled on its own.
_QUEUE_ATTRIBUTES = (
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "DelaySeconds",
    "FifoQueue",
    "FifoThroughputLimit",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "VisibilityTimeout",
)
_TABLE_PROPERTIES = (
    "AttributeDefinitions",
    "BillingMode",
    "GlobalSecondaryIndexes",
    "KeySchema",
    "LocalSecondaryIndexes",
    "PrimaryKey",
    "ProvisionedThroughput",
    "StreamSpecification",
    "TimeToLiveSpecification",
)
_SIMPLE_TABLE_TYPES = {"String": "S", "Number": "N", "Binary": "B"}


def local_name(logical_id: str) -> str:
    """The local physical name of a resource: ``lockgate-local-{LogicalId}``."""
    return f"{LOCAL_PREFIX}{logical_id}"


def local_api_id(logical_id: str) -> str:
    """What ``Ref`` to an HTTP API gives locally (a deployed one gives its id, e.g. ``a1b2c3d4e5``)."""
    return local_name(logical_id).lower()


def local_api_url(logical_id: str) -> str:
    """The base URL a template builds for an HTTP API, with its local id, without a trailing slash.

    ``LocalStack`` replaces it in function environments by the gateway's URL.
    """
    return f"https://{local_api_id(logical_id)}.execute-api.{REGION}.amazonaws.com"


def bucket_name(logical_id: str) -> str:
    """S3 bucket names must be lower-case."""
    return local_name(logical_id).lower()


def _queue_name(logical_id: str, properties: Mapping[str, Any]) -> str:
    fifo = properties.get("FifoQueue") in (True, "true", "True")
    return local_name(logical_id) + (".fifo" if fifo else "")


@dataclass(frozen=True)
class TablePlan:
    """A DynamoDB table: ``create_kwargs`` go to ``create_table``, then TTL is switched on."""

    logical_id: str
    name: str
    create_kwargs: dict[str, Any]
    ttl_attribute: str | None = None


@dataclass(frozen=True)
class QueuePlan:
    """An SQS queue; the redrive policy names its dead-letter queue by logical id."""

    logical_id: str
    name: str
    url: str
    arn: str
    attributes: dict[str, str]
    dead_letter_queue: str | None = None
    max_receive_count: int | None = None

    @property
    def visibility_timeout(self) -> int:
        """Seconds a received message stays invisible (SQS's default is 30)."""
        return int(self.attributes.get("VisibilityTimeout", "30"))


@dataclass(frozen=True)
class BucketPlan:
    """An S3 bucket."""

    logical_id: str
    name: str


@dataclass(frozen=True)
class SecretPlan:
    """A Secrets Manager secret; ``value`` None means generate one, as GenerateSecretString would."""

    logical_id: str
    name: str
    value: str | None
    generate_key: str | None = None  # GenerateSecretString.GenerateStringKey
    template: str | None = None  # GenerateSecretString.SecretStringTemplate


def local_references(
    resources: Mapping[str, Any], endpoint_url: str
) -> tuple[dict[str, Any], dict[tuple[str, str], str]]:
    """What ``Ref`` and ``GetAtt`` return locally, for every resource the local stack knows."""
    refs: dict[str, Any] = {}
    attributes: dict[tuple[str, str], str] = {}
    prefix = f"arn:aws:{{}}:{REGION}:{ACCOUNT_ID}"
    for logical_id, spec in resources.items():
        kind = spec.get("Type")
        properties = spec.get("Properties") or {}
        if kind in ("AWS::DynamoDB::Table", "AWS::Serverless::SimpleTable"):
            name = local_name(logical_id)
            refs[logical_id] = name
            attributes[(logical_id, "Arn")] = f"{prefix.format('dynamodb')}:table/{name}"
        elif kind == "AWS::SQS::Queue":
            name = _queue_name(logical_id, properties)
            url = f"{endpoint_url}/{ACCOUNT_ID}/{name}"
            refs[logical_id] = url
            attributes[(logical_id, "Arn")] = f"{prefix.format('sqs')}:{name}"
            attributes[(logical_id, "QueueName")] = name
            attributes[(logical_id, "QueueUrl")] = url
        elif kind == "AWS::S3::Bucket":
            name = bucket_name(logical_id)
            refs[logical_id] = name
            attributes[(logical_id, "Arn")] = f"arn:aws:s3:::{name}"
            attributes[(logical_id, "DomainName")] = f"{name}.s3.amazonaws.com"
        elif kind == "AWS::SecretsManager::Secret":
            # Ref is the ARN when deployed; the name works everywhere an ARN does
            # (GetSecretValue accepts both) and is known before the secret exists.
            refs[logical_id] = local_name(logical_id)
        elif kind in ("AWS::Serverless::HttpApi", "AWS::ApiGatewayV2::Api"):
            # The id in the API's deployed URL; the local stack replaces that URL by the
            # gateway's once it listens (see ``local_api_url``).
            refs[logical_id] = local_api_id(logical_id)
            attributes[(logical_id, "ApiEndpoint")] = local_api_url(logical_id)
        elif kind == "AWS::Serverless::Function":
            name = local_name(logical_id)
            refs[logical_id] = name
            attributes[(logical_id, "Arn")] = f"{prefix.format('lambda')}:function:{name}"
            alias = properties.get("AutoPublishAlias")
            if isinstance(alias, str) and alias:  # SAM's ``!Ref NAME.Alias``: the alias's ARN
                refs[f"{logical_id}.Alias"] = f"{prefix.format('lambda')}:function:{name}:{alias}"
    return refs, attributes


def build_table(logical_id: str, kind: str, properties: Mapping[str, Any], resolver: Resolver) -> TablePlan:
    """``create_table`` arguments from AWS::DynamoDB::Table (or SAM SimpleTable) properties."""
    where = f"{logical_id}.Properties"
    # Only what shapes the table is resolved: names, tags, KMS keys and the like don't matter locally.
    props = resolver.resolve({k: v for k, v in properties.items() if k in _TABLE_PROPERTIES}, where)
    name = local_name(logical_id)
    if kind == "AWS::Serverless::SimpleTable":
        key = props.get("PrimaryKey") or {}
        key_name, key_type = key.get("Name", "id"), _SIMPLE_TABLE_TYPES.get(key.get("Type", "String"))
        if key_type is None:
            raise TemplateError(f"{where}.PrimaryKey.Type: expected String, Number or Binary")
        props = {
            "KeySchema": [{"AttributeName": key_name, "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": key_name, "AttributeType": key_type}],
            "BillingMode": "PROVISIONED" if "ProvisionedThroughput" in props else "PAY_PER_REQUEST",
            **(
                {"ProvisionedThroughput": props["ProvisionedThroughput"]}
                if "ProvisionedThroughput" in props
                else {}
            ),
        }
    for required in ("KeySchema", "AttributeDefinitions"):
        if not props.get(required):
            raise TemplateError(f"{where}.{required} is required")
    billing = props.get("BillingMode", "PROVISIONED")
    kwargs: dict[str, Any] = {
        "TableName": name,
        "KeySchema": props["KeySchema"],
        "AttributeDefinitions": props["AttributeDefinitions"],
        "BillingMode": billing,
    }
    if billing == "PROVISIONED":
        kwargs["ProvisionedThroughput"] = _throughput(props.get("ProvisionedThroughput"))
    for key in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
        if props.get(key):
            kwargs[key] = [_index(index, billing, global_=key.startswith("Global")) for index in props[key]]
    stream = props.get("StreamSpecification")
    if stream:
        kwargs["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": stream["StreamViewType"]}
    ttl = props.get("TimeToLiveSpecification") or {}
    enabled = ttl.get("Enabled", True) in (True, "true", "True")
    return TablePlan(logical_id, name, kwargs, ttl.get("AttributeName") if enabled else None)


def _throughput(value: Mapping[str, Any] | None) -> dict[str, int]:
    value = value or {}
    return {
        "ReadCapacityUnits": int(value.get("ReadCapacityUnits", 5)),
        "WriteCapacityUnits": int(value.get("WriteCapacityUnits", 5)),
    }


def _index(index: Mapping[str, Any], billing: str, *, global_: bool) -> dict[str, Any]:
    out: dict[str, Any] = {k: index[k] for k in ("IndexName", "KeySchema", "Projection") if k in index}
    if global_ and billing == "PROVISIONED":
        out["ProvisionedThroughput"] = _throughput(index.get("ProvisionedThroughput"))
    return out


def build_queue(
    logical_id: str, properties: Mapping[str, Any], resolver: Resolver, endpoint_url: str
) -> QueuePlan:
    """Queue attributes from AWS::SQS::Queue properties; the DLQ is kept as a logical id."""
    where = f"{logical_id}.Properties"
    attributes = {
        key: resolver.resolve_string(properties[key], f"{where}.{key}")
        for key in _QUEUE_ATTRIBUTES
        if key in properties
    }
    name = _queue_name(logical_id, properties)
    dead_letter_queue, max_receive_count = None, None
    redrive = properties.get("RedrivePolicy")
    if redrive is not None:
        if not isinstance(redrive, dict):
            raise TemplateError(f"{where}.RedrivePolicy: expected a mapping")
        target = redrive.get("deadLetterTargetArn")
        dead_letter_queue = logical_id_of(target)
        if dead_letter_queue is None:
            raise TemplateError(
                f"{where}.RedrivePolicy.deadLetterTargetArn: use !GetAtt <Queue>.Arn of a queue "
                f"in this template, got {target!r}"
            )
        max_receive_count = int(resolver.resolve(redrive.get("maxReceiveCount", 10), where))
    return QueuePlan(
        logical_id=logical_id,
        name=name,
        url=f"{endpoint_url}/{ACCOUNT_ID}/{name}",
        arn=f"arn:aws:sqs:{REGION}:{ACCOUNT_ID}:{name}",
        attributes=attributes,
        dead_letter_queue=dead_letter_queue,
        max_receive_count=max_receive_count,
    )


def build_bucket(logical_id: str) -> BucketPlan:
    """An S3 bucket under its local (lower-case) name."""
    return BucketPlan(logical_id, bucket_name(logical_id))


def build_secret(logical_id: str, properties: Mapping[str, Any], resolver: Resolver) -> SecretPlan:
    """A secret with its literal SecretString, or one to generate."""
    where = f"{logical_id}.Properties"
    if "SecretString" in properties:
        value = resolver.resolve_string(properties["SecretString"], f"{where}.SecretString")
        return SecretPlan(logical_id, local_name(logical_id), value)
    generate = resolver.resolve(properties.get("GenerateSecretString") or {}, f"{where}.GenerateSecretString")
    return SecretPlan(
        logical_id,
        local_name(logical_id),
        None,
        generate_key=generate.get("GenerateStringKey"),
        template=generate.get("SecretStringTemplate"),
    )
