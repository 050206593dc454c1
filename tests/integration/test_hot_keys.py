"""The hot-key meter: a known write pattern gives the exact units per key and the ceiling they set."""

from __future__ import annotations

import pytest

from lockgate_infra.cost.hotkeys import (
    PARTITION_WRITE_UNITS,
    KeyLoad,
    ceiling,
    entity_of,
    logical_name,
    render_keys,
    table_name,
)
from lockgate_infra.cost.meter import FunctionUsage, Meter, Usage
from tests.support import Aws


@pytest.mark.parametrize(
    ("key", "counter"),
    [
        ("State spend#2026-12-02#s3 / global", "State spend#DAY#s* / global"),
        ("State spend#2026-12-02 / global", "State spend#DAY / global"),
        ("State usage#2026-12-02#s11 / rollup#triage", "State usage#DAY#s* / rollup#triage"),
        ("State bucket#model#claude-sonnet-5-5#s0 / rate", "State bucket#model#claude-sonnet-5-5#s* / rate"),
        ("Inbox.by-status received", "Inbox.by-status received"),
        ("Inbox.by-status-sharded received#s7", "Inbox.by-status-sharded received#s*"),
    ],
)
def test_a_day_and_a_shard_are_normalised_away_and_nothing_else(key: str, counter: str) -> None:
    assert logical_name(key) == counter


@pytest.mark.parametrize(
    ("key", "entity"),
    [
        ("Inbox helpdesk#msg-1", "delivery"),
        ("State run#helpdesk#msg-1 / meta", "run"),
        ("State pending#support-inbox#sender#b5fc85e55755f9e0 / holders", "sender"),
        ("State pending#support-inbox#refund_order#ce2eb512207d / slot", "target"),
        ("State pending#support-inbox#s3 / holders", None),
        ("State spend#2026-12-02#s3 / global", None),
        ("Inbox.by-status received", None),  # every delivery passes through it: it counts
        ("State something#new / x", None),  # a key no rule knows counts (the safe direction)
    ],
)
def test_only_the_listed_families_of_one_entity_stay_out_of_the_ceiling(key: str, entity: str | None) -> None:
    assert entity_of(key) == entity


def test_a_table_is_named_by_its_template_name() -> None:
    assert table_name("lockgate-prod-StateTable") == "State"


