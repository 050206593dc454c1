"""An eval's moto cannot be bypassed by an endpoint override in the environment."""

from __future__ import annotations

import os

import pytest

from lockgate_infra.evals.isolation import isolated_aws


def test_an_endpoint_override_is_cleared_inside_and_restored_after(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a shell pointed at some other endpoint (a local stack, LocalStack), nothing listening
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:9")
    # When an eval's AWS is used, Then calls go to moto (the endpoint would refuse them)
    with isolated_aws("us-east-1") as session:
        dynamodb = session.client("dynamodb")
        dynamodb.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        assert dynamodb.list_tables()["TableNames"] == ["t"]
        assert "AWS_ENDPOINT_URL" not in os.environ
    # And the shell's settings are back afterwards
    assert os.environ["AWS_ENDPOINT_URL"] == "http://127.0.0.1:9"
    assert os.environ["AWS_ENDPOINT_URL_DYNAMODB"] == "http://127.0.0.1:9"
