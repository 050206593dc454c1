"""Your own offline model, ``package.module:factory``, drives `lockgate local` and `lockgate eval`."""

from __future__ import annotations

import json
import logging
import shlex
import urllib.request
from pathlib import Path

import pytest

from lockgate_infra.cli.main import main
from lockgate_infra.local.model import ModelChoiceError, local_model
from lockgate_infra.stub.scripted import ScriptedModel, when

HERE = "tests.integration.test_your_model"


def where_is_my_order() -> ScriptedModel:
    """A scripted model for the shop's support-inbox task: read the email, look up its order, reply."""
    return ScriptedModel(
        "support-inbox",
        when(r"message_id=(?P<message>[^\s,.]+)").call("read_email", message_id="{message}"),
        when(r"(?P<order>A-\d{4})", after="read_email").call("lookup_order", order_id="{order}"),
        when(r'"from":\s*"(?P<sender>[^"]+)"', after="read_email").call(
            "send_email", to="{sender}", subject="Your order", body="Your order {order} is on its way."
        ),
        finish="Replied about {order}.",
        extract={"order_id": "{order}", "intent": "where_is_my_order", "amount": None},
    )


def not_a_model() -> str:
    return "a string"


def broken() -> ScriptedModel:
    raise RuntimeError("no rules file")


def ask(base_url: str, body: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(  # noqa: S310 - the local stub on 127.0.0.1
        f"{base_url}/v1/messages",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "x-api-key": "k", "anthropic-version": "2023-06-01"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        return json.loads(response.read())  # type: ignore[no-any-return]


def test_given_a_factory_then_the_local_stand_in_answers_with_your_model() -> None:
    with local_model(f"{HERE}:where_is_my_order", {}) as chosen:
        reply = ask(
            chosen.environment["ANTHROPIC_BASE_URL"],
            {
                "model": "claude-sonnet-5-5",
                "max_tokens": 100,
                "tools": [{"name": "read_email", "input_schema": {"type": "object", "properties": {}}}],
                "messages": [{"role": "user", "content": "New customer email: message_id=m-1."}],
            },
        )

    assert chosen.description.startswith(f"your model {HERE}:where_is_my_order (a local Messages API stub at")
    assert [(b["name"], b["input"]) for b in reply["content"] if b["type"] == "tool_use"] == [  # type: ignore[index, union-attr]
        ("read_email", {"message_id": "m-1"})
    ]


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("triage.models", "unknown model 'triage.models'; choose one of demo, gullible, claude, or your own"),
        ("no_such_package.models:factory", "cannot import no_such_package.models"),
        (f"{HERE}:missing", f"{HERE} has no function missing"),
        (f"{HERE}:not_a_model", "not_a_model() returned str, not a model"),
        (f"{HERE}:broken", "broken() failed: RuntimeError: no rules file"),
        ("a b:c", "is not package.module:factory"),
    ],
)
def test_given_a_spec_that_names_no_model_then_one_line_says_what_is_wrong(spec: str, says: str) -> None:
    with pytest.raises(ModelChoiceError) as refused, local_model(spec, {}):
        pass

    assert says in str(refused.value)
    assert "\n" not in str(refused.value)


def test_lockgate_local_with_a_bad_model_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["local", "--port", "0", "--model", f"{HERE}:missing"])

    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().count("\n") == 0
    assert f"{HERE} has no function missing" in err


def test_lockgate_eval_runs_a_task_with_your_model(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = f"eval support-inbox --model {HERE}:where_is_my_order --only 'where is my order' --runs 1"
    code = main([*shlex.split(argv), "--results", str(tmp_path)])

    out = capsys.readouterr().out
    (result,) = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert code in (0, 1), out  # it ran and was scored (2 would be: could not run)
    assert result["model"] == f"{HERE}:where_is_my_order"
    assert result["model_calls"] >= 3  # read, look up and reply, then finish: the script answered
    assert [c["name"] for c in result["cases"]] == ["where is my order"]


def test_the_stand_in_logs_a_warning_when_a_model_answers_a_task_it_was_not_written_for(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Listen on the stub's own logger, at its own level: an earlier test in this process may have
    # set a level on, or stopped propagation from, the "lockgate" logger above it.
    stub_log = logging.getLogger("lockgate.stub")
    stub_log.addHandler(caplog.handler)
    with (
        caplog.at_level(logging.WARNING, logger="lockgate.stub"),
        local_model(f"{HERE}:where_is_my_order", {}) as chosen,
    ):
        reply = ask(
            chosen.environment["ANTHROPIC_BASE_URL"],
            {
                "model": "claude-sonnet-5-5",
                "max_tokens": 100,
                "tools": [{"name": "read_issue", "input_schema": {"type": "object", "properties": {}}}],
                "messages": [{"role": "user", "content": "Issue acme/app#1 was opened."}],
            },
        )

    assert reply["stop_reason"] == "end_turn"
    assert "was written for the tools read_email" in reply["content"][0]["text"]  # type: ignore[index]
    stub_log.removeHandler(caplog.handler)
    assert "offline model asked to run a task it was not written for" in caplog.text


def test_the_demo_model_brings_each_other_workflows_own_so_every_example_task_has_its_model() -> None:
    # Given the checkout's lockgate.toml (the shop, triage and tickets workflows)
    config = Path(__file__).resolve().parents[2] / "lockgate.toml"
    # When the local stack's default model is started for it
    with local_model("demo", {}, config_path=config) as chosen:
        reply = ask(
            chosen.environment["ANTHROPIC_BASE_URL"],
            {
                "model": "claude-sonnet-5-5",
                "max_tokens": 100,
                "tools": [
                    {"name": "tickets__get_ticket", "input_schema": {"type": "object", "properties": {}}}
                ],
                "messages": [{"role": "user", "content": "Ticket T-9 was opened: ticket=T-9"}],
            },
        )
    # Then it says so, and the tickets task is answered by the tickets workflow's own scripted model
    assert chosen.name == "demo"
    assert chosen.description.startswith("offline demo model, with the triage and tickets workflows' own (")
    assert [(b["name"], b["input"]) for b in reply["content"] if b["type"] == "tool_use"] == [  # type: ignore[index, union-attr]
        ("tickets__get_ticket", {"ticket_id": "T-9"})
    ]
    # And a workflow already named is not added twice
    with local_model(["demo", "triage.model:scripted_model"], {}, config_path=config) as both:
        assert both.description.startswith(
            "offline demo model, with the tickets workflow's own and your model triage.model:scripted_model ("
        )
