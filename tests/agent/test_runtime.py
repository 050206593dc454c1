"""The worker's and the approval side's composition roots (lockgate.runtime), on moto and the stub."""

from __future__ import annotations

import pytest

from lockgate.agent.batches import PENDING_PK, BatchWaiting
from lockgate.approvals.executor import ApprovalExecutor
from lockgate.errors import ConfigError
from lockgate.inbox.routing import Router, TaskContext
from lockgate.runtime.approvals import build_approvals
from lockgate.runtime.deps import Deps
from lockgate.runtime.worker import agent_tasks
from lockgate.secrets import SecretResolver
from lockgate.settings import ApprovalSettings, WorkerSettings
from lockgate.workflows import Setup
from tests.agent.conftest import AgentRig, event
from tests.agent.toolkit import Effects, make_task
from tests.support import LOG, function_env, make_config


def deps(rig: AgentRig, **secrets: str) -> Deps:
    return Deps(
        client=rig.aws.client, secrets=SecretResolver(secrets), clock=rig.clock, log=LOG, metrics=rig.metrics
    )


def test_given_no_approval_tables_and_a_batch_task_then_the_worker_submits_a_batch_and_routes_no_decisions(
    rig: AgentRig,
) -> None:
    # Given a worker without the approval tables, no [capacity] limits, and a batch task
    env = {
        **function_env(rig.aws),
        "APPROVALS_TABLE": "",
        "DECISIONS_TABLE": "",
        "ANTHROPIC_API_KEY_REF": "env:KEY",
        "ANTHROPIC_BASE_URL": rig.stub.base_url,
    }
    setup = Setup(router=Router(), environ={}, client=rig.aws.client, clock=rig.clock)
    setup.add_task(make_task(Effects(), batch=True))
    rig.stub.batches.hold()
    agent_tasks(setup, WorkerSettings.from_env(env), make_config(), deps(rig, KEY="test-key"))
    # When the task's event arrives
    context = TaskContext(
        run_id="run#github#b", remaining_seconds=lambda: 300.0, versions=None, log=LOG, metrics=rig.metrics
    )  # type: ignore[arg-type]
    with pytest.raises(BatchWaiting):
        setup.router.route("github", "push")(event("b"), context)
    # Then its first call went out as a Message Batch, listed for the collect job
    pending = rig.aws.client("dynamodb").query(
        TableName=rig.aws.state_table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": PENDING_PK}},
    )["Items"]
    assert len(pending) == 1
    # And decided proposals have nowhere to go: no executor is routed
    assert not isinstance(setup.router.route("approval", "approved"), ApprovalExecutor)


def test_given_the_notifiers_role_then_there_is_no_desk_and_no_digest(rig: AgentRig) -> None:
    env = {"APPROVALS_TABLE": rig.aws.names["ApprovalsTable"], "APPROVAL_LINK_SECRET_ARN": "env:LINK"}
    parts = build_approvals(ApprovalSettings.from_env(env), make_config(), deps(rig, LINK="k" * 32))
    assert parts.desk is None and parts.digest is None


def test_given_decisions_but_no_inbox_then_the_digest_is_served_but_nothing_can_be_decided(
    rig: AgentRig,
) -> None:
    env = {
        "APPROVALS_TABLE": rig.aws.names["ApprovalsTable"],
        "DECISIONS_TABLE": rig.aws.names["DecisionsTable"],
        "APPROVAL_LINK_SECRET_ARN": "env:LINK",
    }
    parts = build_approvals(ApprovalSettings.from_env(env), make_config(), deps(rig, LINK="k" * 32))
    assert parts.desk is None and parts.digest is not None


def test_given_an_unknown_channel_then_the_approval_side_refuses_to_start(rig: AgentRig) -> None:
    env = {
        "APPROVALS_TABLE": rig.aws.names["ApprovalsTable"],
        "APPROVAL_LINK_SECRET_ARN": "env:LINK",
        "APPROVAL_CHANNELS": "carrier-pigeon",
    }
    settings = ApprovalSettings.from_env(env)
    with pytest.raises(ConfigError, match="unknown approval channel 'carrier-pigeon'"):
        build_approvals(settings, make_config(), deps(rig, LINK="k" * 32))
