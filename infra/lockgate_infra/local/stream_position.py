"""Where a stream poller stands against its stream: what a fresh reader sees after its position.

A fresh shard iterator each time, never a long-lived one: the status must see the stream as it is
even when the poller's own iterator has gone wrong (e.g. stranded by a cancelled transaction).
"""

from __future__ import annotations

from typing import Any

PAGE = 1000  # GetRecords' limit


def records_after(
    streams: Any, stream_arn: str, shard_id: str, position: str | None, most: int = PAGE
) -> int:
    """How many records the shard holds after sequence number ``position`` (all of them for None)."""
    return len(_read(streams, stream_arn, shard_id, position, most))


def last_sequence_number(streams: Any, stream_arn: str, shard_id: str) -> str | None:
    """The sequence number of the shard's last record (None when it holds none)."""
    position = None
    while records := _read(streams, stream_arn, shard_id, position, PAGE):
        position = str(records[-1]["dynamodb"]["SequenceNumber"])
        if len(records) < PAGE:
            break
    return position


def _read(streams: Any, stream_arn: str, shard_id: str, position: str | None, most: int) -> list[Any]:
    where: dict[str, str] = (
        {"ShardIteratorType": "TRIM_HORIZON"}
        if position is None
        else {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": position}
    )
    iterator = streams.get_shard_iterator(StreamArn=stream_arn, ShardId=shard_id, **where)["ShardIterator"]
    records: list[Any] = []
    while iterator and len(records) < most:
        response = streams.get_records(ShardIterator=iterator, Limit=min(PAGE, most - len(records)))
        page = response.get("Records") or []
        if not page:
            break
        records += page
        iterator = response.get("NextShardIterator")
    return records
