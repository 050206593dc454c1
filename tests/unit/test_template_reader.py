"""The template reader: short-form tags, intrinsics resolved for local use, and the LocalPlan.

Each test gives a small inline template and asserts what the local stack would build from it.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from lockgate_infra.local.template import LocalPlan, Route, Schedule, TemplateError, load_template

ENDPOINT = "http://127.0.0.1:4566"
QUEUE_URL = f"{ENDPOINT}/123456789012/lockgate-local-"


def read(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "template.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load_template(path)


def plan_of(tmp_path: Path, text: str, parameters: dict[str, str] | None = None) -> LocalPlan:
    return LocalPlan.from_template(read(tmp_path, text), parameters, base_dir=tmp_path, endpoint_url=ENDPOINT)


def function_with_env(variables: str, extra: str = "") -> str:
    """A template whose one function has ``variables`` (indented YAML) as its environment."""
    return f"""
Parameters:
  Stage: {{Type: String, Default: dev, AllowedValues: [dev, prod]}}
  Retries: {{Type: Number, Default: 3}}
Mappings:
  Sizes:
    dev: {{Memory: 256}}
    prod: {{Memory: 1024}}
Conditions:
  IsProd: !Equals [!Ref Stage, prod]
  NotProd: !Not [!Condition IsProd]
