"""The real `sam build`, `sam package` and `sam deploy` against moto's CloudFormation, offline.

Measured limits of moto (5.2) that shape this test, each asserted from the translated template
instead: it does not apply the SAM transform (so the packaged template is translated with
samtranslator first, as CloudFormation would), it fetches a template only from an S3 URL on
``localhost``, it creates no AWS::Lambda::Alias (the worker's SQS mapping is pointed at the function
for moto, and the alias wiring is asserted from the translation), it ignores Architectures, TTL and
layers, and skips secrets, alarms and bucket policies. Stacks made through change sets have no Outputs.

Besides samconfig.toml's dev and prod stacks, a stack on Amazon Bedrock (ModelProvider=bedrock, the
ARNs `lockgate provider-arns` prints) shows least privilege for that provider as deployed: only the
worker and the weekly eval may call a model, exactly InvokeModel on those ARNs, and no function
gets, no role reads and `lockgate secrets` never asks for a model key.

Slow (sam build installs the layer's dependencies from PyPI): marked ``deploy``; `make check` runs it.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import os
import shlex
import subprocess
import tomllib
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from lockgate.config import load_config
from lockgate_infra.cli.iam import access, role_of, statements, translate, translate_file
from lockgate_infra.local.intrinsics import Resolver
from lockgate_infra.local.moto_server import MotoServer
from lockgate_infra.local.template import load_template

pytestmark = pytest.mark.deploy

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv" / "bin"
BUCKET = "lockgate-artifacts"
ALIAS = "AgentWorkerFunctionAliaslive"


def _sam(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(  # noqa: S603 - our own venv's sam, fixed arguments
        [str(BIN / "sam"), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=900, check=False
    )
    assert result.returncode == 0, f"sam {args[0]} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def of_type(cfn: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    """Logical id → properties of every resource of one type."""
    return {name: r["Properties"] for name, r in cfn["Resources"].items() if r["Type"] == kind}


def for_moto(cfn: dict[str, Any]) -> dict[str, Any]:
    """The translated template with the one rewrite moto needs: no alias, and whatever names it (the
    worker's SQS mapping, the approval callback's edit check and its grant) names the function."""
    cfn = json.loads(json.dumps(cfn))
    del cfn["Resources"][ALIAS]
    cfn["Outputs"].pop("AgentWorkerAlias", None)
    text = json.dumps(cfn).replace(json.dumps({"Ref": ALIAS}), json.dumps({"Ref": "AgentWorkerFunction"}))
    assert ALIAS not in text, "the alias is named other than by Ref: rewrite that too"
    return json.loads(text)


def samconfig(env: str) -> tuple[str, dict[str, str]]:
    """The stack name and parameter overrides that `sam deploy --config-env ENV` would use."""
    config = tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))
    stack = config[env]["global"]["parameters"]["stack_name"]
    overrides = config[env]["deploy"]["parameters"].get("parameter_overrides", "")
    return stack, dict(pair.split("=", 1) for pair in shlex.split(overrides))


@pytest.fixture(scope="module")
def account(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One moto account with the app built once and packaged into its S3, ready for `deploy`."""
    work = tmp_path_factory.mktemp("deploy")
    server = MotoServer()
    server.start()
    # moto's CloudFormation reads TemplateURL only when its host is localhost (measured).
    url = server.endpoint_url.replace("127.0.0.1", "localhost")
    env = {
        "PATH": f"{BIN}:{os.environ.get('PATH', '')}",  # sam build without Docker needs python3.13 on PATH
        "HOME": os.environ.get("HOME", str(work)),
        "AWS_ENDPOINT_URL": url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "SAM_CLI_TELEMETRY": "0",
    }
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )

    def client(service: str) -> Any:
        return session.client(service, endpoint_url=url)  # type: ignore[call-overload]

    try:
        client("s3").create_bucket(Bucket=BUCKET)
        build = work / "build"
        cache = str(ROOT / ".aws-sam" / "cache")
        _sam(["build", "--template-file", str(ROOT / "template.yaml"), "--build-dir", str(build),
              "--cache-dir", cache, "--cached", "--parallel"], env, ROOT)  # fmt: skip
        packaged = work / "packaged.yaml"
        _sam(["package", "--template-file", str(build / "template.yaml"), "--s3-bucket", BUCKET,
              "--output-template-file", str(packaged)], env, work)  # fmt: skip
        yield {"client": client, "env": env, "work": work, "build": build, "packaged": packaged}
    finally:
        server.stop()


