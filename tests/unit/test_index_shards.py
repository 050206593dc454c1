"""The sharded status index: every delivery found once, in the right order, across all 16 shards."""

from __future__ import annotations

from collections import Counter

from lockgate.inbox.models import Delivery, Status
from lockgate.inbox.store import InboxStore
from lockgate.index_shards import INDEX_SHARDS, ShardedIndex, index_shard
from tests.support import Aws


def _store(aws: Aws, count: int, status: Status = Status.RECEIVED) -> InboxStore:
    store = InboxStore(aws.client("dynamodb"), aws.inbox_table)
    for n in range(count):
        store.put_new(
            Delivery(
                pk=f"github#d{n}",
                source="github",
                delivery_id=f"d{n}",
                event_type="push",
                status=status,
                received_at=1_000 + n,
                available_at=1_000 + n,
            )
        )
    return store


def test_given_an_id_then_its_shard_is_stable_and_ids_spread_over_every_shard() -> None:
    shards = Counter(index_shard(f"github#d{n}") for n in range(1_600))

    assert index_shard("github#d1") == index_shard("github#d1")
    assert set(shards) == set(range(INDEX_SHARDS))
    assert max(shards.values()) < 2 * 1_600 / INDEX_SHARDS  # no shard takes twice its share


def test_given_deliveries_on_many_shards_when_paging_then_each_is_listed_exactly_once(aws: Aws) -> None:
    store = _store(aws, 40)
    seen: list[str] = []
    start = None
    pages = 0
    while True:
        page, start = store.page_by_status(Status.RECEIVED, start=start, limit=3)
        seen += [d.pk for d in page]
        pages += 1
        if start is None:
            break

    assert sorted(seen) == sorted(f"github#d{n}" for n in range(40))
    assert len(seen) == 40
    assert pages >= 40 // 3


def test_given_a_cutoff_when_paging_then_only_older_deliveries_are_listed(aws: Aws) -> None:
    store = _store(aws, 20)
    seen, start = [], None
    while True:
        page, start = store.page_by_status(Status.RECEIVED, received_before=1_005, start=start)
        seen += [d.pk for d in page]
        if start is None:
            break

    assert sorted(seen) == sorted(f"github#d{n}" for n in range(5))


def test_given_deliveries_on_many_shards_then_the_oldest_and_newest_are_merged_across_them(aws: Aws) -> None:
    store = _store(aws, 30)

    assert [d.pk for d in store.list_by_status(Status.RECEIVED, limit=2, oldest_first=True)] == [
        "github#d0",
        "github#d1",
    ]
    assert [d.pk for d in store.list_by_status(Status.RECEIVED, limit=3)] == [
        "github#d29",
        "github#d28",
        "github#d27",
    ]
    assert store.count_by_status()[Status.RECEIVED] == 30
    assert store.count_by_status()[Status.DONE] == 0


def test_given_a_cursor_saved_before_sharding_then_paging_starts_from_the_first_shard(aws: Aws) -> None:
    """A sweep's cursor stored by the previous version is a raw key of the old index."""
    store = _store(aws, 5)
    index = ShardedIndex(aws.inbox_table, "by-status-sharded", "received_at")
    old_cursor = {"pk": {"S": "github#d2"}, "status": {"S": "received"}, "received_at": {"N": "1002"}}

    seen, start = [], old_cursor
    while True:
        items, start = index.page(
            aws.client("dynamodb").query,
            start,
            "#s = :s",
            {":s": {"S": "received"}},
            limit=50,
            names={"#s": "status"},
        )
        seen += [item["pk"]["S"] for item in items]
        if start is None:
            break

    assert sorted(seen) == [f"github#d{n}" for n in range(5)]
    assert store.get("github#d0").status is Status.RECEIVED


def test_given_a_stored_delivery_then_its_item_carries_its_shard(aws: Aws) -> None:
    _store(aws, 1)

    item = aws.client("dynamodb").get_item(TableName=aws.inbox_table, Key={"pk": {"S": "github#d0"}})["Item"]

    assert item["index_shard"] == {"N": str(index_shard("github#d0"))}
