"""Test-wide guards and fixtures: no real network, moto for AWS, resources from template.yaml."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest

from lockgate.clock import FixedClock
from lockgate_infra.local.botocore_models import share_botocore_models
from lockgate_infra.local.fidelity import embedded_aws
from tests.support import Aws, Harness, OnDemand, make_config

if TYPE_CHECKING:
    from lockgate_infra.local.template import LocalPlan

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"
LOOPBACK_URLS = ("http://127.0.0.1:", "http://localhost:")  # a local stack's moto: no account behind it


def _is_loopback(address: Any) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    if not isinstance(host, str):
        return False  # unix sockets carry a path string; other families are not allowed
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(scope="session", autouse=True)
def _one_botocore_loader() -> None:
    """Every botocore session of the test process shares one loader and so its parsed models: each
    test's moto account comes with a new session (``share_botocore_models`` says why)."""
    share_botocore_models()


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection to a non-loopback address fails the test: tests never reach the network."""
    original = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        if self.family == socket.AF_UNIX or _is_loopback(address):
            return original(self, address)
        raise RuntimeError(f"test tried to reach the network: {address!r}")

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.fixture(autouse=True)
def _aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials so nothing can ever use a real account."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    # A module's local stack points its functions at its moto on loopback (set before this runs);
    # taking that away mid-test sent a function's first client to AWS's real endpoint.
    if not os.environ.get("AWS_ENDPOINT_URL", "").startswith(LOOPBACK_URLS):
        monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


@pytest.fixture(scope="session")
def template_plan() -> LocalPlan:
    """template.yaml's resources, parsed once per test session (the plan is immutable)."""
    from lockgate_infra.local.template import LocalPlan, load_template

    return LocalPlan.from_template(load_template(TEMPLATE))


@pytest.fixture
def aws(template_plan: LocalPlan) -> Iterator[Aws]:
    """moto in-process with template.yaml's resources: its queues, and each table, bucket and
    secret created when a call first names it (a test pays only for what it uses)."""
    from lockgate_infra.api_calls import intercepted

    with embedded_aws():
        session = boto3.session.Session(region_name="us-east-1")
        on_demand = OnDemand(template_plan, session)
        for queue in template_plan.queues:
            on_demand.provisioner.create(queue)
        names = {
            **{
                r.logical_id: r.name
                for plan in (template_plan.tables, template_plan.buckets, template_plan.secrets)
                for r in plan.values()
            },
            **on_demand.provisioner.created,
        }
        with intercepted(on_demand):
            yield Aws(session=session, names=names)


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def harness(aws: Aws, clock: FixedClock) -> Harness:
    return Harness(aws=aws, config=make_config(), clock=clock)
