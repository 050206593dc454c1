"""``lockgate local status``: the running stack's pollers and stand-ins, as its state file describes them.

Exit codes: 0 every poller and stand-in is alive; 1 one is stalled, or the stack has stopped
refreshing its status (hung); 2 no stack runs (one line from the CLI, like every ``--local`` command).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any, TextIO

OK, STALLED = 0, 1
STALE_SECONDS = 10.0  # the stack refreshes every second: this old, its main loop is stuck


def rows(status: Mapping[str, Any]) -> list[str]:
    """One line per poller and stand-in (and the reason under a stalled one)."""
    lines, listed = [], [*status.get("pollers", []), *status.get("stand_ins", [])]
    width = max([40, *(len(row["name"]) for row in listed)])  # a long name widens the column, not a row
    for row in listed:
        state = "STALLED" if row["state"] == "stalled" else row["state"]
        last = row.get("last_activity")
        when = f"last {time.strftime('%H:%M:%S', time.gmtime(last))} UTC" if last else "nothing yet"
        where = row.get("url") or row.get("source") or ""
        busy = ", busy" if row.get("busy") else ""
        handled = f"{row['handled']} handled{busy}, {when}"
        lines.append(f"  {row['kind']:<9} {row['name']:<{width}} {state:<8} {handled:<38} {where}")
        if row.get("reason"):
            lines.append(f"  {'':<9} {row['reason']}")
    return lines


def report(state: Mapping[str, Any], out: TextIO, *, as_json: bool = False, now: float | None = None) -> int:
    """Print the stack's status; the exit code (OK, or STALLED when anything is stalled or stale)."""
    now = time.time() if now is None else now
    status = state.get("status") or {}
    age = now - float(status.get("updated_at", 0))
    stalled = [
        r for r in [*status.get("pollers", []), *status.get("stand_ins", [])] if r["state"] == "stalled"
    ]
    code = STALLED if stalled or age > STALE_SECONDS else OK
    if as_json:
        print(json.dumps({**status, "age_seconds": round(age, 1), "healthy": code == OK}, indent=2), file=out)
        return code
    started = f"pid {state.get('pid')}, started {state.get('started_at')}"
    head = f"lockgate local on {state.get('gateway_url')} ({started})"
    if not status:
        print(f"{head}; it does not report its status (an older lockgate started it): restart it", file=out)
        return STALLED
    print(f"{head}; status of {max(age, 0):.0f} s ago", file=out)
    for line in rows(status):
        print(line, file=out)
    if age > STALE_SECONDS:
        print(f"the stack has not refreshed its status for {age:.0f} s: it may be hung "
              "(Ctrl-C it and start it again)", file=out)  # fmt: skip
    elif stalled:
        print(f"{len(stalled)} stalled (see above); the stack's console and its log file say more", file=out)
    return code
