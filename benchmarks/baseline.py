"""The comparison receiver: a GitHub webhook receiver written the way it is commonly done,
with Powertools' idempotency utility keyed on the delivery id.

Verify the signature, then an ``idempotent_function`` whose body stores the delivery and
sends an SQS pointer. Powertools records the key IN_PROGRESS (one conditional put), runs
the function (put + send), then marks the record COMPLETED (an update): 4 calls for a new
delivery. A duplicate fails the conditional put and, with ``ReturnValuesOnConditionCheckFailure``
(Powertools ≥ 2.26), gets the stored result back without a read: 1 call.

Tables come from template.yaml so nothing is declared by hand: the idempotency records go
to the State table (Powertools' composite-key mode, ``pk``/``sk``, TTL on ``ttl``), the
deliveries to the Inbox table under their own key prefix.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)

RETENTION_SECONDS = 14 * 86_400


class PowertoolsReceiver:
    """POST /webhooks/github → verify → idempotent(store + queue) → 200."""

    def __init__(
        self,
        dynamodb: Any,
        sqs: Any,
        *,
        deliveries_table: str,
        idempotency_table: str,
        queue_url: str,
        secret: str,
        now: Any,
    ) -> None:
        self._db = dynamodb
        self._sqs = sqs
        self._deliveries_table = deliveries_table
        self._queue_url = queue_url
        self._key = secret.encode()
        self._now = now
        persistence = DynamoDBPersistenceLayer(
            table_name=idempotency_table,
            key_attr="pk",
            sort_key_attr="sk",
            static_pk_value="idempotency#webhook_receiver",
            expiry_attr="ttl",
            boto3_client=dynamodb,
        )
        self._config = IdempotencyConfig(event_key_jmespath="delivery_id", raise_on_no_idempotency_key=True)
        self._store_once = idempotent_function(
            data_keyword_argument="delivery", persistence_store=persistence, config=self._config
        )(self._store_and_queue)

    def handle(self, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        """An API Gateway v2 event in, a proxy response out."""
        # As Powertools' docs say for idempotent_function: bounds the IN_PROGRESS lock by the time left.
        self._config.register_lambda_context(context or _Context())
        headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
        text = event.get("body") or ""
        body = (
            base64.b64decode(text) if event.get("isBase64Encoded") else text.encode("utf-8", "surrogatepass")
        )
        expected = "sha256=" + hmac.new(self._key, body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, headers.get("x-hub-signature-256", "")):
            return _reply(401, {"error": "invalid signature"})
        delivery_id = headers.get("x-github-delivery", "")
        try:
            json.loads(body)
        except ValueError:
            return _reply(400, {"error": "body is not JSON"})
        if not delivery_id:
            return _reply(400, {"error": "missing delivery id"})
        delivery = {
            "delivery_id": delivery_id,
            "event_type": headers.get("x-github-event", ""),
            "body": body.decode("utf-8", "replace"),
            "received_at": int(self._now()),
        }
        return _reply(200, self._store_once(delivery=delivery))

    def _store_and_queue(self, delivery: dict[str, Any]) -> dict[str, Any]:
        pk = f"baseline-github#{delivery['delivery_id']}"
        self._db.put_item(
            TableName=self._deliveries_table,
            Item={
                "pk": {"S": pk},
                "delivery_id": {"S": delivery["delivery_id"]},
                "event_type": {"S": delivery["event_type"]},
                "status": {"S": "received"},
                "received_at": {"N": str(delivery["received_at"])},
                "body": {"S": delivery["body"]},
                "ttl": {"N": str(delivery["received_at"] + RETENTION_SECONDS)},
            },
        )
        self._sqs.send_message(QueueUrl=self._queue_url, MessageBody=json.dumps({"pk": pk}))
        return {"status": "accepted", "delivery": pk}


class _Context:
    """The part of a Lambda context Powertools reads."""

    def get_remaining_time_in_millis(self) -> int:
        return 10_000


def _reply(status: int, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"content-type": "application/json"},
        "body": json.dumps(payload),
    }
