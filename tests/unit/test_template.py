"""template.yaml, translated offline by samtranslator, has the foundation's shape and least privilege.

The SAM template is turned into plain CloudFormation (no network, no AWS account) and the
assertions read the translated resources: what CloudFormation would actually create.
"""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from lockgate.config import load_config
from lockgate_infra.cli.check import declarations
from lockgate_infra.cli.iam import access, as_list, role_of, statements, translate
from lockgate_infra.cli.template_check import FUNCTIONS as CHECKED_FUNCTIONS
from lockgate_infra.cli.template_check import statement_on
from lockgate_infra.local.template import load_template

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"

# What every Lambda role may have besides its data access: writing its own logs and traces.
BASIC_MANAGED_POLICIES = {
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
    "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
}
BASIC_ACTION_PREFIXES = ("logs:", "xray:")
DATA_SERVICES = ("dynamodb:", "sqs:", "s3:", "secretsmanager:", "kms:", "sns:")
# Where a stack's secrets live: the SecretsPrefix parameter, or the stack's own name when it is empty.
PREFIX = {"Fn::If": ["HasSecretsPrefix", {"Ref": "SecretsPrefix"}, {"Ref": "AWS::StackName"}]}


def under_prefix(text: str) -> dict[str, Any]:
    """``!Sub [text, {SecretsPrefix: <the stack's prefix>}]`` as the translation spells it."""
    return {"Fn::Sub": [text, {"SecretsPrefix": PREFIX}]}


def api_or_domain(path: str) -> dict[str, Any]:
    """A public URL: on the custom domain when one is set, else on the API's execute-api host."""
    return {
        "Fn::If": [
            "HasDomain",
            {"Fn::Sub": f"https://${{DomainName}}/{path}/"},
            {"Fn::Sub": f"https://${{WebhookApi}}.execute-api.${{AWS::Region}}.${{AWS::URLSuffix}}/{path}/"},
        ]
    }


RECEIVER_ACCESS = {
    ("dynamodb:PutItem", "InboxTable.Arn"),
    ("sqs:SendMessage", "InboxQueue.Arn"),
    ("s3:PutObject", "${BodyBucket.Arn}/bodies/*"),
    (
        "secretsmanager:GetSecretValue",
        "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:${SecretsPrefix}/webhooks/*",
    ),
}
# [mcp.servers.*] credentials: the worker calls MCP servers' tools, the jobs their reconcile tools.
MCP_CREDENTIALS = (
    "secretsmanager:GetSecretValue",
    "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:${SecretsPrefix}/mcp/*",
)
WORKER_ACCESS = {
    ("dynamodb:GetItem", "InboxTable.Arn"),
    ("dynamodb:UpdateItem", "InboxTable.Arn"),
    ("dynamodb:PutItem", "InboxTable.Arn"),  # veto-window events
    *{
        (f"dynamodb:{action}", "StateTable.Arn")
        # BatchGetItem: a step's screens look up their saved verdicts in one read
        for action in ("GetItem", "BatchGetItem", "PutItem", "UpdateItem", "Query", "DeleteItem")
    },
    ("s3:GetObject", "${BodyBucket.Arn}/bodies/*"),
    *{
        (f"sqs:{action}", "InboxQueue.Arn")
        for action in (
            "ReceiveMessage",
            "DeleteMessage",
            "GetQueueAttributes",
            "ChangeMessageVisibility",
            "SendMessage",
        )
    },
    ("sqs:SendMessage", "InboxDLQ.Arn"),
    (
        "secretsmanager:GetSecretValue",
        "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:"
        "${SecretsPrefix}/anthropic-api-key-??????",
    ),
    MCP_CREDENTIALS,
    # (The workflows' tables and sender address: what their RESOURCES declare, see WORKFLOWS below.)
    # Approvals: it proposes (put, read; its pending limits are State rows) and reads decisions.
    ("dynamodb:PutItem", "ApprovalsTable.Arn"),
    ("dynamodb:GetItem", "ApprovalsTable.Arn"),
    ("dynamodb:GetItem", "DecisionsTable.Arn"),
    ("dynamodb:Query", "DecisionsTable.Arn"),
}
# The approval pages and decisions (HTTP).
CALLBACK_ACCESS = {
    ("dynamodb:GetItem", "ApprovalsTable.Arn"),
    ("dynamodb:Scan", "ApprovalsTable.Arn"),  # the batch-review digest lists proposals
    ("dynamodb:Query", "ApprovalsTable.Arn"),
    ("dynamodb:GetItem", "DecisionsTable.Arn"),
    ("dynamodb:PutItem", "DecisionsTable.Arn"),
    ("dynamodb:Query", "DecisionsTable.Arn"),
    ("dynamodb:PutItem", "InboxTable.Arn"),
    ("sqs:SendMessage", "InboxQueue.Arn"),
    ("secretsmanager:GetSecretValue", "Ref:ApprovalLinkSecret"),
    # [approvals.slack]'s signing secret: a click on a Slack button is Slack's, signed.
    (
        "secretsmanager:GetSecretValue",
        "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:"
        "${SecretsPrefix}/slack/signing-??????",
    ),
    # [approvals.slack]'s bot token: the Edit button opens its modal with views.open.
    (
        "secretsmanager:GetSecretValue",
        "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:"
        "${SecretsPrefix}/slack/bot-??????",
    ),
    # A digest page's link re-sends: the "approval-links" rows of State only (by condition), and SES.
    ("dynamodb:PutItem", "StateTable.Arn"),
    ("dynamodb:UpdateItem", "StateTable.Arn"),
    ("ses:SendEmail", "arn:${AWS::Partition}:ses:${AWS::Region}:${AWS::AccountId}:identity/*"),
    # A decided link's outcome: the state and time of "op#" ledger entries only (by condition).
    ("dynamodb:GetItem", "StateTable.Arn"),
    # An edited version is checked by the worker's alias before it is recorded (it writes nothing).
    ("lambda:InvokeFunction", "Ref:AgentWorkerFunctionAliaslive"),
}
# The approval notifier (the Approvals stream: new proposals; the Decisions stream: Slack updates).
NOTIFIER_ACCESS = {
    *{
        (f"dynamodb:{action}", f"{table}.StreamArn")
        for action in ("DescribeStream", "GetRecords", "GetShardIterator")
        for table in ("ApprovalsTable", "DecisionsTable")
    },
    ("dynamodb:ListStreams", "${ApprovalsTable.Arn}/stream/*"),
    ("dynamodb:ListStreams", "${DecisionsTable.Arn}/stream/*"),
    ("sqs:SendMessage", "ApprovalNotifyDLQ.Arn"),
    ("dynamodb:GetItem", "ApprovalsTable.Arn"),
    ("dynamodb:Query", "DecisionsTable.Arn"),  # read only: what a Slack message shows
    # Each Slack message's claim, ts and what it shows: its "slack-message#" rows of State only.
    ("dynamodb:GetItem", "StateTable.Arn"),
    ("dynamodb:PutItem", "StateTable.Arn"),
    ("dynamodb:UpdateItem", "StateTable.Arn"),
    ("secretsmanager:GetSecretValue", "Ref:ApprovalLinkSecret"),
    (
        "secretsmanager:GetSecretValue",
        "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:${SecretsPrefix}/notify/*",
    ),
    # [approvals.slack]'s bot token: posts each proposal's message with buttons.
    (
        "secretsmanager:GetSecretValue",
        "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:"
        "${SecretsPrefix}/slack/bot-??????",
    ),
    ("ses:SendEmail", "arn:${AWS::Partition}:ses:${AWS::Region}:${AWS::AccountId}:identity/*"),
}
# The scheduled jobs: the sweep and expiry (Inbox, queue, DLQ), reconciliation (the ledger in State,
# escalation proposals; the workflows' tables through the reconcile hooks, as they declare), the
# digest (the link key to sign reviewers' links; its email as the workflow's declared address),
# prune, collect-batches (the model key), and the runner's leases and heartbeats (State).
JOBS_ACCESS = {
    ("dynamodb:DeleteItem", "InboxTable.Arn"),
    ("dynamodb:DeleteItem", "StateTable.Arn"),
    ("dynamodb:GetItem", "ApprovalsTable.Arn"),
    ("dynamodb:GetItem", "DecisionsTable.Arn"),
    ("dynamodb:GetItem", "InboxTable.Arn"),
    ("dynamodb:GetItem", "StateTable.Arn"),
    ("dynamodb:PutItem", "ApprovalsTable.Arn"),
    ("dynamodb:PutItem", "InboxTable.Arn"),
    ("dynamodb:PutItem", "StateTable.Arn"),
    ("dynamodb:Query", "${InboxTable.Arn}/index/by-status-sharded"),
    ("dynamodb:Query", "${StateTable.Arn}/index/open-operations-sharded"),
    ("dynamodb:Query", "DecisionsTable.Arn"),
    ("dynamodb:Query", "StateTable.Arn"),
    ("dynamodb:Scan", "ApprovalsTable.Arn"),
    ("dynamodb:Scan", "InboxTable.Arn"),
    ("dynamodb:Scan", "StateTable.Arn"),
    ("dynamodb:UpdateItem", "ApprovalsTable.Arn"),  # escalated_at only (test below)
    ("dynamodb:UpdateItem", "InboxTable.Arn"),
    ("dynamodb:UpdateItem", "StateTable.Arn"),
    ("secretsmanager:GetSecretValue", "Ref:ApprovalLinkSecret"),
    (
        "secretsmanager:GetSecretValue",
        "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:"
        "${SecretsPrefix}/anthropic-api-key-??????",
    ),
    ("sqs:SendMessage", "InboxDLQ.Arn"),
    ("sqs:SendMessage", "InboxQueue.Arn"),
    ("sqs:SendMessage", "ScheduledJobsDLQ.Arn"),  # the on-failure destination of its async invocations
    MCP_CREDENTIALS,
}
# The weekly eval: its own job rows (the "jobs" partition only, by condition) and the model key.
EVAL_JOBS_ACCESS = {
    ("dynamodb:GetItem", "StateTable.Arn"),
    ("dynamodb:PutItem", "StateTable.Arn"),
    ("dynamodb:UpdateItem", "StateTable.Arn"),
    ("dynamodb:Query", "StateTable.Arn"),
    (
        "secretsmanager:GetSecretValue",
        "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:"
        "${SecretsPrefix}/anthropic-api-key-??????",
    ),
    ("sqs:SendMessage", "ScheduledJobsDLQ.Arn"),
}
APPROVAL_FUNCTIONS = ("ApprovalCallbackFunction", "ApprovalNotifierFunction")
# Least privilege, one row per function: exactly the data access its role grants on the library's
# resources. A function added to the template without a row here fails
# test_given_every_function_then_it_has_a_row. What the roles grant on the workflows' resources is
# what their RESOURCES declare, exactly: `lockgate check` compares the two (tests/unit/test_check.py),
# so adding a table means editing the declaration and the template, not this file.
EXPECTED_ACCESS: dict[str, set[tuple[str, str]]] = {
    "WebhookReceiverFunction": RECEIVER_ACCESS,
    "AgentWorkerFunction": WORKER_ACCESS,
    "ApprovalCallbackFunction": CALLBACK_ACCESS,
    "ApprovalNotifierFunction": NOTIFIER_ACCESS,
    "ScheduledJobsFunction": JOBS_ACCESS,
    "EvalJobsFunction": EVAL_JOBS_ACCESS,
}
ALL_FUNCTIONS = tuple(EXPECTED_ACCESS)
WRITE_ACTIONS = ("Put", "Update", "Delete", "BatchWrite", "TransactWrite", "Create", "Restore", "Import")
SHOP_TABLES = ("ShopOrdersTable", "ShopPaymentsTable", "ShopMailTable")
WORKFLOWS = declarations(
    load_config(TEMPLATE.parent / "lockgate.toml").workflows.packages, TEMPLATE.parent / "workflows"
)
DECLARED = {resource.logical_id for resources in WORKFLOWS.values() for resource in resources}
DECLARED_VARIABLES = {resource.variable for resources in WORKFLOWS.values() for resource in resources}


