"""The audit export's files: write JSON lines or CSV, and ``read_audit``, which parses either back
into the same records (``lockgate_infra.cli.audit_json``, ``lockgate_infra.cli.audit_csv``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from lockgate.approvals.audit import AuditRecord
from lockgate_infra.cli.audit_csv import from_csv, write_rows
from lockgate_infra.cli.audit_json import AuditFileError, as_json, from_line

__all__ = ["CSV", "FORMATS", "JSONL", "AuditFileError", "read_audit", "write_audit"]

JSONL, CSV = "jsonl", "csv"
FORMATS = (JSONL, CSV)


def write_audit(records: Iterable[AuditRecord], out: TextIO, form: str) -> tuple[int, int]:
    """Write ``records`` to ``out`` as JSON lines or CSV; (proposals, lines or rows) written."""
    if form == CSV:
        return write_rows(records, out)
    proposals = 0
    for record in records:
        out.write(json.dumps(as_json(record), ensure_ascii=False) + "\n")
        proposals += 1
    return proposals, proposals


def read_audit(path: Path) -> list[AuditRecord]:
    """The records in an export written by ``write_audit``, in either format (told apart by content)."""
    text = path.read_text(encoding="utf-8-sig")
    if text.lstrip().startswith("{"):
        return [from_line(path, n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    return list(from_csv(path, text))
