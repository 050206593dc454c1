"""The one DynamoDB helper on moto: every page read, every page counted, errors become StoreUnavailable."""

from __future__ import annotations

import pytest

from lockgate.dynamo import count_all, read_all
from lockgate.errors import StoreUnavailable
from tests.support import Aws, fail_calls


def given_rows(aws: Aws, n: int) -> None:
    db = aws.client("dynamodb")
    for i in range(n):
        db.put_item(TableName=aws.state_table, Item={"pk": {"S": "p"}, "sk": {"S": f"row#{i}"}})


def test_given_more_rows_than_a_page_then_read_all_returns_every_row_once(aws: Aws) -> None:
    # Given five rows and pages of two
    given_rows(aws, 5)
    query = {"TableName": aws.state_table, "KeyConditionExpression": "pk = :p", "Limit": 2}
    values = {":p": {"S": "p"}}
    # When every page is read
    items = read_all(aws.client("dynamodb").query, ExpressionAttributeValues=values, **query)
    # Then each row comes back once, in order
    assert [item["sk"]["S"] for item in items] == [f"row#{i}" for i in range(5)]


def test_given_more_rows_than_a_page_then_count_all_adds_up_every_page(aws: Aws) -> None:
    given_rows(aws, 5)
    total = count_all(
        aws.client("dynamodb").query,
        TableName=aws.state_table,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "p"}},
        Select="COUNT",
        Limit=2,
    )
    assert total == 5


@pytest.mark.parametrize("reader", [read_all, count_all], ids=["read_all", "count_all"])
def test_given_the_table_failing_then_the_reader_raises_store_unavailable(aws: Aws, reader) -> None:
    db = aws.client("dynamodb")
    fail_calls(db, "Query", "InternalServerError")
    with pytest.raises(StoreUnavailable, match="ClientError"):
        reader(db.query, TableName=aws.state_table, KeyConditionExpression="pk = :p",
               ExpressionAttributeValues={":p": {"S": "p"}})  # fmt: skip