# ------------------------------------------------------------------ loading and translating


@pytest.fixture(scope="module")
def sam_template() -> dict[str, Any]:
    return load_template(TEMPLATE)


@pytest.fixture(scope="module")
def cfn(sam_template: dict[str, Any]) -> dict[str, Any]:
    return translate(sam_template)


# ------------------------------------------------------------------ helpers over the translated template


def resources_of_type(cfn: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {name: r for name, r in cfn["Resources"].items() if r["Type"] == resource_type}


def properties(cfn: dict[str, Any], logical_id: str) -> dict[str, Any]:
    return cfn["Resources"][logical_id]["Properties"]


def resolve(value: Any, parameters: dict[str, Any], cfn: dict[str, Any]) -> Any:
    """Evaluate the few intrinsics that turn parameters into numbers: Ref to a parameter and FindInMap."""
    if isinstance(value, dict) and "Ref" in value:
        return parameters[value["Ref"]]
    if isinstance(value, dict) and "Fn::FindInMap" in value:
        name, key, attribute = (str(resolve(part, parameters, cfn)) for part in value["Fn::FindInMap"])
        return cfn["Mappings"][name][key][attribute]
    return value


def data_access(cfn: dict[str, Any], function_id: str) -> set[tuple[str, str]]:
    """A function's data grants; for the worker's and the jobs' roles, on the library's resources only
    (their statements on a workflow's declared resources are `lockgate check`'s)."""
    role = role_of(cfn, function_id)
    if function_id in CHECKED_FUNCTIONS.values():
        role = {"Policies": [{"PolicyDocument": {"Statement": library_statements(role)}}]}
    return {
        (action, resource)
        for action, resource in access(role)
        if not action.startswith(BASIC_ACTION_PREFIXES)
    }


def library_statements(role: dict[str, Any]) -> list[dict[str, Any]]:
    """The statements of a role that are on no resource a workflow declares."""
    return [s for s in statements(role) if not statement_on(s, DECLARED)]


def functions(cfn: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return resources_of_type(cfn, "AWS::Lambda::Function")


def environment(cfn: dict[str, Any], function_id: str) -> dict[str, Any]:
    return properties(cfn, function_id)["Environment"]["Variables"]


def worker_mapping(cfn: dict[str, Any]) -> dict[str, Any]:
    (mapping,) = (
        r["Properties"]
        for r in resources_of_type(cfn, "AWS::Lambda::EventSourceMapping").values()
        if r["Properties"]["FunctionName"] == {"Ref": "AgentWorkerFunctionAliaslive"}
    )
    return mapping


# ------------------------------------------------------------------ queues and the worker's event source


def test_given_every_allowed_worker_timeout_when_resolved_then_queue_visibility_is_at_least_six_times_it(cfn):
    allowed = cfn["Parameters"]["WorkerTimeoutSeconds"]["AllowedValues"]
    assert {int(v) for v in allowed} >= {60, 300, 900}
    for timeout in allowed:
        parameters = {"WorkerTimeoutSeconds": str(timeout)}
        function_timeout = int(resolve(properties(cfn, "AgentWorkerFunction")["Timeout"], parameters, cfn))
        visibility = int(resolve(properties(cfn, "InboxQueue")["VisibilityTimeout"], parameters, cfn))
        assert function_timeout == int(timeout)
        assert visibility >= 6 * function_timeout, (timeout, visibility)
        assert visibility <= 43_200  # the SQS maximum


def test_given_the_inbox_queue_then_sqs_redrive_is_a_backstop_well_above_the_workers_attempt_limit(cfn):
    # The worker dead-letters a delivery itself (with its error) after max_attempts; deferrals are
    # receives too, so SQS's own redrive must not fire first (the chaos harness caught it doing so).
    queue = properties(cfn, "InboxQueue")
    dlq = properties(cfn, "InboxDLQ")
    max_attempts = load_config(TEMPLATE.parent / "lockgate.toml").inbox.max_attempts
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": ["InboxDLQ", "Arn"]}
    assert queue["RedrivePolicy"]["maxReceiveCount"] >= 4 * max_attempts
    assert queue["SqsManagedSseEnabled"] is True
    assert dlq["SqsManagedSseEnabled"] is True
    assert dlq["MessageRetentionPeriod"] == 14 * 24 * 3600
    assert dlq["MessageRetentionPeriod"] > queue["MessageRetentionPeriod"]


def test_given_the_worker_event_source_then_it_reports_partial_batch_failures_with_bounded_concurrency(cfn):
    mapping = worker_mapping(cfn)
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": ["InboxQueue", "Arn"]}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["ScalingConfig"] == {"MaximumConcurrency": {"Ref": "WorkerMaxConcurrency"}}
    assert mapping["BatchSize"] == {"Ref": "WorkerBatchSize"}
    assert mapping["MaximumBatchingWindowInSeconds"] == {"Ref": "WorkerBatchingWindowSeconds"}
    # Lambda refuses a MaximumConcurrency below 2.
    assert int(cfn["Parameters"]["WorkerMaxConcurrency"]["MinValue"]) >= 2


def test_given_the_worker_then_its_batch_shape_and_record_concurrency_are_parameters(cfn):
    # Given the worker's parameters: one batch's records processed side by side, as many as a batch holds
    parameters = cfn["Parameters"]
    assert int(parameters["WorkerRecordConcurrency"]["Default"]) == int(
        parameters["WorkerBatchSize"]["Default"]
    )
    assert int(parameters["WorkerRecordConcurrency"]["MinValue"]) == 1  # 1: one after another, as before
    # Then the worker reads its concurrency from the environment the template gives it
    variables = environment(cfn, "AgentWorkerFunction")
    assert variables["WORKER_RECORD_CONCURRENCY"] == {"Ref": "WorkerRecordConcurrency"}
    assert properties(cfn, "AgentWorkerFunction")["MemorySize"] == {"Ref": "WorkerMemorySize"}


# ------------------------------------------------------------------ data


def test_given_both_tables_then_items_expire_by_ttl_and_are_encrypted_with_point_in_time_recovery(cfn):
    for table_id in ("InboxTable", "StateTable"):
        table = properties(cfn, table_id)
        assert table["BillingMode"] == "PAY_PER_REQUEST"
        assert table["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}
        assert table["SSESpecification"] == {"SSEEnabled": True}
        assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}


def test_given_the_inbox_table_then_it_is_keyed_by_pk_and_listable_by_status_over_shards(cfn):
    inbox = properties(cfn, "InboxTable")
    assert inbox["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"}]
    index, previous = inbox["GlobalSecondaryIndexes"]
    assert index["IndexName"] == "by-status-sharded"
    # a multi-attribute partition: the status and the shard the delivery's key hashes to
    assert index["KeySchema"] == [
        {"AttributeName": "status", "KeyType": "HASH"},
        {"AttributeName": "index_shard", "KeyType": "HASH"},
        {"AttributeName": "received_at", "KeyType": "RANGE"},
    ]
    # the body is never projected: listing and sweeping don't need it
    assert index["Projection"]["ProjectionType"] == "INCLUDE"
    assert "body" not in index["Projection"]["NonKeyAttributes"]
    assert {"attempts", "last_error", "available_at"} <= set(index["Projection"]["NonKeyAttributes"])
    types = {a["AttributeName"]: a["AttributeType"] for a in inbox["AttributeDefinitions"]}
    assert types == {"pk": "S", "status": "S", "received_at": "N", "index_shard": "N"}
    # the old index only for the upgrade's first deploy
    condition, kept, dropped = previous["Fn::If"]
    assert (condition, kept["IndexName"]) == ("KeepsPreviousIndexes", "by-status")
    assert dropped == {"Ref": "AWS::NoValue"}


def test_given_the_state_table_then_open_ledger_entries_are_listed_by_state_over_shards(cfn):
    state = properties(cfn, "StateTable")
    index, previous = state["GlobalSecondaryIndexes"]
    assert index["IndexName"] == "open-operations-sharded"
    assert [k["AttributeName"] for k in index["KeySchema"]] == ["open_state", "index_shard", "opened_at"]
    assert [k["KeyType"] for k in index["KeySchema"]] == ["HASH", "HASH", "RANGE"]
    assert previous["Fn::If"][0] == "KeepsPreviousIndexes"
    assert previous["Fn::If"][1]["IndexName"] == "open-operations"
    assert cfn["Conditions"]["KeepsPreviousIndexes"] == {"Fn::Equals": [{"Ref": "PreviousIndexes"}, "keep"]}


def test_given_the_state_table_then_it_has_a_pk_and_sk_key(cfn):
    assert properties(cfn, "StateTable")["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]


def test_given_the_body_bucket_then_it_is_private_encrypted_tls_only_and_outlives_the_inbox_retention(cfn):
    bucket = properties(cfn, "BodyBucket")
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert len(bucket["PublicAccessBlockConfiguration"]) == 4
    (encryption,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    assert bucket["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    (rule,) = bucket["LifecycleConfiguration"]["Rules"]
    assert rule["Status"] == "Enabled"
    assert rule["ExpirationInDays"] > 14
    (deny,) = properties(cfn, "BodyBucketPolicy")["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": False}}


# ------------------------------------------------------------------ functions


def test_given_every_function_then_it_runs_python313_on_arm64_with_the_core_layer_and_tracing(cfn):
    (layer_id,) = resources_of_type(cfn, "AWS::Lambda::LayerVersion")
    assert properties(cfn, layer_id)["CompatibleRuntimes"] == ["python3.13"]
    assert properties(cfn, layer_id)["CompatibleArchitectures"] == ["arm64"]
    assert set(functions(cfn)) == set(ALL_FUNCTIONS)
    for function_id in functions(cfn):
        function = properties(cfn, function_id)
        assert function["Runtime"] == "python3.13", function_id
        assert function["Architectures"] == ["arm64"], function_id
        # The ADOT layer only with OtelLayerArn, after ours, and never on the receiver (its cold
        # start): elsewhere the wrapper loads the SDK before the handler.
        otel_layer = {"Fn::If": ["TracesWithOtel", {"Ref": "OtelLayerArn"}, {"Ref": "AWS::NoValue"}]}
        receiver = function_id == "WebhookReceiverFunction"
        assert function["Layers"] == [{"Ref": layer_id}, *([] if receiver else [otel_layer])], function_id
        assert function["TracingConfig"] == {"Mode": "Active"}, function_id
        assert function["Handler"] == "app.handler", function_id
        variables = environment(cfn, function_id)
        assert variables["AWS_LAMBDA_EXEC_WRAPPER"] == (
            {"Ref": "AWS::NoValue"}
            if receiver
            else {"Fn::If": ["TracesWithOtel", "/opt/otel-instrument", {"Ref": "AWS::NoValue"}]}
        )
        assert variables["OTEL_SEMCONV_STABILITY_OPT_IN"] == "gen_ai_latest_experimental"
        assert variables["POWERTOOLS_SERVICE_NAME"] == "lockgate"
        assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "Lockgate"
        assert variables["LOCKGATE_CONFIG"] == "lockgate.toml"
        assert variables["LOCKGATE_STAGE"] == {"Ref": "Stage"}


def test_given_each_function_then_it_logs_to_its_own_log_group_with_retention(cfn):
    for function_id in functions(cfn):
        log_group = properties(cfn, function_id)["LoggingConfig"]["LogGroup"]["Ref"]
        assert properties(cfn, log_group)["RetentionInDays"] == {"Ref": "LogRetentionDays"}


def test_given_the_receiver_then_it_is_small_and_knows_where_to_store_and_queue(cfn):
    receiver = properties(cfn, "WebhookReceiverFunction")
    assert (receiver["MemorySize"], receiver["Timeout"]) == (512, 10)
    expected = {
        "INBOX_TABLE": {"Ref": "InboxTable"},
        "INBOX_QUEUE_URL": {"Ref": "InboxQueue"},
        "BODY_BUCKET": {"Ref": "BodyBucket"},
        "SECRETS_PREFIX": PREFIX,
    }
    variables = environment(cfn, "WebhookReceiverFunction")
    assert {name: variables.get(name) for name in expected} == expected


TIMEOUT_VARIABLES = {  # what each function's settings class reads to size its AWS clients
    "WebhookReceiverFunction": "RECEIVER_TIMEOUT_SECONDS",
    "AgentWorkerFunction": "WORKER_TIMEOUT_SECONDS",
    "ApprovalCallbackFunction": "APPROVAL_TIMEOUT_SECONDS",
    "ApprovalNotifierFunction": "APPROVAL_TIMEOUT_SECONDS",
    "ScheduledJobsFunction": "JOBS_TIMEOUT_SECONDS",
    "EvalJobsFunction": "JOBS_TIMEOUT_SECONDS",
}


def test_given_each_function_then_its_environment_carries_its_timeout_for_the_aws_clients(cfn):
    assert set(TIMEOUT_VARIABLES) == set(functions(cfn))
    for function_id, variable in TIMEOUT_VARIABLES.items():
        timeout = properties(cfn, function_id)["Timeout"]
        assert environment(cfn, function_id)[variable] in (timeout, str(timeout)), function_id


def test_given_the_worker_then_its_environment_names_every_resource_it_uses(cfn):
    expected = {
        "INBOX_TABLE": {"Ref": "InboxTable"},
        "STATE_TABLE": {"Ref": "StateTable"},
        "BODY_BUCKET": {"Ref": "BodyBucket"},
        "INBOX_QUEUE_URL": {"Ref": "InboxQueue"},
        "INBOX_DLQ_URL": {"Ref": "InboxDLQ"},
        "WORKER_TIMEOUT_SECONDS": {"Ref": "WorkerTimeoutSeconds"},
    }
    variables = environment(cfn, "AgentWorkerFunction")
    assert {name: variables.get(name) for name in expected} == expected
    # The worker never reads webhook secrets, so it is not told where they are.
    assert "SECRETS_PREFIX" not in variables


def test_given_the_http_api_then_post_webhooks_source_invokes_the_receiver_with_payload_v2(cfn):
    body = properties(cfn, "WebhookApi")["Body"]
    assert set(body["paths"]) == {"/webhooks/{source}", "/approvals/{id}", "/approvals", "/approvals/slack"}
    assert list(body["paths"]["/webhooks/{source}"]) == ["post"]
    integration = body["paths"]["/webhooks/{source}"]["post"]["x-amazon-apigateway-integration"]
    assert integration["payloadFormatVersion"] == "2.0"
    assert "${WebhookReceiverFunction.Arn}" in integration["uri"]["Fn::Sub"]


# ------------------------------------------------------------------ least privilege


def test_given_every_function_then_it_has_a_row_in_the_least_privilege_table(cfn):
    assert set(functions(cfn)) == set(EXPECTED_ACCESS)


@pytest.mark.parametrize("function_id", ALL_FUNCTIONS)
def test_given_a_function_role_then_it_grants_exactly_its_row_of_data_access(cfn, function_id):
    role = role_of(cfn, function_id)
    assert set(role.get("ManagedPolicyArns", [])) <= BASIC_MANAGED_POLICIES
    assert data_access(cfn, function_id) == EXPECTED_ACCESS[function_id]


# What a role must never reach, whatever its row says: (function, action prefix, resource text, why).
FORBIDDEN = [
    ("WebhookReceiverFunction", "", "ApprovalsTable", "the receiver never reads or writes proposals"),
    ("WebhookReceiverFunction", "", "DecisionsTable", "nor decisions"),
    ("WebhookReceiverFunction", "dynamodb:", "StateTable", "nor the run state or ledger"),
    ("WebhookReceiverFunction", "", "anthropic-api-key", "nor the model key"),
    ("WebhookReceiverFunction", "", "approval-link", "nor the link key"),
    ("WebhookReceiverFunction", "", "InboxDLQ", "nor the DLQ"),
    ("AgentWorkerFunction", "dynamodb:Put", "DecisionsTable", "the agent cannot approve itself"),
    ("AgentWorkerFunction", "dynamodb:Update", "DecisionsTable", "nor change a decision"),
    ("AgentWorkerFunction", "dynamodb:Delete", "DecisionsTable", "nor delete one"),
    ("AgentWorkerFunction", "", "ApprovalLinkSecret", "nor sign links"),
    ("AgentWorkerFunction", "", "/webhooks/", "nor read webhook secrets"),
    *[
        (function_id, "", forbidden, "the approval side never holds the model key or tool credentials")
        for function_id in APPROVAL_FUNCTIONS
        for forbidden in ("anthropic-api-key", "/webhooks/", "Shop", "BodyBucket")
    ],
    ("ApprovalNotifierFunction", "dynamodb:Put", "DecisionsTable", "the notifier never decides"),
    ("ApprovalNotifierFunction", "dynamodb:Update", "DecisionsTable", "nor changes a decision"),
    ("ApprovalNotifierFunction", "dynamodb:Delete", "DecisionsTable", "nor deletes one"),
    # Its "slack-message#" rows (by condition: test_..._touches_only_its_slack_message_rows_...) and
    # nothing else: no query, scan or delete of the run state.
    *[
        ("ApprovalNotifierFunction", action, "StateTable", "the notifier reads no run state")
        for action in ("dynamodb:Query", "dynamodb:Scan", "dynamodb:Delete", "dynamodb:Batch")
    ],
    # The callback adds link re-send rows and reads a ledger entry's state (by conditions): it lists,
    # queries and deletes no state.
    *[
        ("ApprovalCallbackFunction", action, "StateTable", "the callback reads no run state")
        for action in ("dynamodb:Query", "dynamodb:Scan", "dynamodb:Delete", "dynamodb:Batch")
    ],
]


@pytest.mark.parametrize(("function_id", "action", "resource", "why"), FORBIDDEN)
def test_given_a_function_role_then_it_never_reaches_what_it_must_not(
    cfn, function_id, action, resource, why
):
    reached = {(a, r) for a, r in access(role_of(cfn, function_id)) if a.startswith(action) and resource in r}
    assert not reached, why


def test_given_the_receiver_role_then_it_cannot_touch_the_state_table_or_the_dlq(cfn):
    resources = {resource for _, resource in access(role_of(cfn, "WebhookReceiverFunction"))}
    assert not any("StateTable" in resource or "InboxDLQ" in resource for resource in resources)


def test_given_the_worker_role_then_it_has_exactly_its_data_access_and_only_the_model_key(cfn):
    role = role_of(cfn, "AgentWorkerFunction")
    # Not AWSLambdaSQSQueueExecutionRole: its queue permissions are on every queue ("*").
    assert set(role.get("ManagedPolicyArns", [])) <= BASIC_MANAGED_POLICIES
    assert data_access(cfn, "AgentWorkerFunction") == WORKER_ACCESS
    secrets = {resource for action, resource in access(role) if action.startswith("secretsmanager:")}
    # The Claude API key and MCP servers' credentials, nothing else: not the webhook secrets, not
    # the approval-link secret.
    assert secrets == {
        "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:"
        "${SecretsPrefix}/anthropic-api-key-??????",
        MCP_CREDENTIALS[1],
    }


MODEL_KEY_ARN = (
    "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:"
    "${SecretsPrefix}/anthropic-api-key-??????"
)
WORKSPACE_ARN = (
    "arn:${AWS::Partition}:aws-external-anthropic:${AWS::Region}:${AWS::AccountId}:"
    "workspace/${ClaudeWorkspaceId}"
)
MODEL_CALLERS = ("AgentWorkerFunction", "EvalJobsFunction")  # the weekly eval calls real Claude too
# What each provider adds to the worker's grants on Anthropic's API, besides losing the model key.
PROVIDER_GRANTS = {
    "bedrock": {("bedrock:InvokeModel", "Ref:BedrockModelArns")},
    "aws": {("aws-external-anthropic:CreateInference", WORKSPACE_ARN)},
}


@pytest.mark.parametrize("provider", sorted(PROVIDER_GRANTS))
def test_given_an_aws_model_provider_then_the_worker_invokes_exactly_the_named_models_and_reads_no_key(
    cfn, provider
):
    worker = role_of(cfn, "AgentWorkerFunction")
    anthropic_api, on_aws = access(worker), access(worker, provider)
    # Exactly InvokeModel (no streaming, no batch jobs, no bedrock:*) on the parameter's ARNs, or
    # CreateInference on the one workspace; and the key secret is gone.
    assert (
        on_aws
        == (anthropic_api - {("secretsmanager:GetSecretValue", MODEL_KEY_ARN)}) | PROVIDER_GRANTS[provider]
    )
    # And no role reads the key; the weekly eval calls the model as the worker does, with the same
    # grant and nothing more; no other role may call a model
    for function_id in ALL_FUNCTIONS:
        role = role_of(cfn, function_id)
        assert ("secretsmanager:GetSecretValue", MODEL_KEY_ARN) not in access(role, provider)
        calls = {(a, r) for a, r in access(role, provider) if a.startswith(("bedrock:", "aws-external"))}
        assert calls == (PROVIDER_GRANTS[provider] if function_id in MODEL_CALLERS else set()), function_id
    evals = role_of(cfn, "EvalJobsFunction")
    assert (
        access(evals, provider)
        == (access(evals) - {("secretsmanager:GetSecretValue", MODEL_KEY_ARN)}) | PROVIDER_GRANTS[provider]
    )


def test_given_the_model_provider_then_the_worker_is_told_it_and_the_key_only_on_anthropics_api(cfn):
    for function_id in ("AgentWorkerFunction", "ScheduledJobsFunction", "EvalJobsFunction"):
        key = environment(cfn, function_id)["ANTHROPIC_API_KEY_REF"]
        assert key["Fn::If"][0] == "UsesAnthropicApi" and key["Fn::If"][2] == {"Ref": "AWS::NoValue"}
    for function_id in MODEL_CALLERS:  # each refuses to start on another provider than its role's
        assert environment(cfn, function_id)["LOCKGATE_MODEL_PROVIDER"] == {"Ref": "ModelProvider"}
    assert cfn["Parameters"]["ModelProvider"]["AllowedValues"] == ["anthropic", "bedrock", "aws"]


def test_given_an_aws_provider_without_its_resources_then_the_rules_refuse_the_deploy(sam_template):
    rules = sam_template["Rules"]
    bedrock, aws = rules["BedrockNeedsModelArns"], rules["ClaudePlatformNeedsWorkspace"]
    assert bedrock["RuleCondition"] == {"Fn::Equals": [{"Ref": "ModelProvider"}, "bedrock"]}
    unset = sam_template["Parameters"]["BedrockModelArns"]["Default"]
    assert bedrock["Assertions"][0]["Assert"] == {
        "Fn::Not": [{"Fn::Contains": [{"Ref": "BedrockModelArns"}, unset]}]
    }
    assert aws["Assertions"][0]["Assert"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "ClaudeWorkspaceId"}, ""]}]}


