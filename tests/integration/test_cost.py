"""`lockgate cost`: usage measured from the example pipeline on moto, priced from the dated table."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from lockgate.config import parse_config
from lockgate_infra.cli.main import main
from lockgate_infra.cost.bill import Assumptions, _ticks_per_month, bill
from lockgate_infra.cost.meter import FunctionUsage, Usage, measure
from lockgate_infra.cost.model_dollars import model_usd, priced_as
from lockgate_infra.cost.prices import PRICES
from tests.support import Aws


def test_given_hand_made_usage_then_each_line_is_units_times_the_published_price() -> None:
    # Given one event: one 1,769 MB (one whole vCPU) worker invocation of 0.5 s own compute, 10 AWS
    # calls, 2 model calls
    usage = Usage(events=1, posts=1, write_units=10, read_units=4, sqs_requests=3, emails=1, model_calls=2)
    usage.functions = {"worker": FunctionUsage(1769, invocations=1, own_seconds=0.5, aws_calls=10)}
    # When billed with 10 ms per call and 3 s per model call
    result = bill(usage, Assumptions(call_ms=10, model_seconds=3))
    # Then compute is (0.5 + 0.1 + 6) s at 1769/1024 GB, and every other line is units times price
    gb = 1769 / 1024
    assert result.per_event["Lambda compute (GB-s)"] == pytest.approx(6.6 * gb * PRICES.lambda_gb_second)
    assert result.per_event["DynamoDB writes"] == pytest.approx(10 * PRICES.dynamodb_write_unit)
    assert result.per_event["DynamoDB reads"] == pytest.approx(4 * PRICES.dynamodb_read_unit)
    assert result.per_event["SQS requests"] == pytest.approx(3 * PRICES.sqs_request)
    assert result.per_event["SES emails"] == pytest.approx(PRICES.ses_email)
    assert result.total(1_000_000) == pytest.approx(
        1_000_000 * sum(result.per_event.values()) + sum(result.fixed.values())
    )


def test_a_smaller_worker_stretches_its_cpu_and_a_batch_waits_once_for_its_records() -> None:
    # Given the same worker at 512 MB running five records side by side (concurrency 10)
    usage = Usage(events=5, model_calls=10)
    usage.functions = {
        "worker": FunctionUsage(512, concurrency=10, invocations=5, own_seconds=0.5, aws_calls=50)
    }
    # When billed for five records per batch, and for one
    five = bill(usage, Assumptions(call_ms=10, model_seconds=3, records_per_batch=5))
    one = bill(usage, Assumptions(call_ms=10, model_seconds=3, records_per_batch=1))
    # Then CPU takes 1769/512 times as long; the batch waits once, not five times; one request
    cpu = 0.5 * 1769 / 512
    assert five.per_event["Lambda compute (GB-s)"] == pytest.approx(
        (cpu + (0.5 + 30) / 5) / 5 * 0.5 * PRICES.lambda_gb_second
    )
    assert one.per_event["Lambda compute (GB-s)"] == pytest.approx(
        (cpu + 0.5 + 30) / 5 * 0.5 * PRICES.lambda_gb_second
    )
    assert five.per_event["Lambda requests"] == pytest.approx(PRICES.lambda_request / 5)


@pytest.mark.parametrize(
    ("expression", "ticks"),
    [
        ("rate(5 minutes)", 8640),
        ("rate(1 hour)", 720),
        ("rate(1 day)", 30),
        ("cron(17 6 ? * MON-FRI *)", 30 / 7 * 5),
    ],
)
def test_schedule_expressions_become_runs_per_month(expression: str, ticks: float) -> None:
    assert _ticks_per_month(expression) == pytest.approx(ticks)


def test_given_the_example_traffic_when_measured_then_every_function_and_store_shows_up() -> None:
    # Given a few example events through the composed functions on moto, without faults
    usage = measure(events=6, seed=2)
    # Then the receiver ran for every HTTP request and stored with two calls each at most
    receiver, worker = usage.functions["receiver"], usage.functions["worker"]
    assert receiver.invocations == usage.posts >= 6
    assert receiver.aws_calls <= 2 * receiver.invocations
    # And the worker's runs wrote to DynamoDB, sent email and called the model
    assert worker.invocations >= 1 and worker.aws_calls > receiver.aws_calls
    assert usage.write_units > 0 and usage.read_units > 0 and usage.model_calls > 0 and usage.model_usd > 0
    assert usage.sqs_requests >= usage.functions["worker"].invocations


def test_the_cli_prints_a_month_at_the_volumes_asked() -> None:
    out, err = io.StringIO(), io.StringIO()
    from contextlib import redirect_stderr, redirect_stdout

    with redirect_stdout(out), redirect_stderr(err):
        status = main(["cost", "--events", "1000", "--events", "50000", "--sample", "4"])
    assert status == 0
    assert err.getvalue() == "measuring 4 example events on an embedded stack…\n"  # progress, not the report
    report = out.getvalue()
    assert "| 1,000 events/month | 50,000 events/month |" in report
    assert "**AWS total**" in report and "model (tokens × Anthropic API prices)" in report


def test_a_refused_conditional_write_is_metered_as_the_call_and_the_write_it_costs(aws: Aws) -> None:
    from botocore.exceptions import ClientError

    from lockgate_infra.cost.meter import Meter

    # Given the meter, and a function whose second put of one item is refused by its condition
    usage = Usage(events=1, functions={"receiver": FunctionUsage(512)})
    meter = Meter(usage)
    db = aws.client("dynamodb")
    item = {"pk": {"S": "delivery#1"}, "sk": {"S": "x"}, "body": {"S": "b" * 1500}}

    def receive() -> None:
        db.put_item(TableName=aws.inbox_table, Item=item, ConditionExpression="attribute_not_exists(pk)")

    with meter.installed():
        timed = meter.timed("receiver", receive)
        timed()
        with pytest.raises(ClientError):
            timed()
    # Then both calls count, and both writes (2 KB each): DynamoDB bills the refused one too
    assert usage.functions["receiver"].aws_calls == 2
    assert usage.operations["dynamodb.PutItem"] == 2
    assert usage.write_units == 4


def test_given_the_same_calls_then_each_provider_prices_them_at_its_own_rates() -> None:
    # Given one measured day's tokens and dollars per model, as the stub's run records price them
    tokens = {"input_tokens": 20_000, "output_tokens": 3_000, "cache_read_input_tokens": 50_000}
    recorded = {"claude-sonnet-5-5": {**tokens, "usd": 0.075}}

    def dollars(provider: dict[str, object]) -> float:
        priced = priced_as(parse_config({"provider": provider}))[0]
        return model_usd(recorded, priced, priced_as(parse_config({}))[0])

    # When priced at Anthropic's API, Bedrock's global endpoint and a regional inference profile
    anthropic = dollars({"name": "anthropic"})
    global_ = dollars(
        {
            "name": "bedrock",
            "bedrock_models": {"claude-sonnet-5-5": "global.anthropic.claude-sonnet-5-5-v1:0"},
        }
    )
    regional = dollars(
        {"name": "bedrock", "bedrock_models": {"claude-sonnet-5-5": "eu.anthropic.claude-sonnet-5-5-v1:0"}}
    )
    # Then global is Anthropic's price and regional 10% more
    assert anthropic == global_ == pytest.approx(0.075)
    assert regional == pytest.approx(1.1 * global_)


def test_the_cli_names_the_provider_whose_prices_the_model_line_is_at(tmp_path: Path) -> None:
    from contextlib import redirect_stderr, redirect_stdout

    # Given a deployment config on a Bedrock regional inference profile
    config = tmp_path / "lockgate.toml"
    config.write_text(
        '[provider]\nname = "bedrock"\n[provider.bedrock_models]\n'
        + "".join(f'"{m}" = "us.anthropic.{m}-v1:0"\n' for m in ("claude-sonnet-5-5", "claude-haiku-5-5")),
        encoding="utf-8",
    )
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        status = main(["cost", "--events", "1000", "--sample", "2", "--config", str(config)])
    # Then the model line is at Bedrock's prices, and dollars were counted
    line = next(
        x for x in out.getvalue().splitlines() if x.startswith("| model (tokens × Amazon Bedrock prices)")
    )
    assert status == 0 and float(line.split("$")[1].split(" ")[0]) > 0