def test_given_a_known_write_pattern_when_metered_then_each_key_and_the_ceiling_are_exact(aws: Aws) -> None:
    # Given two events' worth of writes: the day's spend shard 0 three times and shard 1 once (small
    # items, one unit each), and one delivery's 1.5 KB item twice (two units each, one entity's)
    usage = Usage(events=2, functions={"worker": FunctionUsage(512)})
    meter = Meter(usage)
    db = aws.client("dynamodb")

    def add(pk: str) -> None:
        db.update_item(
            TableName=aws.state_table,
            Key={"pk": {"S": pk}, "sk": {"S": "global"}},
            UpdateExpression="ADD spent :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )

    def work() -> None:
        for shard in (0, 0, 1, 0):
            add(f"spend#2026-12-02#s{shard}")
        for _ in range(2):
            item = {"pk": {"S": "helpdesk#m-1"}, "body": {"S": "b" * 1500}}
            db.put_item(TableName=aws.inbox_table, Item=item)

    # When the worker does it under the meter
    with meter.installed():
        meter.timed("worker", work)()
    # Then every write landed on its own key, exactly
    assert usage.keys.writes == {
        "State spend#2026-12-02#s0 / global": 3,
        "State spend#2026-12-02#s1 / global": 1,
        "Inbox helpdesk#m-1": 4,
    }
    # And the shards group into one counter
    assert usage.keys.by_counter(usage.keys.writes)["State spend#DAY#s* / global"] == 4
    # And the ceiling is the busiest key any event writes (1.5 units per event), not the delivery's
    found = ceiling(usage.keys, usage.events)
    assert found is not None
    assert found.key == "State spend#2026-12-02#s0 / global"
    assert found.units_per_event == 1.5
    assert found.events_per_second == pytest.approx(PARTITION_WRITE_UNITS / 1.5)
    # And the report prints it
    lines = render_keys(usage.keys, usage.events)
    assert lines[-1] == (
        "Ceiling: 667 events/s, when State spend#2026-12-02#s0 / global (1.50 write units per event) "
        "reaches 1,000 a second"
    )
    assert "     2.00  2.00   1  State spend#DAY#s* / global" not in lines
    assert "     2.00  1.50   2  State spend#DAY#s* / global" in lines
    assert "     2.00  Inbox helpdesk#m-1 (one delivery)" in lines


def test_an_index_entry_counts_on_its_index_partition() -> None:
    # Given writes on two items and the index partition both their entries went to
    load = KeyLoad()
    load.writes.update({"Inbox a": 1, "Inbox b": 1, "Inbox.by-status received": 2})
    # Then the index partition, written by every delivery, sets the ceiling
    found = ceiling(load, 1)
    assert found is not None and found.key == "Inbox.by-status received"


def test_given_deliveries_on_the_sharded_index_then_each_shard_takes_an_even_share(aws: Aws) -> None:
    from lockgate.inbox.models import Delivery, Status
    from lockgate.inbox.store import InboxStore
    from lockgate.index_shards import INDEX_SHARDS, index_shard

    # Given 32 deliveries stored under the meter: each one entry on the sharded status index
    usage = Usage(events=32, functions={"receiver": FunctionUsage(512)})
    store = InboxStore(aws.client("dynamodb"), aws.inbox_table)
    ids = [f"github#d{n}" for n in range(32)]

    def receive() -> None:
        for pk in ids:
            store.put_new(Delivery(pk, "github", pk, "push", Status.RECEIVED, 1, 1))

    meter = Meter(usage)
    with meter.installed():
        meter.timed("receiver", receive)()
    # Then each entry counted on its own shard's partition, named by its status and shard
    index = {k: n for k, n in usage.keys.writes.items() if k.startswith("Inbox.by-status-sharded ")}
    busiest = max(index.values())
    assert sum(index.values()) == 32
    assert f"Inbox.by-status-sharded received#s{index_shard(ids[0])}" in index
    assert busiest > 32 / INDEX_SHARDS  # a sample this small spreads unevenly
    # And the ceiling counts each shard an even share of the index's units, named for all of them
    spread = usage.keys.per_partition(usage.keys.shared(usage.keys.writes))
    assert spread["Inbox.by-status-sharded received#s*"] == 32 / INDEX_SHARDS
    found = ceiling(usage.keys, usage.events)
    assert found is not None
    assert (found.key, found.units_per_event) == ("Inbox.by-status-sharded received#s*", 2 / 32)
    assert found.events_per_second == PARTITION_WRITE_UNITS * 16


def test_given_hand_made_usage_then_the_scale_table_is_each_figure_times_the_rate() -> None:
    from collections import Counter

    from lockgate_infra.cost.bill import Assumptions, bill
    from lockgate_infra.cost.scale import scale_rows

    # Given one event: 2 model calls, 10 worker AWS calls, records 10 a batch, 2 requests, 3 SQS
    # requests, 10 write and 4 read units, a spend shard and the inbox's index partition written
    usage = Usage(events=1, posts=2, write_units=10, read_units=4, sqs_requests=3, model_calls=2)
    usage.functions = {"worker": FunctionUsage(512, concurrency=10, invocations=1, aws_calls=10)}
    usage.model_tokens = Counter(
        {"input_tokens": 1000, "cache_creation_input_tokens": 500, "output_tokens": 200}
    )
    usage.keys.writes.update({"State spend#2026-01-01#s0 / global": 0.5, "Inbox.by-status received": 2})
    # When scaled with 4 s per model call and 10 ms per AWS call
    rows = dict(scale_rows(usage, bill(usage, Assumptions(call_ms=10, model_seconds=4)), Assumptions(10, 4)))
    # Then each row is the per-event figure times 10, 100 and 1,000 events a second
    assert rows["worker events in flight (8.1 s each)"] == ["81", "810", "8,100"]
    assert rows["worker invocations in flight (10 events each)"] == ["8", "81", "810"]
    assert rows["DynamoDB write units a second (tables and indexes)"] == ["100", "1,000", "10,000"]
    key = "busiest item key, write units a second (of 1,000): State spend#2026-01-01#s0 / global"
    assert rows[key] == ["5", "50", "500"]
    index = "busiest index partition, write units a second (of 1,000): Inbox.by-status received"
    assert rows[index] == ["20", "200", "2,000"]
    assert rows["model requests a minute"] == ["1,200", "12,000", "120,000"]
    assert rows["model input tokens a minute (uncached and cache writes)"] == [
        "900,000",
        "9,000,000",
        "90,000,000",
    ]