def test_given_the_worker_role_then_it_sends_email_only_from_the_shops_address(cfn):
    (statement,) = (
        s for s in statements(role_of(cfn, "AgentWorkerFunction")) if "ses:SendEmail" in as_list(s["Action"])
    )
    assert as_list(statement["Action"]) == ["ses:SendEmail"]
    assert statement["Condition"] == {"StringEquals": {"ses:FromAddress": {"Ref": "ShopFromAddress"}}}
    assert cfn["Parameters"]["ShopFromAddress"]["Default"] == "support@shop.example.com"


def test_given_the_worker_then_it_gets_the_shops_settings_besides_its_declared_resources(cfn):
    # (Each declared resource's variable, on the worker and the jobs: `lockgate check`.)
    variables = environment(cfn, "AgentWorkerFunction")
    settings = {name for name in variables if name.startswith("SHOP_")} - DECLARED_VARIABLES
    assert {name: variables[name] for name in settings} == {
        "SHOP_HOST": "shop.example.com",
        "SHOP_MODEL": {"Ref": "ShopModelId"},
        "SHOP_OWNER_ADDRESS": "owner@shop.example.com",
    }


def test_given_the_workflows_tables_then_each_is_on_demand_and_encrypted_and_the_shops_are_keyed(cfn):
    tables = set(resources_of_type(cfn, "AWS::DynamoDB::Table")) & DECLARED
    assert set(SHOP_TABLES) <= tables
    for table_id in tables:
        table = properties(cfn, table_id)
        assert table["BillingMode"] == "PAY_PER_REQUEST", table_id
        assert table["SSESpecification"] == {"SSEEnabled": True}, table_id
    keys = {t: properties(cfn, t)["KeySchema"] for t in SHOP_TABLES}
    assert keys == {
        "ShopOrdersTable": [{"AttributeName": "order_id", "KeyType": "HASH"}],
        "ShopPaymentsTable": [{"AttributeName": "idempotency_key", "KeyType": "HASH"}],
        "ShopMailTable": [{"AttributeName": "message_id", "KeyType": "HASH"}],
    }
    (by_customer,) = properties(cfn, "ShopOrdersTable")["GlobalSecondaryIndexes"]
    assert (by_customer["IndexName"], by_customer["KeySchema"]) == (
        "by-customer",
        [{"AttributeName": "customer_email", "KeyType": "HASH"}],
    )
    (by_sender,) = properties(cfn, "ShopMailTable")["GlobalSecondaryIndexes"]
    assert (by_sender["IndexName"], by_sender["KeySchema"]) == (
        "by-sender",
        [
            {"AttributeName": "sender", "KeyType": "HASH"},
            {"AttributeName": "received_at", "KeyType": "RANGE"},
        ],
    )
    # Listing a sender's recent mail needs ids only: the email text is never projected.
    assert by_sender["Projection"] == {"ProjectionType": "KEYS_ONLY"}


