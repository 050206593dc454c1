"""The tables a load phase writes to (Inbox and State): their sizes, and putting them back to a known
set of rows, so that every phase starts from the same tables."""

from __future__ import annotations

from typing import Any

from lockgate.dynamo import read_all

TABLES = ("InboxTable", "StateTable")
BATCH = 25  # BatchWriteItem's limit


class Tables:
    """The stack's Inbox and State tables, read and reset through its moto."""

    def __init__(self, stack: Any) -> None:
        self._db = stack.client("dynamodb")
        self._names = [stack.resources[t] for t in TABLES]
        self._key_names = {
            name: [k["AttributeName"] for k in self._db.describe_table(TableName=name)["Table"]["KeySchema"]]
            for name in self._names
        }

    def inbox(self) -> list[dict[str, Any]]:
        """Every Inbox item."""
        return read_all(self._db.scan, TableName=self._names[0])

    def keys(self) -> dict[str, set[tuple[str, ...]]]:
        """Each table's item keys now."""
        return {name: {self._key(name, item) for item in self._items(name)} for name in self._names}

    def sizes(self) -> tuple[int, int]:
        """Inbox items, State items."""
        inbox, state = (len(keys) for keys in self.keys().values())
        return inbox, state

    def reset(self, keep: dict[str, set[tuple[str, ...]]]) -> None:
        """Delete every item whose key is not in ``keep`` (what the warm-up left)."""
        for name in self._names:
            doomed = [
                {k: item[k] for k in self._key_names[name]}
                for item in self._items(name)
                if self._key(name, item) not in keep[name]
            ]
            for start in range(0, len(doomed), BATCH):
                requests = [{"DeleteRequest": {"Key": key}} for key in doomed[start : start + BATCH]]
                unprocessed = self._db.batch_write_item(RequestItems={name: requests}).get("UnprocessedItems")
                if unprocessed:
                    raise RuntimeError(f"{name}: {len(unprocessed.get(name, []))} deletes left unprocessed")

    def _items(self, name: str) -> list[dict[str, Any]]:
        return read_all(self._db.scan, TableName=name, ProjectionExpression=", ".join(self._key_names[name]))

    def _key(self, name: str, item: dict[str, Any]) -> tuple[str, ...]:
        return tuple(next(iter(item[k].values())) for k in self._key_names[name])
