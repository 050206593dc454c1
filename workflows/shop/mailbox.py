"""The Mail table: customers' emails as received, and a record of every reply we send.

Received emails are keyed by ``message_id`` and listed per sender through the ``by-sender``
index (``sender`` + ``received_at``). Sent replies are keyed ``sent#<idempotency key>`` and
carry no ``sender``, so the index never lists them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.dynamo import conditional_failed, error_code, read_keys
from lockgate.errors import StoreUnavailable
from shop.data import ShopUnavailable, from_item, iso, to_item

RETENTION_SECONDS = 90 * 86_400


@dataclass(frozen=True)
class Email:
    """A customer's email as the helpdesk delivered it (its text is untrusted content)."""

    message_id: str
    sender: str  # the verified address, lower-cased
    subject: str
    text: str
    received_at: int
    delivery_id: str = ""

    def as_result(self) -> dict[str, Any]:
        """What read_email returns."""
        return {
            "message_id": self.message_id,
            "from": self.sender,
            "subject": self.subject,
            "text": self.text,
            "received_at": iso(self.received_at),
        }


@dataclass(frozen=True)
class SentMail:
    """A reply we send or sent: ``sending`` until SES accepted it, then ``sent`` (or ``failed``)."""

    idempotency_key: str
    to: str
    subject: str
    body: str
    status: str
    run_id: str
    created_at: int
    ses_message_id: str = ""
    error: str = ""

    def as_result(self) -> dict[str, Any]:
        """What send_email returns."""
        return {"sent": True, "message_id": self.ses_message_id, "to": self.to}

    def settled(self, status: str, *, ses_message_id: str = "", error: str = "") -> SentMail:
        """The same mail with its final status."""
        return replace(self, status=status, ses_message_id=ses_message_id, error=error)