def deploy(
    account: dict[str, Any], config_env: str, stack_name: str | None = None, **overrides: str
) -> dict[str, Any]:
    """Translate the packaged template with one samconfig environment's parameters and deploy it
    (as ``stack_name`` with ``overrides`` added, as `sam deploy --parameter-overrides` adds them)."""
    stack, parameters = samconfig(config_env)
    stack, parameters = stack_name or stack, {**parameters, **overrides}
    translated = translate_file(account["packaged"], parameters)
    deployable = account["work"] / f"{stack}.json"
    deployable.write_text(json.dumps(for_moto(translated)), encoding="utf-8")
    overrides = [f"{k}={v}" for k, v in parameters.items()]
    _sam(["deploy", "--template-file", str(deployable), "--stack-name", stack, "--s3-bucket", BUCKET,
          "--capabilities", "CAPABILITY_IAM", "--no-confirm-changeset", "--no-progressbar",
          "--parameter-overrides", *overrides], account["env"], account["work"])  # fmt: skip
    client = account["client"]
    summaries = client("cloudformation").list_stack_resources(StackName=stack)["StackResourceSummaries"]
    return {
        "client": client,
        "stack": stack,
        "parameters": parameters,
        "cfn": translated,
        "physical": {r["LogicalResourceId"]: r["PhysicalResourceId"] for r in summaries},
        "packaged": load_template(account["packaged"]),
        "build": account["build"],
    }


@pytest.fixture(scope="module")
def deployed(account: dict[str, Any]) -> dict[str, Any]:
    """samconfig.toml's [default] (dev) stack, deployed."""
    return deploy(account, "default")


@pytest.fixture(scope="module")
def deployed_prod(account: dict[str, Any], deployed: dict[str, Any]) -> dict[str, Any]:
    """samconfig.toml's [prod] stack, deployed after dev into the same account."""
    return deploy(account, "prod")


def test_given_the_packaged_template_then_code_is_in_the_bucket_and_only_the_alias_was_rewritten(deployed):
    # Every CodeUri/ContentUri points into the artifacts bucket, and the objects exist there.
    s3 = deployed["client"]("s3")
    for resource in deployed["packaged"]["Resources"].values():
        for key in ("CodeUri", "ContentUri"):
            uri = (resource.get("Properties") or {}).get(key)
            if uri is not None:
                bucket, _, obj = uri.removeprefix("s3://").partition("/")
                assert bucket == BUCKET and s3.head_object(Bucket=bucket, Key=obj)["ContentLength"] > 0
    # The packaged translation is the source translation but for code locations.
    source = translate(load_template(ROOT / "template.yaml"))

    def names(cfn: dict[str, Any]) -> set[str]:
        # A published version's or layer version's logical id hashes its code location: it differs.
        return {n for n in cfn["Resources"] if not n.startswith(("AgentWorkerFunctionVersion", "CoreLayer"))}

    assert names(deployed["cfn"]) == names(source)
    assert deployed["cfn"]["Resources"][ALIAS]["Properties"]["Name"] == "live"


AARCH64 = 183  # ELF e_machine of AArch64


def test_given_the_build_then_the_receiver_ships_no_dependencies_and_every_extension_is_for_arm64(deployed):
    build: Path = deployed["build"]
    # The receiver's package is its handler and config (with the stages' overlays): no agent
    # dependencies on its import path.
    assert sorted(p.name for p in (build / "WebhookReceiverFunction").iterdir()) == [
        "app.py", "lockgate.toml", "requirements.txt", "stages"
    ]  # fmt: skip
    assert (build / "WebhookReceiverFunction" / "stages" / "prod.toml").is_file()
    assert not (build / "CoreLayer" / "python" / "anthropic").exists()
    assert (build / "AgentWorkerFunction" / "anthropic").is_dir()
    # sam build without Docker fetched wheels for the Lambda architecture, not this machine's.
    extensions = list(build.rglob("*.so"))
    assert extensions, "no compiled extension found (pydantic_core is one)"
    for extension in extensions:
        header = extension.read_bytes()[:20]
        assert header[:4] == b"\x7fELF" and int.from_bytes(header[18:20], "little") == AARCH64, extension