@pytest.mark.parametrize("function_id", ALL_FUNCTIONS)
def test_given_any_function_role_then_no_data_action_is_granted_on_every_resource(cfn, function_id):
    for statement in statements(role_of(cfn, function_id)):
        actions = as_list(statement["Action"])
        if any(action.startswith(DATA_SERVICES) for action in actions):
            assert "*" not in as_list(statement["Resource"]), statement
            assert not any("*" in action for action in actions), statement


# ------------------------------------------------------------------ alarms and outputs


def test_given_the_alarms_then_each_notifies_the_alerts_topic(cfn):
    alarms = resources_of_type(cfn, "AWS::CloudWatch::Alarm")
    assert {"InboxDLQNotEmpty", "WorkerErrors", "ReceiverErrors"} <= set(alarms)
    for alarm in alarms.values():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": "AlertsTopic"}]
    dlq_alarm = properties(cfn, "InboxDLQNotEmpty")
    assert dlq_alarm["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert dlq_alarm["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": ["InboxDLQ", "QueueName"]}}
    ]


def test_given_no_alert_email_then_the_topic_has_no_subscription(cfn):
    subscription = cfn["Resources"]["AlertsEmailSubscription"]
    assert subscription["Condition"] == "HasAlertEmail"
    assert cfn["Conditions"]["HasAlertEmail"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "AlertEmail"}, ""]}]}
    assert cfn["Parameters"]["AlertEmail"]["Default"] == ""


