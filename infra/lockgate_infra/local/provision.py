"""Creating the plan's tables, queues, buckets and secrets: on moto in-process or a moto server."""

from __future__ import annotations

import json
import logging
import secrets
from typing import TYPE_CHECKING, Any

from lockgate_infra.local.resources import SecretPlan
from lockgate_infra.local.template import LocalPlan

if TYPE_CHECKING:
    import boto3

log = logging.getLogger("lockgate_infra.local")


def create_resources(
    plan: LocalPlan, session: boto3.session.Session, *, endpoint_url: str | None = None
) -> dict[str, str]:
    """Create every table (with TTL), queue (with redrive), bucket and secret of the plan.

    Returns logical id → physical name (a URL for queues), like CloudFormation's resource list.
    Works against moto in-process (``mock_aws``) or a moto server at ``endpoint_url``.
    """

    def client(service: str) -> Any:
        return session.client(service, endpoint_url=endpoint_url)  # type: ignore[call-overload]

    names: dict[str, str] = {}
    dynamodb, sqs, s3 = client("dynamodb"), client("sqs"), client("s3")
    for table in plan.tables.values():
        dynamodb.create_table(**table.create_kwargs)
        if table.ttl_attribute:
            dynamodb.update_time_to_live(
                TableName=table.name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": table.ttl_attribute},
            )
        names[table.logical_id] = table.name
    for queue in plan.queues.values():
        url = sqs.create_queue(QueueName=queue.name, Attributes=queue.attributes)["QueueUrl"]
        if endpoint_url is not None and url != queue.url:
            log.warning("moto named %s %s, not %s as planned", queue.logical_id, url, queue.url)
        names[queue.logical_id] = url
    for queue in plan.queues.values():  # every queue exists now, so each DLQ can be found
        if queue.dead_letter_queue is not None:
            policy = {
                "deadLetterTargetArn": plan.queues[queue.dead_letter_queue].arn,
                "maxReceiveCount": queue.max_receive_count,
            }
            sqs.set_queue_attributes(
                QueueUrl=names[queue.logical_id], Attributes={"RedrivePolicy": json.dumps(policy)}
            )
    for bucket in plan.buckets.values():
        s3.create_bucket(Bucket=bucket.name)
        names[bucket.logical_id] = bucket.name
    if plan.secrets:
        manager = client("secretsmanager")
        for secret in plan.secrets.values():
            manager.create_secret(Name=secret.name, SecretString=_secret_value(secret))
            names[secret.logical_id] = secret.name
    return names


def _secret_value(secret: SecretPlan) -> str:
    if secret.value is not None:
        return secret.value
    generated = secrets.token_urlsafe(32)
    if secret.generate_key and secret.template:
        return json.dumps({**json.loads(secret.template), secret.generate_key: generated})
    return generated