def test_given_the_build_then_each_jobs_function_carries_what_its_jobs_load(deployed):
    build: Path = deployed["build"]
    # The jobs function loads the config and the workflows package (scheduled tasks, reconcile hooks)
    jobs = build / "ScheduledJobsFunction"
    assert (jobs / "lockgate.toml").is_file() and (jobs / "shop" / "task.py").is_file()
    assert not (jobs / "moto").exists() and not (jobs / "lockgate_infra").exists()
    # The eval function carries the harness: moto, the case files, and the template its sandbox reads
    evals = build / "EvalJobsFunction"
    for needed in (
        "moto",
        "yaml",
        "anthropic",
        "lockgate_infra/evals/rig.py",
        "shop/evals/support_inbox.toml",
    ):
        assert (evals / needed).exists(), needed
    # and only the harness (with serving.py, the base its stub server shares): none of the other
    # tools (the CLI, the local stack, chaos, the cost meter)
    assert sorted(p.name for p in (evals / "lockgate_infra").iterdir() if p.name != "__pycache__") == [
        "__init__.py",
        "evals",
        "local",
        "serving.py",
        "stub",
    ]
    assert not (evals / "lockgate_infra" / "local" / "stack.py").exists()
    assert (evals / "template.yaml").read_text(encoding="utf-8") == (ROOT / "template.yaml").read_text(
        encoding="utf-8"
    )
    # Unzipped, with the layer, it stays inside Lambda's 250 MB
    size = sum(f.stat().st_size for d in (evals, build / "CoreLayer") for f in d.rglob("*") if f.is_file())
    assert size < 250 * 1024 * 1024, size


def test_given_the_stack_then_its_tables_have_the_keys_indexes_and_streams_of_the_template(deployed):
    dynamodb, cfn = deployed["client"]("dynamodb"), deployed["cfn"]
    tables = of_type(cfn, "AWS::DynamoDB::Table")
    assert {"InboxTable", "StateTable", "ApprovalsTable", "DecisionsTable"} <= set(tables)
    for logical_id, declared in tables.items():
        table = dynamodb.describe_table(TableName=deployed["physical"][logical_id])["Table"]
        assert table["KeySchema"] == declared["KeySchema"], logical_id
        assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST", logical_id
        indexes = {i["IndexName"] for i in table.get("GlobalSecondaryIndexes", [])}
        # An index under Fn::If is the upgrade's old one, kept only with PreviousIndexes=keep (default drop)
        unconditional = [i for i in declared.get("GlobalSecondaryIndexes", []) if "Fn::If" not in i]
        assert indexes == {i["IndexName"] for i in unconditional}, logical_id
        stream = declared.get("StreamSpecification")
        assert table.get("StreamSpecification", {}).get("StreamEnabled", False) is bool(stream), logical_id
        if stream:
            assert table["StreamSpecification"]["StreamViewType"] == stream["StreamViewType"]
        # moto's CloudFormation ignores TTL: the translated template is the evidence.
        if logical_id in ("InboxTable", "StateTable", "ApprovalsTable", "DecisionsTable"):
            assert declared["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}


def test_given_the_stack_then_the_inbox_queue_redrives_to_its_dlq_and_outlasts_the_worker(deployed):
    sqs, physical = deployed["client"]("sqs"), deployed["physical"]
    attributes = sqs.get_queue_attributes(QueueUrl=physical["InboxQueue"], AttributeNames=["All"])[
        "Attributes"
    ]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=physical["InboxDLQ"], AttributeNames=["QueueArn"])[
        "Attributes"
    ]
    redrive = json.loads(attributes["RedrivePolicy"])
    assert redrive["deadLetterTargetArn"] == dlq_arn["QueueArn"]
    # A backstop well above the worker's own attempt limit (deferrals count as receives)
    assert int(redrive["maxReceiveCount"]) >= 4 * load_config(ROOT / "lockgate.toml").inbox.max_attempts
    worker = deployed["client"]("lambda").get_function_configuration(
        FunctionName=physical["AgentWorkerFunction"]
    )
    assert int(attributes["VisibilityTimeout"]) >= 6 * worker["Timeout"]
    assert attributes["SqsManagedSseEnabled"] == "true"


# (The worker's alias is not among them: for_moto deletes it and names the function wherever it was named.)
MOTO_SKIPS = ("AWS::SecretsManager::Secret", "AWS::ApiGatewayV2::Api")


