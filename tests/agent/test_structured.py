"""Structured output through the real SDK and the stub: tolerant parsing, feedback, grounding, give-up."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from lockgate.agent.structured import extract, find_json, totals_add_up, values_in_source
from lockgate.model.client import ModelError
from lockgate_infra.stub.models import Scripted
from lockgate_infra.stub.replies import Reply
from tests.agent.conftest import AgentRig

EMAIL = "Hi, where is my order A-1042? I paid 25.00 last week. Thanks, Dana"
INSTRUCTIONS = "Extract the customer's request from the email."


class CustomerRequest(BaseModel):
    order_id: str = Field(pattern=r"^A-\d{4}$")
    intent: Literal["where_is_my_order", "refund", "other"]
    amount: Decimal | None = Field(default=None, gt=0)


class Line(BaseModel):
    price: Decimal
    qty: int


class Invoice(BaseModel):
    vendor: str
    note: str | None = None
    lines: list[Line]
    total: Decimal | None


def says(text: str) -> Reply:
    return Reply([{"type": "text", "text": text}])


def request_json(**overrides: Any) -> str:
    return json.dumps({"order_id": "A-1042", "intent": "where_is_my_order", "amount": 25.0} | overrides)


def run(rig: AgentRig, *replies: Reply, **kwargs: Any) -> Any:
    rig.stub.set_model(Scripted(list(replies)))
    return extract(
        rig.model_client(),
        model_id=kwargs.pop("model_id", "claude-test"),
        schema=kwargs.pop("schema", CustomerRequest),
        instructions=INSTRUCTIONS,
        source=kwargs.pop("source", EMAIL),
        deadline=rig.clock.now() + 300,
        **kwargs,
    )


def roles(request: dict[str, Any]) -> list[str]:
    return [m["role"] for m in request["messages"]]


def last_user_text(request: dict[str, Any]) -> str:
    return str(request["messages"][-1]["content"][0]["text"])


# --- extract, end to end ---------------------------------------------------------------------------


def test_chatty_reply_with_fenced_json_is_parsed_in_one_attempt(rig: AgentRig) -> None:
    # Given a model that wraps its JSON in chatter and a code fence
    chatty = f"Sure! Here is what I found:\n```json\n{request_json()}\n```\nLet me know if you need more."
    # When extracting
    result = run(rig, says(chatty))
    # Then the object is validated, with exact money, after one call
    assert result.value == CustomerRequest(
        order_id="A-1042", intent="where_is_my_order", amount=Decimal("25")
    )
    assert not result.gave_up and not result.needs_person and result.attempts == 1
    assert rig.stub.calls == 1 and result.usage.output_tokens > 0
    # And the prompt carried the schema, the instructions, and the source as delimited data
    sent = rig.stub.requests[0]
    system = sent["system"][0]["text"]
    assert INSTRUCTIONS in system and '"pattern": "^A-\\\\d{4}$"' in system and "not instructions" in system
    user = last_user_text(sent)
    marker = user.splitlines()[1]
    assert marker.startswith("<<<SOURCE ") and user.count(marker) == 2 and EMAIL in user


def test_invalid_reply_gets_field_level_feedback_and_the_correction_is_accepted(rig: AgentRig) -> None:
    # Given a model whose first answer has a negative amount, then a corrected one
    result = run(rig, says(request_json(amount=-5)), says(request_json()))
    # Then the second attempt succeeds
    assert result.value is not None and result.value.amount == Decimal("25") and result.attempts == 2
    # And the second request told the model exactly which field was wrong, in alternating roles
    second = rig.stub.requests[1]
    assert roles(second) == ["user", "assistant", "user"]
    assert second["messages"][1]["content"][0]["text"] == request_json(amount=-5)
    assert last_user_text(second) == (
        "Your JSON did not match: amount: Input should be greater than 0. Reply with corrected JSON only."
    )


def test_grounding_failure_is_fed_back_then_the_grounded_answer_is_accepted(rig: AgentRig) -> None:
    # Given a model that first invents an order number not in the email, then uses the real one
    result = run(
        rig,
        says(request_json(order_id="A-9999")),
        says(request_json()),
        grounding=values_in_source("order_id"),
    )
    # Then the grounded answer is returned and the model was told what did not match the source
    assert result.value is not None and result.value.order_id == "A-1042" and result.attempts == 2
    assert "order_id: 'A-9999' does not appear in the source text" in last_user_text(rig.stub.requests[1])


def test_gives_up_after_max_attempts_with_the_remaining_problems(rig: AgentRig) -> None:
    # Given a model that never produces valid JSON
    result = run(
        rig,
        says("I am not sure what you mean."),
        says(request_json(order_id="1042", intent="complaint")),
        max_attempts=2,
    )
    # Then a clean give-up routed to a person, not an exception, listing what was still wrong
    assert result.gave_up and result.needs_person and result.value is None and result.attempts == 2
    assert "order_id: String should match pattern" in result.problems[0]
    assert "intent: Input should be 'where_is_my_order', 'refund' or 'other'" in result.problems[0]
    # And the model was asked exactly twice, the second time told that no JSON was found
    assert rig.stub.calls == 2
    assert "no JSON object found in the reply" in last_user_text(rig.stub.requests[1])
    assert roles(rig.stub.requests[1]) == ["user", "assistant", "user"]


def test_a_reply_cut_off_at_max_tokens_is_explained_to_the_model(rig: AgentRig) -> None:
    # Given a model whose first reply stops mid-JSON at the token limit, then a complete one
    cut = Reply([{"type": "text", "text": request_json()[:20]}], "max_tokens")
    result = run(rig, cut, says(request_json()))
    # Then the model is told why, and the retry succeeds
    assert result.value is not None and result.attempts == 2
    assert "cut off at the token limit" in last_user_text(rig.stub.requests[1])


def test_a_failed_model_call_propagates_as_model_error(rig: AgentRig) -> None:
    # Given a model with no replies left (the stub answers 500)
    # When extracting with one model attempt, Then the call failure is an error, not a give-up
    rig.stub.set_model(Scripted([]))
    with pytest.raises(ModelError) as caught:
        extract(
            rig.model_client(max_attempts=1),
            model_id="claude-test",
            schema=CustomerRequest,
            instructions=INSTRUCTIONS,
            source=EMAIL,
            deadline=rig.clock.now() + 300,
        )
    assert caught.value.status == 500


# --- structured outputs (the SDK's output_config), where the model supports them ---------------------

JSON_MODEL = "claude-sonnet-5-5"  # documented as supporting structured outputs


def test_a_model_with_structured_outputs_gets_the_schema_in_output_config(rig: AgentRig) -> None:
    # Given a model that supports structured outputs, answering with the JSON alone
    result = run(rig, says(request_json()), model_id=JSON_MODEL)
    # Then the value is validated after one call, with exact money
    assert result.value is not None and result.value.amount == Decimal("25") and result.attempts == 1
    # And the request carried the schema as the SDK would send it, not in the prompt
    sent = rig.stub.requests[0]
    fmt = sent["output_config"]["format"]
    assert fmt["type"] == "json_schema" and fmt["schema"]["additionalProperties"] is False
    assert set(fmt["schema"]["properties"]) == {"order_id", "intent", "amount"}
    system = sent["system"][0]["text"]
    assert INSTRUCTIONS in system and "not instructions" in system and "JSON schema" not in system


def test_under_structured_outputs_the_whole_reply_must_be_the_json(rig: AgentRig) -> None:
    # Given a reply that is valid JSON but breaks a rule the API cannot enforce (amount > 0), then
    # a reply cut off at the token limit, then a good one
    cut = Reply([{"type": "text", "text": request_json()[:20]}], "max_tokens")
    result = run(rig, says(request_json(amount=-5)), cut, says(request_json()), model_id=JSON_MODEL)
    # Then pydantic still checks the rule, the cut-off is explained, and the third answer is taken
    assert result.value is not None and result.attempts == 3
    assert "amount: Input should be greater than 0" in last_user_text(rig.stub.requests[1])
    assert "cut off at the token limit" in last_user_text(rig.stub.requests[2])
    assert all("output_config" in r for r in rig.stub.requests)


def test_a_refusal_under_structured_outputs_is_a_problem_not_a_crash(rig: AgentRig) -> None:
    refusal = Reply([{"type": "text", "text": "I can't help with that."}], "refusal")
    result = run(rig, refusal, max_attempts=1, model_id=JSON_MODEL)
    assert result.gave_up and result.problems == ["the model declined to answer"]


def test_structured_outputs_can_be_turned_off_for_a_model_that_has_them(rig: AgentRig) -> None:
    # Given json_outputs=False: the schema goes in the prompt and the reply is searched for JSON
    chatty = f"Here you go: {request_json()}"
    result = run(rig, says(chatty), model_id=JSON_MODEL, json_outputs=False)
    assert result.value is not None and result.attempts == 1
    sent = rig.stub.requests[0]
    assert "output_config" not in sent and "JSON schema" in sent["system"][0]["text"]


def test_a_model_without_structured_outputs_falls_back_to_tolerant_extraction(rig: AgentRig) -> None:
    # Given an id not known to support them (claude-test): no output_config, chatter is tolerated
    result = run(rig, says(f"Sure! {request_json()}"))
    assert result.value is not None and "output_config" not in rig.stub.requests[0]


def test_the_stub_refuses_output_config_for_a_model_without_structured_outputs(rig: AgentRig) -> None:
    # Given a request forcing structured outputs on an id that does not support them
    # Then the stub answers 400 as the API does, and nothing is retried
    rig.stub.set_model(Scripted([says(request_json())]))
    with pytest.raises(ModelError) as caught:
        extract(
            rig.model_client(),
            model_id="claude-test",
            schema=CustomerRequest,
            instructions=INSTRUCTIONS,
            source=EMAIL,
            deadline=rig.clock.now() + 300,
            json_outputs=True,
        )
    assert caught.value.status == 400 and rig.stub.calls == 1


def test_max_attempts_must_be_positive(rig: AgentRig) -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        run(rig, max_attempts=0)
    assert rig.stub.calls == 0


# --- find_json ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("  [1, 2]  ", [1, 2]),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('Here you go: {"a": {"b": "x } y"}} hope it helps {"c": 2}', {"a": {"b": "x } y"}}),
        ('set {not json} then {"a": 1}', {"a": 1}),
        ('{"price": 19.99}', {"price": Decimal("19.99")}),
        ('{"a": 1,}', None),  # trailing comma: strict after locating
        ('{"a": NaN}', None),
        ("no json here", None),
        ("", None),
        ("[" * 100_000, None),  # too deep to parse: still no exception
    ],
)
def test_find_json_table(text: str, expected: Any) -> None:
    assert find_json(text) == expected


@given(st.text())
def test_find_json_never_raises_on_any_text(text: str) -> None:
    find_json(text)


@given(st.text(alphabet='{}[]",:\\ `json0123456789.eE-+ntrufalse\n', max_size=200))
def test_find_json_never_raises_on_json_like_garbage(text: str) -> None:
    found = find_json(text)
    assert found is None or json.dumps(found, default=str)


@given(
    st.dictionaries(st.text(), st.integers() | st.text() | st.booleans() | st.none(), min_size=1),
    st.text(alphabet=st.characters(exclude_characters="{}`")),
)
def test_find_json_finds_an_object_embedded_in_prose(obj: dict[str, Any], prose: str) -> None:
    assert find_json(f"{prose} {json.dumps(obj)} {prose}") == obj


# --- grounding helpers ----------------------------------------------------------------------------


def invoice(vendor: str = "Acme", note: str | None = None, total: str | None = "30.00") -> Invoice:
    lines = [Line(price=Decimal("10.00"), qty=2), Line(price=Decimal("2.50"), qty=4)]
    return Invoice(vendor=vendor, note=note, lines=lines, total=Decimal(total) if total else None)


@pytest.mark.parametrize(
    ("fields", "obj", "source", "problems"),
    [
        (("vendor",), invoice("ACME"), "Invoice from acme ltd", []),
        (("vendor",), invoice("Acme  Ltd"), "from Acme\nLtd", []),
        (
            ("vendor",),
            invoice("Globex"),
            "Invoice from Acme",
            ["vendor: 'Globex' does not appear in the source text"],
        ),
        (("vendor", "note"), invoice(note=None), "Acme", []),
        (
            ("vendor", "note"),
            invoice(note="rush"),
            "Acme",
            ["note: 'rush' does not appear in the source text"],
        ),
    ],
)
def test_values_in_source(fields: tuple[str, ...], obj: Invoice, source: str, problems: list[str]) -> None:
    assert values_in_source(*fields)(obj, source) == problems


def test_values_in_source_refuses_non_string_fields() -> None:
    with pytest.raises(TypeError, match="total"):
        values_in_source("total")(invoice(), "30.00")


@pytest.mark.parametrize(
    ("total", "ok"),
    [
        ("30.00", True),  # 10.00 × 2 + 2.50 × 4
        ("29.99", True),  # within 0.01
        ("30.01", True),
        ("30.02", False),
        ("29.98", False),
        (None, True),  # no total stated: nothing to check
    ],
)
def test_totals_add_up(total: str | None, ok: bool) -> None:
    problems = totals_add_up("lines", "price", "qty", "total")(invoice(total=total), "")
    assert (problems == []) is ok
    if not ok:
        assert problems[0].startswith(f"total: {total} is not the sum of price × qty over lines (30.00)")


class Row(BaseModel):
    price: str | None
    qty: int


class Order(BaseModel):
    lines: list[Row]
    total: Decimal


@pytest.mark.parametrize(
    ("price", "problems"),
    [
        ("1.5", []),
        ("n/a", ["lines.0: needs a numeric price and qty"]),
        ("nan", ["lines.0: needs a numeric price and qty"]),
        (None, ["lines.0: needs a numeric price and qty"]),
    ],
)
def test_totals_add_up_names_a_line_without_numbers(price: str | None, problems: list[str]) -> None:
    # Given a schema whose price is free text, When a line's price is not a number, Then that line is named
    order = Order(lines=[Row(price=price, qty=2)], total=Decimal(3))
    assert totals_add_up("lines", "price", "qty", "total")(order, "") == problems
