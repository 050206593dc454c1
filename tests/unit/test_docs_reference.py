"""The docs site's reference pages are what the code generates today (so they cannot drift)."""

from __future__ import annotations

import pytest

from lockgate.config import InboxConfig
from lockgate_infra.docsite.reference import DOCS, PAGES, field_comments


@pytest.mark.parametrize("name", sorted(PAGES))
def test_each_reference_page_is_current(name: str) -> None:
    # Given the page as committed, When it is generated again from the code, Then nothing changed
    committed = (DOCS / name).read_text(encoding="utf-8")
    assert committed == PAGES[name](), f"docs/{name} is stale: run python -m lockgate_infra.docsite"


def test_every_config_key_has_a_row_and_the_code_comment_is_its_meaning() -> None:
    page = PAGES["reference/config.md"]()
    comments = field_comments(InboxConfig)
    assert comments["max_attempts"].startswith("attempts before a delivery is set aside")
    assert f"| `max_attempts` | int | `5` | {comments['max_attempts']} |" in page
    for key in (
        "scheme",
        "secrets",
        "packages",
        "daily_usd",
        "calls_per_admission",
        "catch_up",
        "reviewers_required",
    ):
        assert f"| `{key}` |" in page


def test_the_cli_page_lists_every_command_with_its_usage() -> None:
    page = PAGES["reference/cli.md"]()
    for command in (
        "lockgate local",
        "lockgate approvals approve",
        "lockgate secrets rotate-in",
        "lockgate eval",
        "lockgate check",
    ):
        assert f"## `{command}`" in page
    assert "usage: lockgate inbox replay" in page