def _default(cfn: dict[str, Any], value: Any) -> int:
    """A number from the template, or the default of the parameter it refers to."""
    return int(cfn["Parameters"][value["Ref"]]["Default"] if isinstance(value, dict) else value)


def _refers_to_skipped(value: Any, cfn: dict[str, Any]) -> bool:
    return isinstance(value, dict) and cfn["Resources"].get(value.get("Ref"), {}).get("Type") in MOTO_SKIPS


def _dropped(value: Any, cfn: dict[str, Any], parameters: dict[str, str]) -> bool:
    """Whether AWS::NoValue removes the value for this stack (an Fn::If's branch by its condition)."""
    if value == {"Ref": "AWS::NoValue"}:
        return True
    if isinstance(value, dict) and "Fn::If" in value:
        condition, yes, no = value["Fn::If"]
        holds = Resolver(cfn, parameters, {}, {}).condition(condition)
        return _dropped(yes if holds else no, cfn, parameters)
    return False


def test_given_the_stack_then_each_function_runs_what_the_template_says(deployed):
    lam, cfn, physical = deployed["client"]("lambda"), deployed["cfn"], deployed["physical"]
    functions = of_type(cfn, "AWS::Lambda::Function")
    assert len(functions) >= 4
    for logical_id, declared in functions.items():
        config = lam.get_function_configuration(FunctionName=physical[logical_id])
        assert (config["Runtime"], config["Handler"]) == ("python3.13", "app.handler"), logical_id
        # The worker's Timeout and MemorySize are parameters (WorkerTimeoutSeconds, WorkerMemorySize).
        timeout, memory = (_default(cfn, declared[key]) for key in ("Timeout", "MemorySize"))
        assert (config["MemorySize"], config["Timeout"]) == (memory, timeout), logical_id
        variables = config["Environment"]["Variables"]
        assert variables["POWERTOOLS_SERVICE_NAME"] == "lockgate" and variables["LOG_LEVEL"] == "INFO"
        # moto drops a variable whose value refers to a resource it skipped (the link secret).
        # The OpenTelemetry wrapper's variable: only with OtelLayerArn, never on the receiver.
        expected = {
            k
            for k, v in declared["Environment"]["Variables"].items()
            if not _refers_to_skipped(v, cfn) and not _dropped(v, cfn, deployed["parameters"])
        }
        assert set(variables) == expected, logical_id
        # moto ignores Architectures (it reports x86_64): the translated template says arm64.
        assert declared["Architectures"] == ["arm64"]
    worker = lam.get_function_configuration(FunctionName=physical["AgentWorkerFunction"])["Environment"][
        "Variables"
    ]
    assert worker["INBOX_TABLE"] == physical["InboxTable"]
    assert worker["INBOX_QUEUE_URL"] == physical["InboxQueue"]


