"""Incremental prompt caching: the breakpoints the real SDK sends for a multi-step run, and what the
stub bills for them (each step reads everything the step before it sent)."""

from __future__ import annotations

import json
from typing import Any

from lockgate_infra.stub.models import Scripted
from lockgate_infra.stub.replies import Reply
from tests.agent.conftest import AgentRig, event
from tests.agent.toolkit import Effects, make_task

DEADLINE = 10_000_000_000.0
FIVE_MINUTES = {"type": "ephemeral"}
ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}


def use(call_id: str, item_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "lookup", "input": {"item_id": item_id}}


def tools_turn(*calls: dict[str, Any]) -> Reply:
    return Reply([{"type": "text", "text": "Looking."}, *calls], "tool_use")


THREE_STEPS = [
    tools_turn(use("t1", "I-123")),
    tools_turn(use("t2", "I-124")),
    Reply([{"type": "text", "text": "ok"}]),
]


def markers(request: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    """Where cache_control is, in prompt order: ("tools", ...), ("system", ...), ("messages[i][j]", ...)."""
    found = [("tools", t["cache_control"]) for t in request.get("tools", []) if "cache_control" in t]
    found += [("system", b["cache_control"]) for b in request["system"] if "cache_control" in b]
    for i, message in enumerate(request["messages"]):
        content = message["content"]
        for j, block in enumerate(content if isinstance(content, list) else []):
            if "cache_control" in block:
                found.append((f"messages[{i}][{j}]", block["cache_control"]))
    return found


def newest(request: dict[str, Any]) -> str:
    messages = request["messages"]
    return f"messages[{len(messages) - 1}][{len(messages[-1]['content']) - 1}]"


def unmarked_bytes(value: Any) -> bytes:
    """The JSON as the SDK sent it (key order kept), cache_control removed."""

    def strip(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k != "cache_control"}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    return json.dumps(strip(value), ensure_ascii=False).encode()


def model_usages(rig: AgentRig) -> list[dict[str, int]]:
    run = rig.runs().get("github#d-1")
    assert run is not None
    return [s.data["usage"] for s in run.steps if s.kind == "model"]


def test_each_step_marks_the_system_prompt_and_the_newest_message_and_nothing_else(rig: AgentRig) -> None:
    # Given a model that uses a tool twice, then answers
    rig.stub.set_model(Scripted(list(THREE_STEPS)))
    # When the loop runs the task
    rig.loop().run(make_task(Effects()), event(), DEADLINE)
    # Then every request the SDK sent has two breakpoints: the system prompt and the newest block
    requests = rig.stub.requests
    assert len(requests) == 3
    for request in requests:
        assert markers(request) == [("system", FIVE_MINUTES), (newest(request), FIVE_MINUTES)]
    # And the newest block is the prompt first, then the tool_result that answers the last call
    assert requests[0]["messages"][-1]["content"][-1]["type"] == "text"
    assert [r["messages"][-1]["content"][-1]["type"] for r in requests[1:]] == ["tool_result"] * 2


def test_each_step_reads_everything_the_step_before_it_sent(rig: AgentRig) -> None:
    # Given a three-step run (the rig's stub caches any length)
    rig.stub.set_model(Scripted(list(THREE_STEPS)))
    rig.loop().run(make_task(Effects()), event(), DEADLINE)
    # Then step 1 writes its whole prompt, and each later step reads exactly what the one before it
    # had cached (its read + its write) and writes only what was added since
    usages = model_usages(rig)
    assert usages[0]["cache_read_input_tokens"] == 0 and usages[0]["cache_creation_input_tokens"] > 0
    for before, after in zip(usages, usages[1:], strict=False):
        cached_before = before["cache_read_input_tokens"] + before["cache_creation_input_tokens"]
        assert after["cache_read_input_tokens"] == cached_before
        assert 0 < after["cache_creation_input_tokens"] < cached_before
        assert after["input_tokens"] == 0  # the rolling breakpoint is the last block: nothing left uncached


def test_the_prefix_a_step_resends_is_byte_identical_to_what_the_step_before_sent(rig: AgentRig) -> None:
    rig.stub.set_model(Scripted(list(THREE_STEPS)))
    rig.loop().run(make_task(Effects()), event(), DEADLINE)
    first, second, third = rig.stub.requests
    for before, after in ((first, second), (second, third)):
        assert unmarked_bytes(after["tools"]) == unmarked_bytes(before["tools"])
        assert unmarked_bytes(after["system"]) == unmarked_bytes(before["system"])
        kept = after["messages"][: len(before["messages"])]
        assert unmarked_bytes(kept) == unmarked_bytes(before["messages"])


def test_a_1h_task_marks_its_system_prompt_1h_before_the_5m_conversation_breakpoint(rig: AgentRig) -> None:
    # Given a task whose fixed prefix is cached for an hour
    rig.stub.set_model(Scripted(list(THREE_STEPS)))
    outcome = rig.loop().run(make_task(Effects(), cache_ttl="1h"), event(), DEADLINE)
    # Then the 1h marker comes first and the conversation's is 5m (the stub refuses the other order)
    assert outcome.status == "completed"
    for request in rig.stub.requests:
        assert markers(request) == [("system", ONE_HOUR), (newest(request), FIVE_MINUTES)]


def test_a_step_that_adds_20_blocks_or_more_also_marks_where_the_step_before_ended(rig: AgentRig) -> None:
    # Given a model that makes ten calls at once (11 assistant blocks + 10 results: past the lookback)
    calls = [use(f"t{n}", f"I-{100 + n}") for n in range(10)]
    rig.stub.set_model(Scripted([tools_turn(*calls), Reply([{"type": "text", "text": "ok"}])]))
    rig.loop().run(make_task(Effects()), event(), DEADLINE)
    # Then the second request marks the previous newest block too: three breakpoints, within four
    second = rig.stub.requests[1]
    assert markers(second) == [
        ("system", FIVE_MINUTES),
        ("messages[0][0]", FIVE_MINUTES),
        (newest(second), FIVE_MINUTES),
    ]
    # And the step still reads what the first step cached
    first_usage, second_usage = model_usages(rig)
    assert second_usage["cache_read_input_tokens"] == first_usage["cache_creation_input_tokens"]


def test_caching_off_sends_no_markers_and_bills_everything_as_input(rig: AgentRig) -> None:
    rig.stub.set_model(Scripted(list(THREE_STEPS)))
    rig.loop().run(make_task(Effects(), cache_ttl="off"), event(), DEADLINE)
    assert all(markers(r) == [] for r in rig.stub.requests)
    assert all(
        u["cache_read_input_tokens"] == u["cache_creation_input_tokens"] == 0 for u in model_usages(rig)
    )