def test_given_the_outputs_then_a_user_finds_the_webhook_url_and_every_resource_name(cfn):
    outputs = cfn["Outputs"]
    assert set(outputs) >= {
        "WebhookBaseUrl",
        "ApprovalBaseUrl",
        "ApprovalsTableName",
        "DecisionsTableName",
        "InboxTableName",
        "StateTableName",
        "InboxQueueUrl",
        "InboxDLQUrl",
        "BodyBucketName",
        "AlertsTopicArn",
    }
    assert outputs["WebhookBaseUrl"]["Value"] == api_or_domain("webhooks")
    assert outputs["ApprovalBaseUrl"]["Value"] == api_or_domain("approvals")
    assert outputs["SecretsPrefix"]["Value"] == PREFIX
    assert outputs["ApprovalsTableName"]["Value"] == {"Ref": "ApprovalsTable"}
    assert outputs["DecisionsTableName"]["Value"] == {"Ref": "DecisionsTable"}


def test_given_template_parameters_then_defaults_match_the_documented_ones(sam_template):
    defaults = {name: p.get("Default") for name, p in sam_template["Parameters"].items()}
    assert defaults == {
        "Stage": "dev",
        "WorkerTimeoutSeconds": "300",
        "WorkerMaxConcurrency": 5,
        "WorkerBatchSize": 10,
        "WorkerBatchingWindowSeconds": 1,
        "WorkerRecordConcurrency": 10,
        "WorkerMemorySize": 512,
        "SecretsPrefix": "",
        "DomainName": "",
        "CertificateArn": "",
        "LogRetentionDays": 30,
        "AlertEmail": "",
        "ShopFromAddress": "support@shop.example.com",
        "TicketsMcpUrl": "https://tickets.invalid/mcp",  # no server: the example's calls fail, unsent
        "LogLevel": "INFO",
        "ShopModelId": "claude-sonnet-5-5",
        "ModelProvider": "anthropic",
        "BedrockModelArns": "arn:aws:bedrock:::foundation-model/unset",  # inert: a rule refuses it
        "ClaudeWorkspaceId": "",
        "OtelLayerArn": "",  # no spans unless AWS's ADOT layer is named
        "PreviousIndexes": "drop",  # "keep" only for the upgrade's first deploy
        "DailyBudgetUsd": "",
        "ApprovalChannels": "email",
        "OldestDeliveryAlarmSeconds": 1800,
        "SignatureRejectionAlarmCount": 20,
        "BlockedToolAlarmCount": 5,
        "RefusedClickAlarmCount": 10,
    }


# ------------------------------------------------------------------ approvals


