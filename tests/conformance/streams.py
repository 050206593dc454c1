"""A DynamoDB stream reader for the conformance tests: every shard, each kept at its own place.

What a write emitted is read up to a *marker*: a write of the test's own after the action under
test. Records of one item arrive in order, so the records before the marker's are what the action
emitted (on a new table's single shard; AWS may split shards only under far more traffic).
"""

from __future__ import annotations

from typing import Any

from tests.conformance.conftest import Table


class StreamReader:
    """Reads ``table``'s stream from ``position`` (``TRIM_HORIZON`` or ``LATEST``) as it is when made."""

    def __init__(self, table: Table, position: str = "TRIM_HORIZON") -> None:
        assert table.stream_arn, "the table has no stream"
        self._table = table
        self._streams = table.cloud.client("dynamodbstreams")
        self._iterators: dict[str, str | None] = {}
        self.records: list[dict[str, Any]] = []
        self._seen = 0  # records up to the last marker's, inclusive
        self._open(position)

    def _open(self, position: str) -> None:
        description = self._streams.describe_stream(StreamArn=self._table.stream_arn)["StreamDescription"]
        for shard in description["Shards"]:
            if shard["ShardId"] not in self._iterators:
                self._iterators[shard["ShardId"]] = self._streams.get_shard_iterator(
                    StreamArn=self._table.stream_arn, ShardId=shard["ShardId"], ShardIteratorType=position
                )["ShardIterator"]

    def poll(self) -> list[dict[str, Any]]:
        """The records that arrived since the last poll (shards born since are read from their start)."""
        self._open("TRIM_HORIZON")
        fresh: list[dict[str, Any]] = []
        for shard, iterator in list(self._iterators.items()):
            if iterator is None:
                continue  # a closed shard, read to its end
            response = self._streams.get_records(ShardIterator=iterator, Limit=1000)
            fresh += response["Records"]
            self._iterators[shard] = response.get("NextShardIterator")
        self.records += fresh
        return fresh

    def since_last_mark(self, marker: str) -> list[dict[str, Any]]:
        """The records after the previous marker's (or the start) and before ``marker``'s first record."""

        def probe() -> list[dict[str, Any]] | None:
            self.poll()
            keys = [pk(record) for record in self.records]
            if marker not in keys[self._seen :]:
                return None
            end = keys.index(marker, self._seen)
            between, self._seen = self.records[self._seen : end], end + 1
            return between

        return self._table.cloud.eventually(probe, f"the stream record of {marker!r}")

    def mark(self, marker: str) -> list[dict[str, Any]]:
        """Write item ``marker``; what the stream holds since the last mark (see the module docstring)."""
        self._table.db.put_item(TableName=self._table.name, Item={"pk": {"S": marker}})
        return self.since_last_mark(marker)


def pk(record: dict[str, Any]) -> str:
    """The ``pk`` of a stream record's item."""
    return str(record["dynamodb"]["Keys"]["pk"]["S"])


def summary(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(eventName, pk)`` per record, in order."""
    return [(record["eventName"], pk(record)) for record in records]