def test_given_the_stack_then_the_worker_reads_the_queue_with_partial_failures_and_bounded_concurrency(
    deployed,
):
    lam, physical = deployed["client"]("lambda"), deployed["physical"]
    queue_arn = deployed["client"]("sqs").get_queue_attributes(
        QueueUrl=physical["InboxQueue"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    (mapping,) = lam.list_event_source_mappings(EventSourceArn=queue_arn)["EventSourceMappings"]
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BatchSize"] == 10
    assert physical["AgentWorkerFunction"] in mapping["FunctionArn"]
    # moto drops ScalingConfig; the translated mapping carries it, on the SnapStart alias.
    mappings = of_type(deployed["cfn"], "AWS::Lambda::EventSourceMapping").values()
    (declared,) = (m for m in mappings if m["FunctionName"] == {"Ref": ALIAS})
    assert declared["ScalingConfig"] == {"MaximumConcurrency": {"Ref": "WorkerMaxConcurrency"}}


def test_given_the_stack_then_each_role_holds_exactly_the_translated_policies(deployed):
    iam, cfn, physical = deployed["client"]("iam"), deployed["cfn"], deployed["physical"]
    roles = of_type(cfn, "AWS::IAM::Role")
    assert len(roles) >= 4
    for logical_id, declared in roles.items():
        name = physical[logical_id]
        assert {p["PolicyName"] for p in declared.get("Policies", [])} == set(
            iam.list_role_policies(RoleName=name)["PolicyNames"]
        ), logical_id
        # moto's CloudFormation does not attach ManagedPolicyArns (measured): the translation says which.
        assert set(declared.get("ManagedPolicyArns", [])) <= {
            "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
            "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
        }, logical_id
    # The deployed worker policy grants what the table in tests/unit/test_template.py says, resolved.
    granted = deployed_grants(deployed, "AgentWorkerRole")
    assert {a for a, _ in granted} == {a for a, _ in access(role_of(cfn, "AgentWorkerFunction"))}
    # Resolved to the deployed table's ARN: the worker may read decisions, never write one.
    decisions = deployed["client"]("dynamodb").describe_table(TableName=physical["DecisionsTable"])
    on_decisions = {a for a, r in granted if r == decisions["Table"]["TableArn"]}
    assert on_decisions == {"dynamodb:GetItem", "dynamodb:Query"}


def deployed_grants(deployed: dict[str, Any], role_id: str) -> set[tuple[str, str]]:
    """(action, resource) of every statement of a deployed role's inline policies, resolved."""
    iam, role = deployed["client"]("iam"), deployed["physical"][role_id]
    granted = set()
    for policy_name in iam.list_role_policies(RoleName=role)["PolicyNames"]:
        document = iam.get_role_policy(RoleName=role, PolicyName=policy_name)["PolicyDocument"]
        if isinstance(document, str):
            # moto's CloudFormation stores an inline policy as the text of a Python dict (measured).
            document = ast.literal_eval(urllib.parse.unquote(document))
        granted |= {
            (action, resource)
            # A statement that Fn::If drops for this stack's provider (AWS::NoValue) is gone on AWS;
            # moto's CloudFormation keeps it as None (measured): skip it.
            for statement in document["Statement"]
            if statement is not None
            for action in _as_list(statement["Action"])
            # moto drops a Resource that refers to a resource it skipped (the link secret): none here
            for resource in _as_list(statement.get("Resource", []))
        }
    return granted


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_given_what_moto_skips_then_the_translated_template_declares_it(deployed):
    cfn = deployed["cfn"]
    kinds = {r["Type"] for r in cfn["Resources"].values()}
    # HTTP API with its routes, the link secret, alarms on the topic: not created by moto.
    assert {"AWS::ApiGatewayV2::Api", "AWS::SecretsManager::Secret", "AWS::CloudWatch::Alarm"} <= kinds
    api = cfn["Resources"]["WebhookApi"]["Properties"]["Body"]["paths"]
    assert {"/webhooks/{source}", "/approvals/{id}", "/approvals"} <= set(api)
    for schedule in (r for r in cfn["Resources"].values() if r["Type"] == "AWS::Scheduler::Schedule"):
        assert schedule["Properties"]["ScheduleExpressionTimezone"] in ("UTC", "Etc/UTC")


# The property that names each account-wide resource. Absent, CloudFormation makes the name from the
# stack's name and the logical id, so it cannot collide; present, it must resolve differently per stack.
ACCOUNT_WIDE_NAMES = {
    "AWS::DynamoDB::Table": "TableName",
    "AWS::SQS::Queue": "QueueName",
    "AWS::S3::Bucket": "BucketName",
    "AWS::SecretsManager::Secret": "Name",
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::CloudWatch::Alarm": "AlarmName",
    "AWS::CloudWatch::Dashboard": "DashboardName",
    "AWS::Scheduler::Schedule": "Name",
    "AWS::Lambda::Function": "FunctionName",
    "AWS::Lambda::LayerVersion": "LayerName",
    "AWS::IAM::Role": "RoleName",
    "AWS::SNS::Topic": "TopicName",
    "AWS::KMS::Alias": "AliasName",
    "AWS::ApiGatewayV2::DomainName": "DomainName",
}


class StackResolver(Resolver):
    """The local stack's intrinsics, with this stack's own name (names are made from it)."""

    def __init__(self, cfn: dict[str, Any], stack: str, parameters: dict[str, str]) -> None:
        super().__init__(cfn, parameters, {}, {})
        self._stack = stack

    def ref(self, name: Any, where: str) -> Any:
        """``AWS::StackName`` is this stack's; everything else as the local stack resolves it."""
        return self._stack if name == "AWS::StackName" else super().ref(name, where)


def declared_names(stack: dict[str, Any]) -> dict[str, str]:
    """Logical id → the account-wide name the stack's template gives it, resolved for that stack."""
    cfn = stack["cfn"]
    resolver = StackResolver(cfn, stack["stack"], stack["parameters"])
    names = {}
    for logical_id, resource in cfn["Resources"].items():
        key = ACCOUNT_WIDE_NAMES.get(resource["Type"])
        condition = resource.get("Condition")
        if key is None or (condition and not resolver.condition(condition)):
            continue
        if key in resource.get("Properties", {}):
            names[logical_id] = resolver.resolve_string(resource["Properties"][key], logical_id)
    return names


def test_given_dev_then_prod_from_samconfig_in_one_account_then_no_name_is_shared(deployed, deployed_prod):
    # Both stacks came up side by side (sam deploy failed on neither): what moto created differs...
    assert (deployed["stack"], deployed_prod["stack"]) == ("lockgate", "lockgate-prod")
    assert deployed_prod["parameters"]["Stage"] == "prod" and deployed["parameters"]["Stage"] == "dev"
    # (moto reports "" for what it skipped)
    dev_physical, prod_physical = (
        {p for p in s["physical"].values() if p} for s in (deployed, deployed_prod)
    )
    assert len(dev_physical) > 30 and not dev_physical & prod_physical
    # ...and so does every name the templates declare, including what moto skips (secrets, alarms,
    # schedules, the dashboard): each is resolved for its own stack.
    dev_names, prod_names = declared_names(deployed), declared_names(deployed_prod)
    assert {"ApprovalLinkSecret", "Dashboard", "WebhookReceiverLogGroup"} <= set(dev_names)
    assert set(dev_names.values()).isdisjoint(prod_names.values())
    assert dev_names["ApprovalLinkSecret"] == "lockgate/approval-link-key"
    assert prod_names["ApprovalLinkSecret"] == "lockgate-prod/approval-link-key"


def _secret_grants(stack: dict[str, Any]) -> set[str]:
    """Every Secrets Manager resource pattern any role of the stack is granted, resolved."""
    cfn, resolver = stack["cfn"], StackResolver(stack["cfn"], stack["stack"], stack["parameters"])
    grants = set()
    for role_id, role in of_type(cfn, "AWS::IAM::Role").items():
        for statement in statements(role):
            if any(str(a).startswith("secretsmanager:") for a in _as_list(statement["Action"])):
                for resource in _as_list(statement["Resource"]):
                    if resource != {"Ref": "ApprovalLinkSecret"}:  # its own secret, by ARN
                        grants.add(resolver.resolve_string(resource, role_id).rsplit(":secret:", 1)[1])
    return grants


def test_given_both_stacks_then_each_reads_only_its_own_secrets_and_its_stage_config(deployed, deployed_prod):
    dev, prod = _secret_grants(deployed), _secret_grants(deployed_prod)
    assert dev and all(g.startswith("lockgate/") for g in dev)
    assert prod and all(g.startswith("lockgate-prod/") for g in prod)
    # The config each stage's functions load (stages/<Stage>.toml over lockgate.toml) names secrets
    # its own roles may read, and no other stage's.
    lam = deployed["client"]("lambda")
    for stack, grants, others in ((deployed, dev, prod), (deployed_prod, prod, dev)):
        receiver = lam.get_function_configuration(FunctionName=stack["physical"]["WebhookReceiverFunction"])
        variables = receiver["Environment"]["Variables"]
        config = load_config(stack["build"] / "WebhookReceiverFunction" / variables["LOCKGATE_CONFIG"],
                             variables["LOCKGATE_STAGE"])  # fmt: skip
        for source in config.sources.values():
            for ref in source.secrets:
                name = ref.removeprefix("secretsmanager:")
                assert any(fnmatch.fnmatchcase(name, g) for g in grants), (stack["stack"], name)
                assert not any(fnmatch.fnmatchcase(name, g) for g in others), (stack["stack"], name)
        assert variables["SECRETS_PREFIX"] == stack["stack"]


def test_given_the_locks_then_the_worker_and_the_layer_ship_the_same_pydantic(deployed):
    # anthropic brings its own pydantic into the worker (it shadows the layer's): the locks make it
    # the layer's version, so the worker runs what the layer and the tests run.
    build: Path = deployed["build"]
    for package in ("pydantic", "pydantic_core"):
        layer = {p.name for p in (build / "CoreLayer" / "python").glob(f"{package}-*.dist-info")}
        worker = {p.name for p in (build / "AgentWorkerFunction").glob(f"{package}-*.dist-info")}
        assert len(layer) == 1 and worker == layer, (layer, worker)


def deploy_guide_commands() -> list[str]:
    """The deploy guide's (docs/deploy.md) `lockgate` command lines, in order, comments stripped."""
    guide = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    lines = [line.split("  #")[0].strip() for line in guide.splitlines()]
    return [line for line in lines if line.startswith(".venv/bin/lockgate ")]


def test_given_the_deploy_guide_then_its_lockgate_commands_run_in_order_against_the_deployed_stack(deployed):
    """After `sam deploy` (the `deployed` fixture), every `lockgate` line of the guide, as written.

    Two kinds are not run here, and said so: `inbox send-test` posts to the HTTP API, which moto
    does not create (tests/integration/test_cli.py runs it for every source against `lockgate
    local`), and lines with a `<placeholder>` for a value the reader fills in.
    """
    from lockgate_infra.local.devsecrets import dev_secret

    config = load_config(ROOT / "lockgate.toml")
    values = {name: dev_secret(source) for name, source in config.sources.items()}
    values |= {"model-key": "sk-ant-x"} | {f"mcp-{server}": f"token-for-{server}" for server in config.mcp}
    commands = deploy_guide_commands()
    ran = []
    for line in commands:
        if " send-test " in line or "<" in line:
            continue
        argv = shlex.split(line)
        stdin = ""
        if argv[1:3] in (["secrets", "set"], ["secrets", "rotate-in"]):
            stdin = values[argv[3]] if argv[2] == "set" else f"next-{values[argv[3]]}"
        # The guide's commands run from the checkout (samconfig.toml gives the region) with your
        # credentials: here, moto's endpoint and keys.
        result = subprocess.run(
            [str(BIN / "lockgate"), *argv[1:]], input=stdin, capture_output=True, text=True, check=False,
            cwd=ROOT, env={**deployed_environment(deployed), "PATH": os.environ.get("PATH", "")}, timeout=120,
        )  # fmt: skip
        assert result.returncode == 0, (line, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
        ran.append(" ".join(argv[1:3]))
    # Every secret was stored (each source's, the model key, each MCP server's credential), checked,
    # one rotated; then the inbox was read
    assert ran.count("secrets set") == len(config.sources) + 1 + len(config.mcp)
    assert ran[-4:] == ["secrets check", "secrets rotate-in", "secrets rotate-out", "inbox status"]
    secrets = deployed["client"]("secretsmanager")
    stored = secrets.get_secret_value(SecretId="lockgate/webhooks/github")["SecretString"]
    assert stored == f"next-{values['github']}"
    # And the MCP server's credential is where the worker and the jobs read it
    token = secrets.get_secret_value(SecretId="lockgate/mcp/tickets")["SecretString"]
    assert token == values["mcp-tickets"]


def deployed_environment(deployed: dict[str, Any]) -> dict[str, str]:
    """What the reader's shell has after `aws configure`: here, the moto account the stack is in."""
    client = deployed["client"]("sts")
    endpoint = client.meta.endpoint_url
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "HOME": os.environ.get("HOME", "/tmp"),
    }


# ------------------------------------------------------------------ a stage on Amazon Bedrock

MODEL_CALLERS = ("AgentWorkerRole", "EvalJobsRole")  # the worker and the weekly eval call the model


def lockgate_cli(deployed: dict[str, Any], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`.venv/bin/lockgate ARGS` from the checkout, with the moto account's endpoint and keys."""
    env = {**deployed_environment(deployed), "PATH": os.environ.get("PATH", "")}
    return subprocess.run(  # noqa: S603 - our own venv's CLI, fixed arguments
        [str(BIN / "lockgate"), *args], input=stdin, capture_output=True, text=True, check=False, cwd=ROOT,
        env=env, timeout=120,
    )  # fmt: skip


@pytest.fixture(scope="module")
def bedrock_config() -> Iterator[Path]:
    """lockgate.toml on Bedrock, as `lockgate local --provider bedrock` writes it: an id per model."""
    from lockgate_infra.local.model_provider import provider_config

    with provider_config(ROOT / "lockgate.toml", "bedrock") as wire:
        yield wire.config_path


@pytest.fixture(scope="module")
def deployed_bedrock(
    account: dict[str, Any], deployed: dict[str, Any], bedrock_config: Path
) -> dict[str, Any]:
    """The dev stack's parameters as a stack on Bedrock: ModelProvider=bedrock, and BedrockModelArns
    as `lockgate provider-arns` prints it from that config, deployed beside dev."""
    printed = lockgate_cli(deployed, "provider-arns", "--account", "123456789012", "--region", "us-east-1",
                           "--config", str(bedrock_config))  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    arns = printed.stdout.strip().removeprefix("BedrockModelArns=")
    stack = deploy(account, "default", "lockgate-bedrock", ModelProvider="bedrock", BedrockModelArns=arns)
    return {**stack, "arns": arns.split(","), "config": bedrock_config}


def test_given_a_bedrock_stage_then_only_the_model_callers_invoke_exactly_the_named_models(deployed_bedrock):
    # Given the stack deployed on Bedrock, its roles as moto's IAM holds them
    cfn, arns = deployed_bedrock["cfn"], deployed_bedrock["arns"]
    assert len(arns) > 2 and all(arn.startswith("arn:aws:bedrock:") for arn in arns)
    for role_id in of_type(cfn, "AWS::IAM::Role"):
        granted = deployed_grants(deployed_bedrock, role_id)
        calls = {(a, r) for a, r in granted if a.split(":")[0] in ("bedrock", "aws-external-anthropic")}
        # Then the worker and the eval may call exactly bedrock:InvokeModel (no streaming, no batch
        # jobs, no bedrock:*) on exactly the named ARNs, and no other role may call a model
        expected = {("bedrock:InvokeModel", arn) for arn in arns} if role_id in MODEL_CALLERS else set()
        assert calls == expected, role_id
        # And no role may read a model key
        assert not {r for a, r in granted if a.startswith("secretsmanager:") and "anthropic-api-key" in r}, (
            role_id
        )


def test_given_a_bedrock_stage_then_no_function_gets_a_model_key_and_no_key_secret_exists(deployed_bedrock):
    lam, cfn, physical = (
        deployed_bedrock["client"]("lambda"),
        deployed_bedrock["cfn"],
        deployed_bedrock["physical"],
    )
    for function_id in of_type(cfn, "AWS::Lambda::Function"):
        variables = lam.get_function_configuration(FunctionName=physical[function_id])["Environment"][
            "Variables"
        ]
        assert "ANTHROPIC_API_KEY_REF" not in variables, function_id
        if function_id in (
            "AgentWorkerFunction",
            "EvalJobsFunction",
        ):  # each refuses another provider's config
            assert variables["LOCKGATE_MODEL_PROVIDER"] == "bedrock", function_id
    # The template declares no secret for a model key, and none was stored for this stack
    declared = declared_names(deployed_bedrock)
    secrets = [name for logical_id, name in declared.items()
               if cfn["Resources"][logical_id]["Type"] == "AWS::SecretsManager::Secret"]  # fmt: skip
    assert secrets == ["lockgate-bedrock/approval-link-key"]
    stored = deployed_bedrock["client"]("secretsmanager").list_secrets()["SecretList"]
    assert not [s["Name"] for s in stored if s["Name"].startswith("lockgate-bedrock/")]


def test_given_a_bedrock_stage_then_lockgate_secrets_asks_for_no_model_key(deployed_bedrock):
    config = str(deployed_bedrock["config"])
    # When the operator lists the stack's secrets with its config
    listed = lockgate_cli(
        deployed_bedrock, "secrets", "list", "--stack", "lockgate-bedrock", "--config", config
    )
    # Then every webhook source is there and no model key is
    assert listed.returncode == 0, listed.stderr
    assert "model-key" not in listed.stdout
    assert all(source in listed.stdout for source in load_config(ROOT / "lockgate.toml").sources)
    # And storing one is refused in one line, storing nothing
    refused = lockgate_cli(deployed_bedrock, "secrets", "set", "model-key", "--stack", "lockgate-bedrock",
                           "--config", config, stdin="sk-ant-not-needed")  # fmt: skip
    assert refused.returncode == 2 and refused.stderr.startswith(
        "lockgate: no source 'model-key' in lockgate.toml"
    )
    assert len(refused.stderr.splitlines()) == 1 and "Traceback" not in refused.stderr
    stored = deployed_bedrock["client"]("secretsmanager").list_secrets()["SecretList"]
    assert not [
        s["Name"] for s in stored if "anthropic" in s["Name"] and s["Name"].startswith("lockgate-bedrock/")
    ]
