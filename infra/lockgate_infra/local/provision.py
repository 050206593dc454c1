"""Creating the plan's tables, queues, buckets and secrets: on moto in-process or a moto server."""

from __future__ import annotations

import json
import logging
import secrets
from typing import TYPE_CHECKING, Any

from lockgate.runtime.deps import OnePerService
from lockgate_infra.local.resources import QueuePlan, SecretPlan, TablePlan
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
    provisioner = Provisioner(plan, session, endpoint_url=endpoint_url)
    for logical_id in [*plan.tables, *plan.queues, *plan.buckets, *plan.secrets]:
        provisioner.create(logical_id)
    return dict(provisioner.created)


class Provisioner:
    """Creates the plan's resources one at a time, each with what it needs (TTL, its DLQ first)."""

    def __init__(
        self, plan: LocalPlan, session: boto3.session.Session, *, endpoint_url: str | None = None
    ) -> None:
        self._plan = plan
        self._session = session
        self._endpoint_url = endpoint_url
        self._client = OnePerService(self._new_client)
        self.created: dict[str, str] = {}  # logical id -> physical name (a URL for queues)

    def create(self, logical_id: str) -> str:
        """Create one resource of the plan (once); its physical name."""
        if logical_id in self.created:
            return self.created[logical_id]
        plan = self._plan
        if logical_id in plan.tables:
            name = self._table(plan.tables[logical_id])
        elif logical_id in plan.queues:
            name = self._queue(plan.queues[logical_id])
        elif logical_id in plan.buckets:
            name = plan.buckets[logical_id].name
            self._client("s3").create_bucket(Bucket=name)
        elif logical_id in plan.secrets:
            secret = plan.secrets[logical_id]
            self._client("secretsmanager").create_secret(Name=secret.name, SecretString=_secret_value(secret))
            name = secret.name
        else:
            raise KeyError(f"{logical_id} is not a table, queue, bucket or secret of the template")
        self.created[logical_id] = name
        return name

    def _new_client(self, service: str) -> Any:
        return self._session.client(service, endpoint_url=self._endpoint_url)  # type: ignore[call-overload]

    def _table(self, table: TablePlan) -> str:
        dynamodb = self._client("dynamodb")
        dynamodb.create_table(**table.create_kwargs)
        if table.ttl_attribute:
            dynamodb.update_time_to_live(
                TableName=table.name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": table.ttl_attribute},
            )
        return table.name

    def _queue(self, queue: QueuePlan) -> str:
        if queue.dead_letter_queue is not None:
            self.create(queue.dead_letter_queue)  # it must exist for the redrive policy to name it
        sqs = self._client("sqs")
        url: str = sqs.create_queue(QueueName=queue.name, Attributes=queue.attributes)["QueueUrl"]
        if self._endpoint_url is not None and url != queue.url:
            log.warning("moto named %s %s, not %s as planned", queue.logical_id, url, queue.url)
        if queue.dead_letter_queue is not None:
            policy = {
                "deadLetterTargetArn": self._plan.queues[queue.dead_letter_queue].arn,
                "maxReceiveCount": queue.max_receive_count,
            }
            sqs.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": json.dumps(policy)})
        return url


def _secret_value(secret: SecretPlan) -> str:
    if secret.value is not None:
        return secret.value
    generated = secrets.token_urlsafe(32)
    if secret.generate_key and secret.template:
        return json.dumps({**json.loads(secret.template), secret.generate_key: generated})
    return generated