class Mailbox:
    """Adapter over the Mail table."""

    INDEX = "by-sender"

    def __init__(self, dynamodb: Any, table: str) -> None:
        self._db = dynamodb
        self.table = table

    # -- received -------------------------------------------------------------------------

    def store(self, email: Email) -> bool:
        """Keep an email once (a redelivery changes nothing); True if it is new."""
        item = to_item(
            {
                "message_id": email.message_id,
                "kind": "received",
                "sender": email.sender,
                "subject": email.subject,
                "text": email.text,
                "received_at": email.received_at,
                "delivery_id": email.delivery_id or None,
                "ttl": email.received_at + RETENTION_SECONDS,
            }
        )
        return self._put_new(item) is None

    def get(self, message_id: str) -> Email | None:
        """A received email."""
        return _received(self._get(message_id))

    def get_many(self, message_ids: list[str]) -> dict[str, Email]:
        """The received emails among these ids, by id, in one read per 100 (strongly consistent).

        An id missing from the answer (unknown, not a received email, or left unprocessed by
        DynamoDB) is simply absent: ``get`` asks for it again.
        """
        keys = [{"message_id": {"S": message_id}} for message_id in dict.fromkeys(message_ids)]
        try:
            items = read_keys(self._db, self.table, keys, consistent=True)
        except StoreUnavailable as exc:
            raise ShopUnavailable(f"mail: {exc}") from exc
        emails = (_received(from_item(item)) for item in items)
        return {email.message_id: email for email in emails if email is not None}

    def sender_of(self, message_id: str) -> str | None:
        """Who sent a received email, or None."""
        email = self.get(message_id)
        return email.sender if email else None

    def recent_from(self, sender: str, since: int, until: int, limit: int = 10) -> list[str]:
        """Ids of the sender's emails received in [since, until], newest first."""
        try:
            page = self._db.query(
                TableName=self.table,
                IndexName=self.INDEX,
                KeyConditionExpression="sender = :sender AND received_at BETWEEN :since AND :until",
                ExpressionAttributeValues={
                    ":sender": {"S": sender.lower()},
                    ":since": {"N": str(since)},
                    ":until": {"N": str(until)},
                },
                ScanIndexForward=False,
                Limit=limit,
            )
        except (ClientError, BotoCoreError) as exc:
            raise ShopUnavailable(f"mail: {type(exc).__name__}") from exc
        return [item["message_id"]["S"] for item in page.get("Items", [])]

    # -- sent -----------------------------------------------------------------------------

    def begin_send(self, mail: SentMail) -> SentMail | None:
        """Record a reply as ``sending`` before calling SES; the earlier record if the key was used."""
        item = to_item(
            {
                "message_id": f"sent#{mail.idempotency_key}",
                "kind": "sent",
                "to": mail.to,
                "subject": mail.subject,
                "body": mail.body,
                "status": "sending",
                "run_id": mail.run_id,
                "created_at": mail.created_at,
                "ttl": mail.created_at + RETENTION_SECONDS,
            }
        )
        old = self._put_new(item)
        if old is None:
            return None
        existing = self._sent_from(mail.idempotency_key, old) if old else self.sent(mail.idempotency_key)
        if existing is None:  # never send on a record we cannot read
            raise ShopUnavailable("mail: a record with this key exists but is not a sent reply")
        return existing

    def finish_send(
        self, mail: SentMail, status: str, *, ses_message_id: str = "", error: str = ""
    ) -> SentMail:
        """Move a ``sending`` record to ``sent`` or ``failed``."""
        done = mail.settled(status, ses_message_id=ses_message_id, error=error)
        item = to_item(
            {
                "message_id": f"sent#{mail.idempotency_key}",
                "kind": "sent",
                "to": mail.to,
                "subject": mail.subject,
                "body": mail.body,
                "status": status,
                "run_id": mail.run_id,
                "created_at": mail.created_at,
                "ttl": mail.created_at + RETENTION_SECONDS,
                "ses_message_id": ses_message_id or None,
                "error": error or None,
            }
        )
        try:
            # A put, not an update: the worker's role may only put and get in this table.
            self._db.put_item(
                TableName=self.table,
                Item=item,
                ConditionExpression="#status = :sending",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":sending": {"S": "sending"}},
            )
        except ClientError as exc:
            if not conditional_failed(exc):
                raise ShopUnavailable(f"mail: {error_code(exc)}") from exc
        except BotoCoreError as exc:
            raise ShopUnavailable(f"mail: {type(exc).__name__}") from exc
        return done

    def sent(self, idempotency_key: str) -> SentMail | None:
        """The record of the reply sent with this key, if any."""
        v = self._get(f"sent#{idempotency_key}")
        return self._sent_from(idempotency_key, v) if v is not None else None

    @staticmethod
    def _sent_from(idempotency_key: str, v: dict[str, Any]) -> SentMail | None:
        if v.get("kind") != "sent":
            return None
        return SentMail(
            idempotency_key,
            v["to"],
            v.get("subject", ""),
            v.get("body", ""),
            v["status"],
            v.get("run_id", ""),
            int(v.get("created_at", 0)),
            v.get("ses_message_id", ""),
            v.get("error", ""),
        )

    # -- plumbing -------------------------------------------------------------------------

    def _put_new(self, item: dict[str, Any]) -> dict[str, Any] | None:
        """Put unless the key exists: None when written, else the existing item (no second read)."""
        try:
            self._db.put_item(
                TableName=self.table,
                Item=item,
                ConditionExpression="attribute_not_exists(message_id)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if conditional_failed(exc):
                old: dict[str, Any] = exc.response.get("Item") or {}  # type: ignore[assignment]
                return from_item(old)
            raise ShopUnavailable(f"mail: {error_code(exc)}") from exc
        except BotoCoreError as exc:
            raise ShopUnavailable(f"mail: {type(exc).__name__}") from exc
        return None

    def _get(self, message_id: str) -> dict[str, Any] | None:
        try:
            response = self._db.get_item(
                TableName=self.table, Key={"message_id": {"S": message_id}}, ConsistentRead=True
            )
        except (ClientError, BotoCoreError) as exc:
            raise ShopUnavailable(f"mail: {type(exc).__name__}") from exc
        item = response.get("Item")
        return from_item(item) if item else None


def _received(v: dict[str, Any] | None) -> Email | None:
    """A stored item as a received email (None: absent, or a sent-reply record)."""
    if v is None or v.get("kind") != "received":
        return None
    return Email(
        v["message_id"],
        v["sender"],
        v.get("subject", ""),
        v.get("text", ""),
        int(v["received_at"]),
        v.get("delivery_id", ""),
    )
