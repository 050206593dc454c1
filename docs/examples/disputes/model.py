"""An offline model for the disputes task: it answers by rules, so the tests need no Claude."""

from __future__ import annotations

from lockgate_infra.testing import ScriptedModel, call, when


def scripted_model() -> ScriptedModel:
    """Read the dispute and note it; a duplicate charge: ask to close it and to refund the charge."""
    return ScriptedModel(
        "disputes",
        when(
            r"item_id=(?P<item>[\w.-]*[\w-])\. It disputes charge (?P<charge>ch_\w+) for (?P<amount>\d+)"
        ).call("read_item", item_id="{item}"),
        when(r'"subject": "(?P<subject>(?:[^"\\]|\\.)*)"', after="read_item").call(
            "add_note", item_id="{item}", note="About: {subject}"
        ),
        # {charge} and {amount} come from the prompt's rule: captures combine within a turn.
        when(r'"subject": "duplicate"', after="read_item").calls(
            call("close_item", item_id="{item}", reason="a duplicate charge"),
            call("refund_charge", charge="{charge}", amount="{amount}"),
        ),
        finish="Item {item}: noted.",
    )
