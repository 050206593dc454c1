"""docs/providers.md's table of what each provider supports is the code's (``PROVIDERS``)."""

from __future__ import annotations

from pathlib import Path

from lockgate.config import PROVIDER_NAMES
from lockgate.model.providers import PROVIDERS

PAGE = Path(__file__).resolve().parents[2] / "docs" / "providers.md"
FEATURES = {
    "Prompt caching": "prompt_caching",
    "Message Batches": "message_batches",
    "Structured outputs": "structured_outputs",
    "Token counting": "token_counting",
}


def table() -> dict[str, list[str]]:
    """The page's "What changes" table: row label → one cell per column after it."""
    section = PAGE.read_text(encoding="utf-8").split("## What changes", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip().strip("|").split("|") for line in section.splitlines() if line.startswith("|")]
    return {
        cells[0].strip(): [c.strip() for c in cells[1:]] for cells in rows if not cells[0].startswith("-")
    }


def test_given_the_providers_page_then_its_table_is_what_the_code_supports() -> None:
    rows = table()
    providers = [PROVIDERS[name] for name in PROVIDER_NAMES]
    assert rows[""] == [p.title for p in providers]
    assert rows["`[provider] name`"] == [f"`{p.name}`" for p in providers]
    assert rows["Authorisation"] == [p.auth for p in providers]
    assert rows["Regions"] == [p.regions for p in providers]
    for label, attribute in FEATURES.items():
        # "yes", or "no" with what Lockgate does instead.
        assert [cell.split(":")[0] for cell in rows[label]] == [
            "yes" if getattr(p, attribute) else "no" for p in providers
        ], label
