"""Where the conformance suite runs: the embedded stack (both ways Lockgate embeds moto), or AWS.

By default every test runs twice: against the local stack's moto server over HTTP (what
``lockgate local`` and ``make demo`` run) and against moto in this process (what the rest of the
test suite runs on). Both go through ``lockgate_infra.local.fidelity``.

``make conformance-aws PROFILE=name`` sets ``LOCKGATE_CONFORMANCE_PROFILE``: then the same tests
run once, against the real account that profile names (and ``LOCKGATE_CONFORMANCE_REGION``, else
the profile's region). Each test makes its own uniquely named tables and queues and deletes them.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import boto3
import pytest

from lockgate_infra.local.fidelity import embedded_aws
from lockgate_infra.local.moto_server import MotoServer

PROFILE = os.environ.get("LOCKGATE_CONFORMANCE_PROFILE", "")
REGION = os.environ.get("LOCKGATE_CONFORMANCE_REGION", "")
T = TypeVar("T")

if PROFILE:

    @pytest.fixture(autouse=True)
    def _no_network() -> None:
        """Against AWS the suite must reach AWS: the test-wide network guard is off here only."""

    @pytest.fixture(autouse=True)
    def _aws_env() -> None:
        """Against AWS the profile's own credentials are used, not the tests' fake ones."""


@dataclass
class Cloud:
    """One AWS (real or embedded): clients, unique names, and patience sized to it."""

    name: str
    session: boto3.session.Session
    endpoint_url: str | None = None
    patience: float = 10.0  # seconds to wait for something eventual (a stream record, a message)
    run: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    cleanups: list[Callable[[], object]] = field(default_factory=list)

    def client(self, service: str) -> Any:
        return self.session.client(service, endpoint_url=self.endpoint_url)  # type: ignore[call-overload]

    def unique(self, what: str) -> str:
        """A name no other test or run uses: ``lockgate-conformance-<run>-<what>-<n>``."""
        return f"lockgate-conformance-{self.run}-{what}-{uuid.uuid4().hex[:6]}"

    def eventually(self, probe: Callable[[], T | None], what: str) -> T:
        """``probe()``'s first non-None answer, polled until ``patience`` runs out."""
        deadline = time.monotonic() + self.patience
        while True:
            found = probe()
            if found is not None:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: gave up waiting for {what}")
            time.sleep(0.05)


@pytest.fixture(scope="session")
def moto_server_url() -> Iterator[str]:
    """One moto server per test process, as the local stack runs it."""
    with MotoServer() as server:
        yield server.endpoint_url


TARGETS = ["aws"] if PROFILE else ["embedded stack", "in-process"]


@pytest.fixture(params=TARGETS)
def cloud(request: pytest.FixtureRequest) -> Iterator[Cloud]:
    """The AWS a conformance test runs against; everything it made is deleted afterwards."""
    if request.param == "aws":
        session = boto3.session.Session(profile_name=PROFILE, region_name=REGION or None)
        target = Cloud("aws", session, patience=60.0)
        yield from _cleaned(target)
        return
    session = boto3.session.Session(
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",  # noqa: S106
    )
    if request.param == "embedded stack":
        url = request.getfixturevalue("moto_server_url")
        yield from _cleaned(Cloud("embedded stack", session, endpoint_url=url))
        return
    with embedded_aws():
        yield from _cleaned(Cloud("in-process", session))


def _cleaned(target: Cloud) -> Iterator[Cloud]:
    try:
        yield target
    finally:
        for cleanup in reversed(target.cleanups):
            cleanup()


@dataclass
class Table:
    """A table with a string ``pk`` (and ``sk`` when asked), on ``cloud``."""

    cloud: Cloud
    name: str
    arn: str
    stream_arn: str | None

    @property
    def db(self) -> Any:
        return self.cloud.client("dynamodb")

    def get(self, pk: str, sk: str | None = None) -> dict[str, Any] | None:
        key = {"pk": {"S": pk}} | ({"sk": {"S": sk}} if sk is not None else {})
        return self.db.get_item(TableName=self.name, Key=key, ConsistentRead=True).get("Item")


@pytest.fixture
def make_table(cloud: Cloud) -> Callable[..., Table]:
    """``make_table(stream="NEW_AND_OLD_IMAGES", range_key=False)``: a fresh on-demand table."""

    def make(*, stream: str | None = None, range_key: bool = False) -> Table:
        db, name = cloud.client("dynamodb"), cloud.unique("table")
        keys = [("pk", "HASH")] + ([("sk", "RANGE")] if range_key else [])
        extra: dict[str, Any] = {}
        if stream:
            extra["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": stream}
        db.create_table(
            TableName=name,
            KeySchema=[{"AttributeName": k, "KeyType": t} for k, t in keys],
            AttributeDefinitions=[{"AttributeName": k, "AttributeType": "S"} for k, _ in keys],
            BillingMode="PAY_PER_REQUEST",
            **extra,
        )
        cloud.cleanups.append(lambda: db.delete_table(TableName=name))
        db.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 120})
        described = db.describe_table(TableName=name)["Table"]
        return Table(cloud, name, described["TableArn"], described.get("LatestStreamArn"))

    return make


@pytest.fixture
def make_queue(cloud: Cloud) -> Callable[..., str]:
    """``make_queue(visibility=30, dead_letters=None, max_receives=0)``: a standard queue's URL."""

    def make(*, visibility: int = 30, dead_letters: str | None = None, max_receives: int = 0) -> str:
        sqs = cloud.client("sqs")
        attributes = {"VisibilityTimeout": str(visibility)}
        if dead_letters is not None:
            dlq_arn = sqs.get_queue_attributes(QueueUrl=dead_letters, AttributeNames=["QueueArn"])[
                "Attributes"
            ]["QueueArn"]
            attributes["RedrivePolicy"] = (
                f'{{"deadLetterTargetArn": "{dlq_arn}", "maxReceiveCount": "{max_receives}"}}'
            )
        url = str(sqs.create_queue(QueueName=cloud.unique("queue"), Attributes=attributes)["QueueUrl"])
        cloud.cleanups.append(lambda: sqs.delete_queue(QueueUrl=url))
        return url

    return make
