"""prune on seeded rows: counts what TTL has not removed yet; deletes only settled rows TTL can't reach."""

from __future__ import annotations

from typing import Any

from lockgate.clock import FixedClock
from lockgate.config import InboxConfig
from lockgate.jobs.builtin.prune import Prune, item_size
from lockgate.telemetry import CountingMetrics
from tests.jobs.conftest import context
from tests.support import Aws

DAY = 86_400


def put(aws: Aws, table: str, **values: Any) -> dict[str, Any]:
    item = {k: {"N": str(v)} if isinstance(v, int) else {"S": v} for k, v in values.items()}
    aws.client("dynamodb").put_item(TableName=table, Item=item)
    return item


def keys(aws: Aws, table: str) -> set[str]:
    items = aws.client("dynamodb").scan(TableName=table)["Items"]
    return {i["pk"]["S"] + ("/" + i["sk"]["S"] if "sk" in i else "") for i in items}


def test_prune_reports_what_ttl_has_yet_to_remove_and_deletes_only_untracked_settled_rows(
    aws: Aws, clock: FixedClock
) -> None:
    now = int(clock.now())
    inbox, state = aws.inbox_table, aws.state_table
    # Given deliveries: expired by TTL but still there; settled with no ttl and old; open and old;
    # settled with no ttl but recent; and one well within its ttl
    lingering = put(
        aws, inbox, pk="github#ttl-passed", status="done", received_at=now - 20 * DAY, ttl=now - DAY
    )
    put(
        aws, inbox, pk="github#old-done", status="done", received_at=now - 20 * DAY, updated_at=now - 20 * DAY
    )
    put(aws, inbox, pk="github#old-failed", status="failed", received_at=now - 30 * DAY)
    put(aws, inbox, pk="github#old-waiting", status="received", received_at=now - 30 * DAY)
    put(aws, inbox, pk="github#recent-done", status="done", received_at=now - DAY)
    put(aws, inbox, pk="github#fresh", status="done", received_at=now, ttl=now + 13 * DAY)
    # And State rows: a run past its ttl, an old step without ttl, settled and open old operations
    # without ttl, and a job lease (not this job's business)
    put(aws, state, pk="run#r1", sk="meta", created_at=now - 40 * DAY, ttl=now - 10 * DAY)
    put(aws, state, pk="run#r0", sk="step#001#model", at=now - 40 * DAY, data="{}")
    put(aws, state, pk="op#done", sk="op", state="SUCCEEDED", updated_at=now - 100 * DAY)
    put(aws, state, pk="op#unknown", sk="op", state="UNKNOWN", updated_at=now - 100 * DAY)
    put(aws, state, pk="job#sweep-inbox", sk="lease", updated_at=now - 100 * DAY)
    # When prune runs
    metrics = CountingMetrics()
    result = Prune(
        dynamodb=aws.client("dynamodb"), inbox_table=inbox, state_table=state, settings=InboxConfig()
    )(context(clock, metrics))
    # Then the settled rows TTL cannot reach are gone; open, recent and TTL-covered rows remain
    assert keys(aws, inbox) == {
        "github#ttl-passed",
        "github#old-waiting",
        "github#recent-done",
        "github#fresh",
    }
    assert keys(aws, state) == {"run#r1/meta", "op#unknown/op", "job#sweep-inbox/lease"}
    # And the report counts what was past retention (and its size), and what was deleted
    assert result.done
    assert (result.counts["deliveries_past_retention"], result.counts["deliveries_deleted"]) == (3, 2)
    assert (result.counts["runs_past_retention"], result.counts["runs_deleted"]) == (2, 1)
    assert (result.counts["operations_past_retention"], result.counts["operations_deleted"]) == (1, 1)
    assert result.counts["deliveries_past_retention_bytes"] >= item_size(lingering) > 0
    assert metrics.totals["Prune_deliveries_deleted"] == 2


def test_prune_resumes_across_tables_from_its_cursor(aws: Aws, clock: FixedClock, monkeypatch: Any) -> None:
    from lockgate.jobs.builtin import prune

    # Given one old untracked row in each table, and pages of one item
    monkeypatch.setattr(prune, "PAGE_SIZE", 1)
    now = int(clock.now())
    put(aws, aws.inbox_table, pk="github#old-done", status="done", received_at=now - 20 * DAY)
    put(aws, aws.state_table, pk="op#done", sk="op", state="FAILED", updated_at=now - 100 * DAY)
    job = Prune(
        dynamodb=aws.client("dynamodb"), inbox_table=aws.inbox_table, state_table=aws.state_table,
        settings=InboxConfig(),
    )  # fmt: skip
    # When the first run has time for one page and the second resumes from its cursor
    first = job(context(clock, pages=1))
    second = job(context(clock, cursor=first.cursor))
    # Then the totals carry over and each row was deleted once
    assert first.done is False and second.done is True
    assert (second.counts["deliveries_deleted"], second.counts["operations_deleted"]) == (1, 1)
    assert keys(aws, aws.inbox_table) == set() and keys(aws, aws.state_table) == set()