def _routes(cfn: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(METHOD, path) → the function its integration invokes."""
    routes = {}
    for path, methods in properties(cfn, "WebhookApi")["Body"]["paths"].items():
        for method, operation in methods.items():
            integration = operation["x-amazon-apigateway-integration"]
            assert integration["payloadFormatVersion"] == "2.0"
            uri = integration["uri"]["Fn::Sub"]
            (function,) = (f for f in functions(cfn) if "${" + f + ".Arn}" in uri)
            routes[(method.upper(), path)] = function
    return routes


def _stream_mapping(cfn: dict[str, Any], table: str = "ApprovalsTable") -> dict[str, Any]:
    (mapping,) = (
        r["Properties"]
        for r in resources_of_type(cfn, "AWS::Lambda::EventSourceMapping").values()
        if r["Properties"]["EventSourceArn"] == {"Fn::GetAtt": [table, "StreamArn"]}
    )
    return mapping


def _secret_resources(cfn: dict[str, Any], function_id: str) -> set[str]:
    return {
        resource
        for action, resource in access(role_of(cfn, function_id))
        if action.startswith("secretsmanager:")
    }


def test_given_the_worker_role_then_it_cannot_write_decisions_or_touch_the_link_secret(cfn):
    # The issue's key assertion: the agent cannot approve itself, by IAM.
    pairs = access(role_of(cfn, "AgentWorkerFunction"))
    on_decisions = {action for action, resource in pairs if "DecisionsTable" in resource}
    assert on_decisions == {"dynamodb:GetItem", "dynamodb:Query"}
    assert not any(action.split(":", 1)[1].startswith(WRITE_ACTIONS) for action in on_decisions)
    assert not any("ApprovalLinkSecret" in resource or "approval-link" in resource for _, resource in pairs)
    # Its secret patterns cannot match the link key's name or a webhook secret's either.
    link_key_name = properties(cfn, "ApprovalLinkSecret")["Name"]["Fn::Sub"][0]
    for pattern in _secret_resources(cfn, "AgentWorkerFunction"):
        for name in (link_key_name, "${SecretsPrefix}/webhooks/github"):
            assert not fnmatch.fnmatchcase(name + "-AbCdEf", pattern.rsplit(":secret:", 1)[1])


def test_given_the_eval_function_then_it_reaches_only_the_job_rows_of_the_state_table(cfn):
    # Its trials run on moto; in the real account it may touch the "jobs" partition and nothing else.
    from lockgate.jobs.state import PARTITION

    on_state = [
        s for s in statements(role_of(cfn, "EvalJobsFunction")) if "StateTable" in json.dumps(s["Resource"])
    ]
    assert on_state and all(
        s["Condition"] == {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [PARTITION]}}
        for s in on_state
    )


def test_given_the_approval_callback_then_it_writes_only_the_link_resend_rows_of_the_state_table(cfn):
    # Given the role that serves the approval pages
    from lockgate.approvals.reissue import PARTITION

    on_state = [
        s
        for s in statements(role_of(cfn, "ApprovalCallbackFunction"))
        if "StateTable" in json.dumps(s["Resource"]) and as_list(s["Action"]) != ["dynamodb:GetItem"]
    ]
    # Then every write on the State table is limited to the re-send allowance and audit rows
    assert on_state and all(
        s["Condition"] == {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [PARTITION]}}
        for s in on_state
    )


def test_given_the_approval_notifier_then_it_touches_only_its_slack_message_rows_of_the_state_table(cfn):
    # Given the role that posts and updates the Slack messages, and the rows it keeps
    from lockgate.approvals.slack_records import key

    on_state = [
        s
        for s in statements(role_of(cfn, "ApprovalNotifierFunction"))
        if "StateTable" in json.dumps(s["Resource"])
    ]
    # Then one statement, on the "slack-message#" partitions only, and the keys it writes are in it
    (statement,) = on_state
    assert sorted(as_list(statement["Action"])) == [
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
    ]
    assert statement["Condition"] == {
        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["slack-message#*"]}
    }
    assert fnmatch.fnmatchcase(key("ap_0123")["pk"]["S"], "slack-message#*")
    assert environment(cfn, "ApprovalNotifierFunction")["SLACK_MESSAGE_TABLE"] == {"Ref": "StateTable"}


def test_given_the_decisions_table_then_only_the_approval_callback_may_write_it(cfn):
    # Decisions, and the refused clicks kept beside them, are the callback's to write: no other role.
    writers = {
        function_id
        for function_id in ALL_FUNCTIONS
        for action, resource in access(role_of(cfn, function_id))
        if "DecisionsTable" in resource and action.split(":", 1)[1].startswith(WRITE_ACTIONS)
    }
    assert writers == {"ApprovalCallbackFunction"}
    assert ("dynamodb:PutItem", "DecisionsTable.Arn") in access(role_of(cfn, "ApprovalCallbackFunction"))


def test_given_the_approval_callback_then_it_reads_only_the_state_and_time_of_ledger_entries(cfn):
    # Given the role that serves the approval pages, and what the outcome reader asks for
    from lockgate.actions.ledger import item_key
    from lockgate.approvals.outcome import READABLE_ATTRIBUTES

    reads = [
        s
        for s in statements(role_of(cfn, "ApprovalCallbackFunction"))
        if "StateTable" in json.dumps(s["Resource"]) and as_list(s["Action"]) == ["dynamodb:GetItem"]
    ]
    # Then one GetItem, on ledger entries ("op#" keys) only, projecting only their state and time
    (read,) = reads
    assert item_key("refund_order#refund#A-1#1.00")["pk"]["S"].startswith("op#")
    assert read["Condition"] == {
        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["op#*"]},
        "ForAllValues:StringEquals": {"dynamodb:Attributes": list(READABLE_ATTRIBUTES)},
        "StringEqualsIfExists": {"dynamodb:Select": "SPECIFIC_ATTRIBUTES"},
    }
    assert environment(cfn, "ApprovalCallbackFunction")["LEDGER_TABLE"] == {"Ref": "StateTable"}


def test_given_the_worker_role_then_it_may_propose_but_never_change_a_proposal(cfn):
    on_approvals = {
        (action, resource) for action, resource in access(role_of(cfn, "AgentWorkerFunction"))
        if "ApprovalsTable" in resource
    }  # fmt: skip
    assert on_approvals == {
        ("dynamodb:PutItem", "ApprovalsTable.Arn"),
        ("dynamodb:GetItem", "ApprovalsTable.Arn"),
    }
    variables = environment(cfn, "AgentWorkerFunction")
    assert (variables["APPROVALS_TABLE"], variables["DECISIONS_TABLE"]) == (
        {"Ref": "ApprovalsTable"},
        {"Ref": "DecisionsTable"},
    )
    assert "APPROVAL_LINK_SECRET_ARN" not in variables


def test_given_the_approval_notifier_role_then_it_has_exactly_its_access_and_emails_only_as_the_shop(cfn):
    role = role_of(cfn, "ApprovalNotifierFunction")
    # Not AWSLambdaDynamoDBExecutionRole: its stream permissions are on every stream ("*").
    assert set(role.get("ManagedPolicyArns", [])) <= BASIC_MANAGED_POLICIES
    assert data_access(cfn, "ApprovalNotifierFunction") == NOTIFIER_ACCESS
    (statement,) = (s for s in statements(role) if "ses:SendEmail" in as_list(s["Action"]))
    assert statement["Condition"] == {"StringEquals": {"ses:FromAddress": {"Ref": "ShopFromAddress"}}}


@pytest.mark.parametrize("function_id", APPROVAL_FUNCTIONS)
def test_given_an_approval_function_then_it_cannot_read_the_model_key_webhook_secrets_state_or_shop(
    cfn, function_id
):
    # (the callback's "approval-links" rows of State: test_..._writes_only_the_link_resend_rows_...)
    resources = {resource for _, resource in access(role_of(cfn, function_id))}
    assert not any("Shop" in r or "BodyBucket" in r for r in resources)
    secrets = _secret_resources(cfn, function_id) - {"Ref:ApprovalLinkSecret"}
    # besides the link key: the notifier's webhook URLs and Slack bot token,
    # the callback's Slack signing secret and bot token (views.open for the edit modal)
    assert {r.rsplit(":secret:", 1)[1] for r in secrets} == SLACK_AND_NOTIFY_SECRETS[function_id]
    assert not {"ANTHROPIC_API_KEY_REF", "SECRETS_PREFIX", "STATE_TABLE"} & set(environment(cfn, function_id))


def test_given_every_role_then_only_the_approval_functions_and_the_digest_can_read_the_link_secret(cfn):
    link_key_name = properties(cfn, "ApprovalLinkSecret")["Name"]["Fn::Sub"][0]
    readers = set()
    for role_id in resources_of_type(cfn, "AWS::IAM::Role"):
        for action, resource in access(properties(cfn, role_id)):
            if not action.startswith("secretsmanager:") and action != "*":
                continue
            pattern = resource.rsplit(":secret:", 1)[-1]
            if resource in ("Ref:ApprovalLinkSecret", "*") or fnmatch.fnmatchcase(
                link_key_name + "-AbCdEf", pattern
            ):
                readers.add(role_id)
    # ScheduledJobsRole: the approval digest emails each reviewer their signed links.
    assert readers == {"ApprovalCallbackRole", "ApprovalNotifierRole", "ScheduledJobsRole"}
    for function_id in ALL_FUNCTIONS:
        assert set(properties(cfn, function_id).get("ManagedPolicyArns", [])) <= BASIC_MANAGED_POLICIES


def test_given_the_link_secret_then_it_is_generated_long_and_named_under_the_prefix(cfn):
    secret = properties(cfn, "ApprovalLinkSecret")
    assert secret["Name"] == under_prefix("${SecretsPrefix}/approval-link-key")
    assert secret["GenerateSecretString"] == {"PasswordLength": 64, "ExcludePunctuation": True}
    assert "SecretString" not in secret


def test_given_the_approval_routes_then_get_and_post_reach_the_callback(cfn):
    routes = _routes(cfn)
    assert routes == {
        ("POST", "/webhooks/{source}"): "WebhookReceiverFunction",
        ("GET", "/approvals/{id}"): "ApprovalCallbackFunction",
        ("POST", "/approvals/{id}"): "ApprovalCallbackFunction",
        ("GET", "/approvals"): "ApprovalCallbackFunction",
        ("POST", "/approvals"): "ApprovalCallbackFunction",
        ("POST", "/approvals/slack"): "ApprovalCallbackFunction",
    }


SLACK_AND_NOTIFY_SECRETS = {
    "ApprovalNotifierFunction": {"${SecretsPrefix}/notify/*", "${SecretsPrefix}/slack/bot-??????"},
    "ApprovalCallbackFunction": {
        "${SecretsPrefix}/slack/signing-??????",
        "${SecretsPrefix}/slack/bot-??????",
    },
}


@pytest.mark.parametrize(
    ("secret", "readers"),
    [
        ("slack/bot", {"ApprovalNotifierRole", "ApprovalCallbackRole"}),
        ("slack/signing", {"ApprovalCallbackRole"}),
    ],
)
def test_given_the_slack_app_secrets_then_only_the_approval_side_reads_them(cfn, secret, readers):
    # The bot token posts as the app (the notifier) and opens the Edit button's modal (the callback:
    # views.open needs it); the signing secret vouches for a click (the callback only).
    name = f"lockgate/{secret}-AbCdEf"
    found = {
        role_id
        for role_id in resources_of_type(cfn, "AWS::IAM::Role")
        for action, resource in access(properties(cfn, role_id))
        if (action.startswith("secretsmanager:") or action == "*")
        and fnmatch.fnmatchcase(
            name, resource.rsplit(":secret:", 1)[-1].replace("${SecretsPrefix}", "lockgate")
        )
    }
    assert found == readers


@pytest.mark.parametrize("table", ["ApprovalsTable", "DecisionsTable"])
def test_given_the_approval_streams_then_the_notifier_reports_partial_failures_and_keeps_what_fails(
    cfn, table
):
    mapping = _stream_mapping(cfn, table)
    assert mapping["FunctionName"] == {"Ref": "ApprovalNotifierFunction"}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["StartingPosition"] == "LATEST"
    assert mapping["BatchSize"] == 10
    assert mapping["MaximumRetryAttempts"] == 5
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["DestinationConfig"] == {
        "OnFailure": {"Destination": {"Fn::GetAtt": ["ApprovalNotifyDLQ", "Arn"]}}
    }
    dlq = properties(cfn, "ApprovalNotifyDLQ")
    assert dlq["SqsManagedSseEnabled"] is True
    assert dlq["MessageRetentionPeriod"] == 14 * 24 * 3600
    alarm = properties(cfn, "ApprovalNotifyDLQNotEmpty")
    assert alarm["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": ["ApprovalNotifyDLQ", "QueueName"]}}
    ]


def test_given_the_approvals_table_then_it_streams_new_images_and_has_no_index(cfn):
    table = properties(cfn, "ApprovalsTable")
    assert table["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}
    assert table["KeySchema"] == [{"AttributeName": "approval_id", "KeyType": "HASH"}]
    # by-created is gone: nothing queried it, and every proposal wrote its partition (a task's)
    assert "GlobalSecondaryIndexes" not in table
    assert table["AttributeDefinitions"] == [{"AttributeName": "approval_id", "AttributeType": "S"}]
    assert properties(cfn, "DecisionsTable")["KeySchema"] == [
        {"AttributeName": "approval_id", "KeyType": "HASH"},
        {"AttributeName": "reviewer", "KeyType": "RANGE"},
    ]
    # Keys only: which proposal's Slack message to update; no verdict or reason leaves the table.
    assert properties(cfn, "DecisionsTable")["StreamSpecification"] == {"StreamViewType": "KEYS_ONLY"}


@pytest.mark.parametrize("table_id", ["ApprovalsTable", "DecisionsTable"])
def test_given_the_approval_tables_then_they_expire_are_encrypted_recoverable_and_protected_in_prod(
    cfn, table_id
):
    table = properties(cfn, table_id)
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}
    assert table["SSESpecification"] == {"SSEEnabled": True}
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["DeletionProtectionEnabled"] == {"Fn::If": ["IsProd", True, False]}


def _own_environment(cfn: dict[str, Any], function_id: str) -> dict[str, Any]:
    """A function's variables without the Globals every function shares."""
    return {
        name: value
        for name, value in environment(cfn, function_id).items()
        if not name.startswith(("POWERTOOLS_", "LOCKGATE_", "OTEL_"))
        and name not in ("LOG_LEVEL", "AWS_LAMBDA_EXEC_WRAPPER")
    }


def test_given_the_approval_functions_then_they_share_one_code_folder_and_know_their_resources(
    sam_template, cfn
):
    # One handler on one code folder (it tells HTTP and stream events apart).
    for function_id in APPROVAL_FUNCTIONS:
        function = properties(cfn, function_id)
        assert (function["MemorySize"], function["Timeout"]) == (512, 30)
        source = sam_template["Resources"][function_id]["Properties"]
        assert (source["CodeUri"], source["Handler"]) == ("functions/approval_callback/", "app.handler")
    assert _own_environment(cfn, "ApprovalCallbackFunction") == {
        "APPROVALS_TABLE": {"Ref": "ApprovalsTable"},
        "DECISIONS_TABLE": {"Ref": "DecisionsTable"},
        "INBOX_TABLE": {"Ref": "InboxTable"},
        "INBOX_QUEUE_URL": {"Ref": "InboxQueue"},
        "APPROVAL_LINK_SECRET_ARN": {"Ref": "ApprovalLinkSecret"},
        "APPROVAL_TIMEOUT_SECONDS": "30",
        "LINK_RESEND_TABLE": {"Ref": "StateTable"},  # its "approval-links" rows only
        "LEDGER_TABLE": {"Ref": "StateTable"},  # the state and time of "op#" entries, read only
        "SHOP_FROM_ADDRESS": {"Ref": "ShopFromAddress"},
        "VERSION_CHECK_FUNCTION": {"Ref": "AgentWorkerFunctionAliaslive"},  # asks the worker about edits
    }
    # Not the API's URL: the callback is a route of WebhookApi, so naming it here would be a
    # circular dependency; its pages link relatively.
    assert _own_environment(cfn, "ApprovalNotifierFunction") == {
        "APPROVALS_TABLE": {"Ref": "ApprovalsTable"},
        "APPROVAL_LINK_SECRET_ARN": {"Ref": "ApprovalLinkSecret"},
        "APPROVAL_TIMEOUT_SECONDS": "30",
        "APPROVAL_BASE_URL": api_or_domain("approvals"),
        "SHOP_FROM_ADDRESS": {"Ref": "ShopFromAddress"},
        "APPROVAL_CHANNELS": {"Ref": "ApprovalChannels"},
        "APPROVAL_SLACK_WEBHOOK_REF": under_prefix("secretsmanager:${SecretsPrefix}/notify/slack"),
        "APPROVAL_DISCORD_WEBHOOK_REF": under_prefix("secretsmanager:${SecretsPrefix}/notify/discord"),
        "SLACK_MESSAGE_TABLE": {"Ref": "StateTable"},  # its "slack-message#" rows only
        "DECISIONS_READ_TABLE": {"Ref": "DecisionsTable"},  # read only
    }


def test_given_the_translated_template_then_no_resource_depends_on_itself(cfn):
    # CloudFormation refuses a circular dependency; cfn-lint and sam validate don't see this one
    # (a route's function naming its own API in its environment).
    names = set(cfn["Resources"])

    def references(value: Any) -> set[str]:
        found: set[str] = set()
        if isinstance(value, dict):
            for key, arg in value.items():
                if key == "Ref" and arg in names:
                    found.add(arg)
                elif key == "Fn::GetAtt":
                    found.add(arg[0])
                elif key == "Fn::Sub":
                    text = arg if isinstance(arg, str) else arg[0]
                    found |= {m.split(".")[0] for m in re.findall(r"\$\{([^}!]+)\}", text)} & names
                    if not isinstance(arg, str):
                        found |= references(arg[1])
                else:
                    found |= references(arg)
        elif isinstance(value, list):
            for item in value:
                found |= references(item)
        return found

    graph = {
        name: references(resource.get("Properties", {})) | set(as_list(resource.get("DependsOn", [])))
        for name, resource in cfn["Resources"].items()
    }
    state: dict[str, int] = {}

    def visit(name: str, path: tuple[str, ...]) -> None:
        state[name] = 1
        for dependency in graph.get(name, ()):
            assert state.get(dependency) != 1, " -> ".join((*path, name, dependency))
            if dependency not in state:
                visit(dependency, (*path, name))
        state[name] = 2

    for name in graph:
        if name not in state:
            visit(name, ())


# ------------------------------------------------------------------ deploy: SnapStart, alarms, dashboard


def test_given_the_worker_then_snapstart_snapshots_published_versions_and_sqs_invokes_the_alias(cfn):
    assert properties(cfn, "AgentWorkerFunction")["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    (alias_id,) = resources_of_type(cfn, "AWS::Lambda::Alias")
    alias = properties(cfn, alias_id)
    assert (alias_id, alias["Name"], alias["FunctionName"]) == (
        "AgentWorkerFunctionAliaslive",
        "live",
        {"Ref": "AgentWorkerFunction"},
    )
    (version_id,) = resources_of_type(cfn, "AWS::Lambda::Version")
    assert alias["FunctionVersion"] == {"Fn::GetAtt": [version_id, "Version"]}
    # The queue's event source invokes the alias (the snapshot), never $LATEST.
    assert worker_mapping(cfn)["FunctionName"] == {"Ref": "AgentWorkerFunctionAliaslive"}
    # Only the worker pays for snapshots: the receiver has no agent dependencies to load.
    for function_id in set(ALL_FUNCTIONS) - {"AgentWorkerFunction"}:
        assert "SnapStart" not in properties(cfn, function_id), function_id


def test_given_every_function_then_log_level_and_powertools_come_from_parameters(cfn):
    for function_id in ALL_FUNCTIONS:
        variables = environment(cfn, function_id)
        assert variables["POWERTOOLS_LOG_LEVEL"] == variables["LOG_LEVEL"] == {"Ref": "LogLevel"}


def test_given_the_deploy_parameters_then_the_worker_and_notifier_receive_them(cfn):
    worker = environment(cfn, "AgentWorkerFunction")
    assert worker["LOCKGATE_DAILY_BUDGET_USD"] == {"Ref": "DailyBudgetUsd"}
    assert worker["SHOP_MODEL"] == {"Ref": "ShopModelId"}
    assert environment(cfn, "ApprovalNotifierFunction")["APPROVAL_CHANNELS"] == {"Ref": "ApprovalChannels"}
    budget = re.compile(cfn["Parameters"]["DailyBudgetUsd"]["AllowedPattern"])
    assert [bool(budget.fullmatch(v)) for v in ("", "20", "12.5", "-1", "1e9", "abc")] == [
        True, True, True, False, False, False
    ]  # fmt: skip


CUSTOM_ALARMS = {
    "SignatureRejectionBurst": "SignatureRejected",
    "BlockedToolBurst": "ToolCallBlocked",
    "PendingApprovalsPilingUp": "ApprovalFloodRefused",
    "RefusedApprovalClicks": "ApprovalClickRefused",
    "WebhookSecretUnavailable": "SecretUnavailable",
}


def _emitted_metric_names() -> set[str]:
    """Every literal metric name the code passes to add_metric (f-string prefixes end with '_')."""
    names: set[str] = set()
    for path in (TEMPLATE.parent / "layers" / "core" / "lockgate").rglob("*.py"):
        names |= set(re.findall(r'add_metric\(\s*name=f?"([A-Za-z_]+)', path.read_text(encoding="utf-8")))
        names |= set(re.findall(r'\(\s*"(Model[A-Za-z]+)",', path.read_text(encoding="utf-8")))
    return names


def test_given_the_alarms_then_each_watches_a_real_signal_and_notifies_the_topic(cfn):
    alarms = resources_of_type(cfn, "AWS::CloudWatch::Alarm")
    assert {"InboxDLQNotEmpty", "InboxOldestDeliveryTooOld", "WorkerErrors", *CUSTOM_ALARMS} <= set(alarms)
    oldest = properties(cfn, "InboxOldestDeliveryTooOld")
    assert (oldest["Namespace"], oldest["MetricName"]) == ("AWS/SQS", "ApproximateAgeOfOldestMessage")
    queue_name = {"Fn::GetAtt": ["InboxQueue", "QueueName"]}
    assert oldest["Dimensions"] == [{"Name": "QueueName", "Value": queue_name}]
    assert oldest["Threshold"] == {"Ref": "OldestDeliveryAlarmSeconds"}
    emitted = _emitted_metric_names()
    for alarm_id, metric in CUSTOM_ALARMS.items():
        alarm = properties(cfn, alarm_id)
        # Powertools publishes into the Globals' namespace with the dimension service = the service name.
        assert alarm["Namespace"] == environment(cfn, "AgentWorkerFunction")["POWERTOOLS_METRICS_NAMESPACE"]
        assert alarm["Dimensions"] == [{"Name": "service", "Value": "lockgate"}]
        assert alarm["MetricName"] == metric and metric in emitted, alarm_id
        assert alarm["TreatMissingData"] == "notBreaching"


def _dashboard(cfn: dict[str, Any]) -> dict[str, Any]:
    body, variables = properties(cfn, "Dashboard")["DashboardBody"]["Fn::Sub"]
    text = body
    for name, value in variables.items():
        text = text.replace("${" + name + "}", value)
    text = re.sub(r"\$\{[A-Za-z:.]+\}", "X", text)  # resource names and the region
    return json.loads(text)


def test_given_the_dashboard_then_it_is_valid_json_graphing_the_metrics_the_code_emits(cfn):
    dashboard = _dashboard(cfn)
    titles = [w["properties"]["title"] for w in dashboard["widgets"]]
    assert titles == [
        "Deliveries in", "Deliveries processed", "Agent runs", "Model tokens and dollars",
        "Approvals", "Queue", "Job heartbeats", "Function errors",
    ]  # fmt: skip
    custom = {
        row[1]
        for widget in dashboard["widgets"]
        for row in widget["properties"]["metrics"]
        if isinstance(row[0], str) and row[0] == "Lockgate"
    }
    emitted = _emitted_metric_names()
    prefixed = {name for name in emitted if name.endswith("_")}  # Run_{status}, Approval_{verdict}, ...
    unknown = {m for m in custom if m not in emitted and not any(m.startswith(p) for p in prefixed)}
    assert not unknown, f"the dashboard graphs metrics no code emits: {unknown}"
    assert {"DeliveryStored", "DeliveryDuplicate", "SignatureRejected"} <= custom
    # Per-call dollars and tokens carry task and model dimensions: the widget sums a SEARCH over them.
    searches = [
        row[0]["expression"]
        for widget in dashboard["widgets"]
        for row in widget["properties"]["metrics"]
        if isinstance(row[0], dict)
    ]
    for name in ("InputTokens", "OutputTokens", "ModelCostUSD", "JobHeartbeatAge"):
        assert any(f'MetricName="{name}"' in expression for expression in searches), name
    assert cfn["Outputs"]["DashboardUrl"]["Value"]["Fn::Sub"].endswith("#dashboards:name=${Dashboard}")


@pytest.mark.parametrize("table_id", ["InboxTable", "StateTable", "ApprovalsTable", "DecisionsTable"])
def test_given_the_tables_holding_deliveries_decisions_and_the_ledger_then_pitr_and_sse_are_on(cfn, table_id):
    table = properties(cfn, table_id)
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["SSESpecification"] == {"SSEEnabled": True}


@pytest.mark.parametrize("environment_name", ["default", "prod"])
def test_given_samconfig_then_each_environment_deploys_its_own_stack_with_valid_parameters(
    sam_template, environment_name
):
    config = tomllib.loads((TEMPLATE.parent / "samconfig.toml").read_text(encoding="utf-8"))[environment_name]
    deploy = config["deploy"]["parameters"]
    assert (
        config["global"]["parameters"]["stack_name"]
        == {"default": "lockgate", "prod": "lockgate-prod"}[environment_name]
    )
    assert deploy["capabilities"] == "CAPABILITY_IAM"
    assert config["build"]["parameters"]["template_file"] == "template.yaml"
    declared = sam_template["Parameters"]
    for override in deploy["parameter_overrides"].split():
        name, _, value = override.partition("=")
        assert name in declared, name
        allowed = declared[name].get("AllowedValues")
        assert allowed is None or value in {str(v) for v in allowed}, override
    overrides = dict(o.partition("=")[::2] for o in deploy["parameter_overrides"].split())
    assert overrides["Stage"] == ("prod" if environment_name == "prod" else "dev")


CORE = Path(__file__).resolve().parents[2] / "layers" / "core" / "lockgate" / "capacity"


@pytest.mark.parametrize(
    ("alarm", "metric", "emitter"),
    [
        ("SpendNearCapAlarm", "SpendNearCap", "spend.py"),
        ("SpendCapReachedAlarm", "SpendCapReached", "spend.py"),
        ("CircuitOpenedAlarm", "CircuitOpened", "breaker.py"),
        ("RateLimiterFallbackAlarm", "RateLimiterFallback", "ratelimit.py"),
    ],
)
def test_given_the_capacity_alarms_then_each_watches_the_metric_the_worker_emits(cfn, alarm, metric, emitter):
    # Given the metric name the core code emits (a renamed metric would leave the alarm deaf)
    assert f'name="{metric}"' in (CORE / emitter).read_text(encoding="utf-8")
    # Then the alarm watches it where Powertools publishes it: the worker's namespace, service dimension
    variables = environment(cfn, "AgentWorkerFunction")
    props = properties(cfn, alarm)
    assert props["Namespace"] == variables["POWERTOOLS_METRICS_NAMESPACE"] == "Lockgate"
    assert props["MetricName"] == metric
    assert props["Dimensions"] == [{"Name": "service", "Value": variables["POWERTOOLS_SERVICE_NAME"]}]
    assert (props["Statistic"], props["Threshold"]) == ("Sum", 0)
    assert props["ComparisonOperator"] == "GreaterThanThreshold"
    assert props["TreatMissingData"] == "notBreaching"
    assert props["AlarmActions"] == [{"Ref": "AlertsTopic"}]


def test_given_the_jobs_role_then_it_may_set_one_attribute_of_a_proposal_and_nothing_else(cfn):
    # escalate-approvals marks a proposal escalated: UpdateItem on Approvals, limited by IAM to the
    # attribute escalated_at (and the key), so the jobs can never change what a person approves.
    role = cfn["Resources"]["ScheduledJobsRole"]["Properties"]
    statements = [s for p in role["Policies"] for s in p["PolicyDocument"]["Statement"]]
    (marking,) = [
        s
        for s in statements
        if "dynamodb:UpdateItem"
        in (s.get("Action") if isinstance(s.get("Action"), list) else [s.get("Action")])
        and s["Resource"] == {"Fn::GetAtt": ["ApprovalsTable", "Arn"]}
    ]
    assert marking["Condition"] == {
        "ForAllValues:StringEquals": {"dynamodb:Attributes": ["approval_id", "escalated_at"]}
    }
