"""The operation ledger as a test reads it: what ran, once, with which arguments."""

from __future__ import annotations

from typing import Any

from lockgate.actions.ledger import Operation, OpState


class LedgerView:
    """Every entry of the State table's operation ledger (items ``op#<key>``): ``stack.ledger``.

    Built from a DynamoDB client and the State table's name; each read scans the table afresh.
    """

    def __init__(self, dynamodb: Any, state_table: str) -> None:
        self._db = dynamodb
        self._table = state_table

    def operations(self, tool: str | None = None) -> list[Operation]:
        """Every entry (of ``tool``, when given), oldest first."""
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "FilterExpression": "begins_with(pk, :op) AND sk = :sk",
            "ExpressionAttributeValues": {":op": {"S": "op#"}, ":sk": {"S": "op"}},
            "ConsistentRead": True,
        }
        while True:
            page = self._db.scan(**kwargs)
            items += page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        found = [Operation.from_item(item) for item in items]
        return sorted(
            (op for op in found if tool is None or op.tool == tool), key=lambda op: op.updated_at or 0
        )

    def ran(self, tool: str) -> bool:
        """Whether ``tool`` ran and succeeded at least once."""
        return any(op.state is OpState.SUCCEEDED for op in self.operations(tool))

    def count(self, tool: str) -> int:
        """How many times ``tool`` succeeded (each entry is one side effect)."""
        return sum(op.state is OpState.SUCCEEDED for op in self.operations(tool))