Resources:
  Inbox:
    Type: AWS::DynamoDB::Table
    Properties:
      KeySchema: [{{AttributeName: pk, KeyType: HASH}}]
      AttributeDefinitions: [{{AttributeName: pk, AttributeType: S}}]
  Work:
    Type: AWS::SQS::Queue
  Bodies:
    Type: AWS::S3::Bucket
  Topic:
    Type: AWS::SNS::Topic
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fn/
      Handler: app.handler
      Environment:
        Variables:
{textwrap.indent(textwrap.dedent(variables), " " * 10)}
{extra}"""


# ------------------------------------------------------------------ the YAML loader


def test_given_short_form_tags_when_loaded_then_they_are_the_long_form_intrinsics(tmp_path):
    template = read(
        tmp_path,
        """
        Resources: {}
        Outputs:
          ref: !Ref Thing
          sub: !Sub "${Thing}-x"
          sub_list: !Sub ["${a}", {a: !Ref Thing}]
          att: !GetAtt Thing.Arn
          att_dotted: !GetAtt Db.Endpoint.Address
          att_list: !GetAtt [Thing, Arn]
          join: !Join [",", [a, b]]
          if: !If [IsProd, 1, 2]
          eq: !Equals [a, b]
          not: !Not [!Condition IsProd]
          select: !Select [0, !Split [",", "a,b"]]
          find: !FindInMap [M, k, v]
          b64: !Base64 hi
          and: !And [!Condition A, !Condition B]
          version: 2012-10-17
        """,
    )
    out = template["Outputs"]
    assert out["ref"] == {"Ref": "Thing"}
    assert out["sub"] == {"Fn::Sub": "${Thing}-x"}
    assert out["sub_list"] == {"Fn::Sub": ["${a}", {"a": {"Ref": "Thing"}}]}
    assert out["att"] == {"Fn::GetAtt": ["Thing", "Arn"]}
    assert out["att_dotted"] == {"Fn::GetAtt": ["Db", "Endpoint.Address"]}
    assert out["att_list"] == {"Fn::GetAtt": ["Thing", "Arn"]}
    assert out["join"] == {"Fn::Join": [",", ["a", "b"]]}
    assert out["if"] == {"Fn::If": ["IsProd", 1, 2]}
    assert out["eq"] == {"Fn::Equals": ["a", "b"]}
    assert out["not"] == {"Fn::Not": [{"Condition": "IsProd"}]}
    assert out["select"] == {"Fn::Select": [0, {"Fn::Split": [",", "a,b"]}]}
    assert out["find"] == {"Fn::FindInMap": ["M", "k", "v"]}
    assert out["b64"] == {"Fn::Base64": "hi"}
    assert out["and"] == {"Fn::And": [{"Condition": "A"}, {"Condition": "B"}]}
    assert out["version"] == "2012-10-17"  # a string, as CloudFormation reads it, not a date


def test_given_a_file_that_is_not_a_template_when_loaded_then_it_is_refused(tmp_path):
    with pytest.raises(TemplateError, match="no Resources"):
        read(tmp_path, "just: text\n")


# ------------------------------------------------------------------ tables, queues, buckets


def test_given_a_table_with_gsi_stream_and_ttl_then_create_table_gets_them_and_ttl_is_planned(tmp_path):
    plan = plan_of(
        tmp_path,
        """
        Resources:
          Inbox:
            Type: AWS::DynamoDB::Table
            Properties:
              TableName: !Sub "${AWS::StackName}-inbox"
              BillingMode: PAY_PER_REQUEST
              AttributeDefinitions:
                - {AttributeName: pk, AttributeType: S}
                - {AttributeName: status, AttributeType: S}
              KeySchema: [{AttributeName: pk, KeyType: HASH}]
              GlobalSecondaryIndexes:
                - IndexName: by-status
                  KeySchema: [{AttributeName: status, KeyType: HASH}]
                  Projection: {ProjectionType: KEYS_ONLY}
              StreamSpecification: {StreamViewType: NEW_IMAGE}
              TimeToLiveSpecification: {AttributeName: ttl, Enabled: true}
              SSESpecification: {SSEEnabled: true, KMSMasterKeyId: !Ref SomeKeyNotInTheTemplate}
        """,
    )
    table = plan.tables["Inbox"]
    assert table.name == "lockgate-local-Inbox"  # the template's TableName is not used locally
    assert table.ttl_attribute == "ttl"
    assert table.create_kwargs == {
        "TableName": "lockgate-local-Inbox",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "status", "AttributeType": "S"},
        ],
        "BillingMode": "PAY_PER_REQUEST",
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "by-status",
                "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    }


def test_given_a_provisioned_table_and_a_simple_table_then_throughput_and_keys_are_filled_in(tmp_path):
    plan = plan_of(
        tmp_path,
        """
        Resources:
          Old:
            Type: AWS::DynamoDB::Table
            Properties:
              AttributeDefinitions:
                - {AttributeName: id, AttributeType: N}
                - {AttributeName: g, AttributeType: S}
              KeySchema: [{AttributeName: id, KeyType: HASH}]
              GlobalSecondaryIndexes:
                - IndexName: g
                  KeySchema: [{AttributeName: g, KeyType: HASH}]
                  Projection: {ProjectionType: ALL}
              TimeToLiveSpecification: {AttributeName: ttl, Enabled: false}
          Simple:
            Type: AWS::Serverless::SimpleTable
            Properties:
              PrimaryKey: {Name: key, Type: Number}
        """,
    )
    old = plan.tables["Old"].create_kwargs
    assert old["BillingMode"] == "PROVISIONED"
    assert old["ProvisionedThroughput"] == {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}
    assert old["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"] == {
        "ReadCapacityUnits": 5,
        "WriteCapacityUnits": 5,
    }
    assert plan.tables["Old"].ttl_attribute is None  # declared but disabled
    simple = plan.tables["Simple"].create_kwargs
    assert simple["KeySchema"] == [{"AttributeName": "key", "KeyType": "HASH"}]
    assert simple["AttributeDefinitions"] == [{"AttributeName": "key", "AttributeType": "N"}]
    assert simple["BillingMode"] == "PAY_PER_REQUEST"


def test_given_queues_with_a_redrive_policy_then_attributes_are_strings_and_the_dlq_is_a_logical_id(tmp_path):
    plan = plan_of(
        tmp_path,
        """
        Parameters:
          Timeout: {Type: String, Default: "60"}
        Mappings:
          Visibility: {"60": {Seconds: 360}}
        Resources:
          Work:
            Type: AWS::SQS::Queue
            Properties:
              VisibilityTimeout: !FindInMap [Visibility, !Ref Timeout, Seconds]
              MessageRetentionPeriod: 345600
              SqsManagedSseEnabled: true
              RedrivePolicy:
                deadLetterTargetArn: !GetAtt WorkDLQ.Arn
                maxReceiveCount: 5
          WorkDLQ:
            Type: AWS::SQS::Queue
          Ordered:
            Type: AWS::SQS::Queue
            Properties: {FifoQueue: true, ContentBasedDeduplication: true}
        """,
    )
    work = plan.queues["Work"]
    assert work.attributes == {"VisibilityTimeout": "360", "MessageRetentionPeriod": "345600"}
    assert (work.dead_letter_queue, work.max_receive_count) == ("WorkDLQ", 5)
    assert work.url == QUEUE_URL + "Work"
    assert work.arn == "arn:aws:sqs:us-east-1:123456789012:lockgate-local-Work"
    assert plan.queues["WorkDLQ"].dead_letter_queue is None
    ordered = plan.queues["Ordered"]
    assert ordered.name == "lockgate-local-Ordered.fifo"
    assert ordered.attributes == {"FifoQueue": "true", "ContentBasedDeduplication": "true"}


def test_given_a_redrive_policy_to_an_outside_arn_then_the_error_names_the_queue_and_property(tmp_path):
    with pytest.raises(TemplateError, match=r"Work\.Properties\.RedrivePolicy\.deadLetterTargetArn"):
        plan_of(
            tmp_path,
            """
            Resources:
              Work:
                Type: AWS::SQS::Queue
                Properties:
                  RedrivePolicy:
                    deadLetterTargetArn: arn:aws:sqs:us-east-1:1:elsewhere
                    maxReceiveCount: 3
            """,
        )


def test_given_a_bucket_then_its_local_name_is_lower_case(tmp_path):
    plan = plan_of(tmp_path, "Resources:\n  BodyBucket:\n    Type: AWS::S3::Bucket\n")
    assert plan.buckets["BodyBucket"].name == "lockgate-local-bodybucket"


def test_given_a_resource_under_a_false_condition_then_it_is_not_planned(tmp_path):
    text = """
        Parameters:
          Stage: {Type: String, Default: dev}
        Conditions:
          IsProd: !Equals [!Ref Stage, prod]
        Resources:
          Archive:
            Type: AWS::S3::Bucket
            Condition: IsProd
        """
    assert plan_of(tmp_path, text).buckets == {}
    assert set(plan_of(tmp_path, text, {"Stage": "prod"}).buckets) == {"Archive"}


# ------------------------------------------------------------------ environment values


def test_given_refs_to_local_resources_then_env_gets_local_names_and_urls(tmp_path):
    plan = plan_of(
        tmp_path,
        function_with_env(
            """
            TABLE: !Ref Inbox
            QUEUE_URL: !Ref Work
            QUEUE_ARN: !GetAtt Work.Arn
            QUEUE_NAME: !GetAtt Work.QueueName
            BUCKET: !Ref Bodies
            TABLE_ARN: !GetAtt Inbox.Arn
            """
        ),
    )
    assert plan.functions["Fn"].environment == {
        "TABLE": "lockgate-local-Inbox",
        "QUEUE_URL": QUEUE_URL + "Work",
        "QUEUE_ARN": "arn:aws:sqs:us-east-1:123456789012:lockgate-local-Work",
        "QUEUE_NAME": "lockgate-local-Work",
        "BUCKET": "lockgate-local-bodies",
        "TABLE_ARN": "arn:aws:dynamodb:us-east-1:123456789012:table/lockgate-local-Inbox",
    }


def test_given_parameters_mappings_and_conditions_then_env_follows_defaults_and_overrides(tmp_path):
    text = function_with_env(
        """
        STAGE: !Ref Stage
        RETRIES: !Ref Retries
        MEMORY: !FindInMap [Sizes, !Ref Stage, Memory]
        MODE: !If [IsProd, strict, relaxed]
        DEBUG: !If [NotProd, "yes", !Ref AWS::NoValue]
        SUB: !Sub "${Inbox}/${AWS::Region}/${Stage}/${!Literal}"
        SUB_VARS: !Sub ["${Name}-${Arn}", {Name: !Ref Work, Arn: !GetAtt Work.Arn}]
        JOINED: !Join ["-", [a, !Ref Stage, !Select [1, !Split [",", "x,y"]]]]
        ENCODED: !Base64 hi
        ENABLED: true
        PLAIN: 7
        """
    )
    env = plan_of(tmp_path, text).functions["Fn"].environment
    assert env["STAGE"] == "dev"
    assert env["RETRIES"] == "3"
    assert env["MEMORY"] == "256"
    assert env["MODE"] == "relaxed"
    assert env["DEBUG"] == "yes"
    assert env["SUB"] == "lockgate-local-Inbox/us-east-1/dev/${Literal}"
    assert env["SUB_VARS"] == f"{QUEUE_URL}Work-arn:aws:sqs:us-east-1:123456789012:lockgate-local-Work"
    assert env["JOINED"] == "a-dev-y"
    assert env["ENCODED"] == "aGk="
    assert (env["ENABLED"], env["PLAIN"]) == ("true", "7")

    prod = plan_of(tmp_path, text, {"Stage": "prod"}).functions["Fn"].environment
    assert (prod["STAGE"], prod["MEMORY"], prod["MODE"]) == ("prod", "1024", "strict")
    assert "DEBUG" not in prod  # AWS::NoValue removes the variable


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "!Ref Topic",
            r"Fn\.Properties\.Environment\.Variables\.X: cannot resolve Ref Topic \(AWS::SNS::Topic\)",
        ),
        ("!GetAtt Inbox.StreamArn", r"Variables\.X.*GetAtt Inbox\.StreamArn"),
        ("!Ref Nowhere", r"Variables\.X: Ref to unknown name 'Nowhere'"),
        ('!Sub "${Topic}"', r"Variables\.X.*Ref Topic"),
        ("!ImportValue shared", r"Variables\.X.*Fn::ImportValue is not supported"),
        ("!FindInMap [Sizes, qa, Memory]", r"Variables\.X.*no mapping Sizes\.qa\.Memory"),
        ("!If [Unknown, a, b]", r"unknown condition 'Unknown'"),
    ],
)
def test_given_an_env_value_the_local_stack_cannot_resolve_then_the_error_names_where_it_is(
    tmp_path, value, message
):
    with pytest.raises(TemplateError, match=message):
        plan_of(tmp_path, function_with_env(f"X: {value}"))


def test_given_bad_parameters_then_the_plan_is_refused(tmp_path):
    text = function_with_env("STAGE: !Ref Stage")
    with pytest.raises(TemplateError, match="unknown template parameter"):
        plan_of(tmp_path, text, {"Nope": "1"})
    with pytest.raises(TemplateError, match=r"'qa' is not one of"):
        plan_of(tmp_path, text, {"Stage": "qa"})
    required = text.replace(
        "Stage: {Type: String, Default: dev, AllowedValues: [dev, prod]}", "Stage: {Type: String}"
    )
    with pytest.raises(TemplateError, match="parameter Stage has no Default"):
        plan_of(tmp_path, required)


# ------------------------------------------------------------------ functions and their events


def test_given_globals_then_the_function_merges_environment_and_inherits_settings(tmp_path):
    plan = plan_of(
        tmp_path,
        """
        Globals:
          Function:
            Timeout: 20
            MemorySize: 256
            Handler: app.handler
            Environment:
              Variables: {SERVICE: lockgate, LEVEL: INFO}
        Resources:
          Receiver:
            Type: AWS::Serverless::Function
            Properties:
              CodeUri: functions/receiver/
              Environment:
                Variables: {LEVEL: DEBUG, ONLY_HERE: "1"}
          Worker:
            Type: AWS::Serverless::Function
            Properties:
              CodeUri: functions/worker
              Handler: pkg.main.run
              Timeout: 300
        """,
    )
    receiver, worker = plan.functions["Receiver"], plan.functions["Worker"]
    assert receiver.environment == {"SERVICE": "lockgate", "LEVEL": "DEBUG", "ONLY_HERE": "1"}
    assert (receiver.timeout, receiver.memory_mb, receiver.name) == (20, 256, "lockgate-local-Receiver")
    assert receiver.code_dir == (tmp_path / "functions" / "receiver").resolve()
    assert receiver.module_path == receiver.code_dir / "app.py"
    assert receiver.handler_name == "handler"
    assert worker.environment == {"SERVICE": "lockgate", "LEVEL": "INFO"}
    assert worker.timeout == 300
    assert worker.module_path == worker.code_dir / "pkg" / "main.py"
    assert worker.handler_name == "run"


def test_given_http_sqs_stream_and_schedule_events_then_routes_sources_and_schedules_are_planned(tmp_path):
    plan = plan_of(
        tmp_path,
        """
        Parameters:
          Concurrency: {Type: Number, Default: 5}
        Resources:
          Inbox:
            Type: AWS::SQS::Queue
          Approvals:
            Type: AWS::DynamoDB::Table
            Properties:
              KeySchema: [{AttributeName: pk, KeyType: HASH}]
              AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
              StreamSpecification: {StreamViewType: NEW_AND_OLD_IMAGES}
          Receiver:
            Type: AWS::Serverless::Function
            Properties:
              CodeUri: r/
              Handler: app.handler
              Events:
                Webhook: {Type: HttpApi, Properties: {Path: "/webhooks/{source}", Method: post}}
                Page: {Type: HttpApi, Properties: {Path: "/approvals/{id}", Method: GET}}
                Fallback: {Type: HttpApi}
                Alerts: {Type: SNS, Properties: {Topic: arn:aws:sns:us-east-1:1:t}}
          Worker:
            Type: AWS::Serverless::Function
            Properties:
              CodeUri: w/
              Handler: app.handler
              Events:
                Inbox:
                  Type: SQS
                  Properties:
                    Queue: !GetAtt Inbox.Arn
                    BatchSize: 5
                    FunctionResponseTypes: [ReportBatchItemFailures]
                    ScalingConfig: {MaximumConcurrency: !Ref Concurrency}
                Decisions:
                  Type: DynamoDB
                  Properties: {Stream: !GetAtt Approvals.StreamArn, StartingPosition: TRIM_HORIZON}
                Sweep:
                  Type: ScheduleV2
                  Properties: {ScheduleExpression: rate(5 minutes), Input: '{"job": "sweep"}'}
          Digest:
            Type: AWS::Scheduler::Schedule
            Properties:
              ScheduleExpression: cron(0 8 * * ? *)
              FlexibleTimeWindow: {Mode: "OFF"}
              Target:
                Arn: !GetAtt Worker.Arn
                RoleArn: arn:aws:iam::1:role/x
                Input: '{"job": "digest"}'
        """,
    )
    assert plan.routes == (
        Route("POST", "/webhooks/{source}", "Receiver"),
        Route("GET", "/approvals/{id}", "Receiver"),
        Route("ANY", "$default", "Receiver"),
    )
    assert [r.route_key for r in plan.routes] == [
        "POST /webhooks/{source}",
        "GET /approvals/{id}",
        "$default",
    ]
    (source,) = plan.sqs_sources
    assert (source.function, source.queue, source.batch_size) == ("Worker", "Inbox", 5)
    assert source.report_batch_item_failures is True
    assert source.maximum_concurrency == 5
    (stream,) = plan.stream_sources
    assert (stream.function, stream.table, stream.starting_position) == (
        "Worker",
        "Approvals",
        "TRIM_HORIZON",
    )
    assert plan.schedules == (
        Schedule(
            "WorkerSweep", "rate(5 minutes)", "Worker", '{"job": "sweep"}', origin="Worker.Events.Sweep"
        ),
        Schedule("Digest", "cron(0 8 * * ? *)", "Worker", '{"job": "digest"}', origin="Digest"),
    )
    assert plan.ignored == ("Receiver.Events.Alerts (SNS)",)


def test_given_no_schedules_or_streams_then_the_plan_simply_has_none(tmp_path):
    plan = plan_of(tmp_path, function_with_env("A: b"))
    assert (plan.schedules, plan.stream_sources, plan.sqs_sources, plan.routes) == ((), (), (), ())


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ("Q: {Type: SQS, Properties: {Queue: arn:aws:sqs:us-east-1:1:q}}", r"Fn\.Events\.Q\.Queue"),
        ("Q: {Type: SQS, Properties: {Queue: !GetAtt Inbox.Arn}}", r"Fn\.Events\.Q: Inbox is not a queue"),
        (
            "H: {Type: HttpApi, Properties: {Path: /x, Method: GET, PayloadFormatVersion: '1.0'}}",
            "only builds 2.0",
        ),
        (
            "A: {Type: HttpApi, Properties: {Path: /x, Method: GET}}\n"
            "B: {Type: HttpApi, Properties: {Path: /x, Method: GET}}",
            r"route GET /x is declared by both Fn and Fn",
        ),
    ],
)
def test_given_an_event_the_local_stack_cannot_run_then_the_error_names_it(tmp_path, events, message):
    text = function_with_env("A: b", extra="      Events:\n" + textwrap.indent(events, " " * 8))
    with pytest.raises(TemplateError, match=message):
        plan_of(tmp_path, text)


def test_given_a_function_whose_code_is_not_a_local_folder_then_the_error_names_code_uri(tmp_path):
    with pytest.raises(TemplateError, match=r"Fn\.Properties\.CodeUri"):
        plan_of(
            tmp_path,
            """
            Resources:
              Fn:
                Type: AWS::Serverless::Function
                Properties: {CodeUri: {Bucket: b, Key: k}, Handler: app.handler}
            """,
        )
