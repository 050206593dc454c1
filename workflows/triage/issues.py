"""The issues triage works on, by ``owner/repo#number``: as GitHub sent them, and what triage did."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from lockgate.clock import Clock


class IssueNotFound(Exception):
    """No issue has that key."""


class Issues:
    """Issues in the workflow's table: title, text, author, labels, comments, open or closed."""

    def __init__(self, dynamodb: Any, table: str, clock: Clock) -> None:
        self._db = dynamodb
        self._table = table
        self._clock = clock

    def save(self, key: str, title: str, body: str, author: str, labels: list[str]) -> None:
        """Keep an issue as opened; a redelivery of the webhook keeps the first copy."""
        item: dict[str, Any] = {
            "issue": {"S": key},
            "title": {"S": title},
            "body": {"S": body},
            "author": {"S": author},
            "state": {"S": "open"},
            "opened_at": {"N": str(int(self._clock.now()))},
        }
        if labels:
            item["labels"] = {"SS": sorted(set(labels))}
        try:
            self._db.put_item(
                TableName=self._table, Item=item, ConditionExpression="attribute_not_exists(issue)"
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise

    def get(self, key: str) -> dict[str, Any] | None:
        """The issue as the agent reads it, or None."""
        found = self._db.get_item(TableName=self._table, Key={"issue": {"S": key}}, ConsistentRead=True).get(
            "Item"
        )
        if found is None:
            return None
        return {
            "issue": key,
            "title": found["title"]["S"],
            "body": found["body"]["S"],
            "author": found["author"]["S"],
            "labels": sorted(found.get("labels", {}).get("SS", [])),
            "comments": [c["S"] for c in found.get("comments", {}).get("L", [])],
            "state": found["state"]["S"],
        }

    def add_label(self, key: str, label: str) -> None:
        """Add a label (adding one it has changes nothing); IssueNotFound if there is no such issue."""
        self._update(key, "ADD labels :label", {":label": {"SS": [label]}})

    def comment(self, key: str, text: str) -> None:
        """Add a comment; IssueNotFound if there is no such issue."""
        self._update(
            key,
            "SET comments = list_append(if_not_exists(comments, :none), :text)",
            {":none": {"L": []}, ":text": {"L": [{"S": text}]}},
        )

    def close(self, key: str, reason: str) -> None:
        """Close the issue with a reason; IssueNotFound if there is no such issue."""
        self._update(
            key,
            "SET #state = :closed, close_reason = :reason",
            {":closed": {"S": "closed"}, ":reason": {"S": reason}},
            {"#state": "state"},
        )

    def _update(
        self, key: str, expression: str, values: dict[str, Any], names: dict[str, str] | None = None
    ) -> None:
        try:
            self._db.update_item(
                TableName=self._table,
                Key={"issue": {"S": key}},
                UpdateExpression=expression,
                ConditionExpression="attribute_exists(issue)",
                ExpressionAttributeValues=values,
                **({"ExpressionAttributeNames": names} if names else {}),
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise IssueNotFound(key) from exc
            raise
