"""Code the docs show from a file of the project is that file, exactly (``<!-- docs: file PATH -->``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate_infra.docsite.blocks import FileBlock, file_blocks

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
BLOCKS = [block for page in PAGES for block in file_blocks(page)]


def _id(block: FileBlock) -> str:
    return f"{block.path.relative_to(ROOT)}:{block.line}"


def test_the_docs_show_some_files() -> None:
    assert BLOCKS, "no <!-- docs: file PATH --> blocks found: the collector is broken"


@pytest.mark.parametrize("block", BLOCKS, ids=_id)
def test_each_shown_file_is_the_file_as_it_is(block: FileBlock) -> None:
    source = ROOT / block.file
    assert source.is_file(), f"{_id(block)} shows {block.file}, which does not exist"
    assert block.body == source.read_text(encoding="utf-8"), (
        f"{_id(block)} differs from {block.file}: paste the file again"
    )
