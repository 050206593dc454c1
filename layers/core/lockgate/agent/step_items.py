"""How a run's step is stored in its item: the JSON as text, or compressed when that saves a write unit."""

from __future__ import annotations

import json
import zlib
from typing import Any

from lockgate.schema import COMPRESSED_STEP

COMPRESS_OVER = 800  # bytes of step JSON above which it is stored compressed, if that saves a unit
STEP_ITEM_BYTES = 160  # a step item's keys, names and numbers besides its data


def step_data(body: str) -> tuple[dict[str, Any], int]:
    """A step's data attribute: the JSON as text, or zlib-compressed when that saves a write unit.

    Most steps fit one 1 KB write unit as text; a tool result with an email or a help page is
    several, and text compresses three to five times (``lockgate.schema.COMPRESSED_STEP``).
    """
    text = body.encode("utf-8")
    if len(text) > COMPRESS_OVER:
        packed = zlib.compress(text, 6)
        if _write_units(len(packed)) < _write_units(len(text)):
            return {"dataz": {"B": packed}}, COMPRESSED_STEP
    return {"data": {"S": body}}, 1


def _write_units(data_bytes: int) -> int:
    """The 1 KB write units of a step item whose data takes ``data_bytes``."""
    return -(-(data_bytes + STEP_ITEM_BYTES) // 1024)


def step_json(item: dict[str, Any]) -> Any:
    """A step's data back from its item, compressed or not."""
    if "dataz" in item:
        return json.loads(zlib.decompress(item["dataz"]["B"]).decode("utf-8"))
    return json.loads(item["data"]["S"])
