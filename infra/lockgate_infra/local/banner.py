"""What ``lockgate local`` prints once it serves: where everything is, and how each poller is doing."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lockgate_infra.local.status_text import rows

if TYPE_CHECKING:
    from lockgate_infra.local.gateway import Gateway
    from lockgate_infra.local.stack import LocalStack


def banner(
    stack: LocalStack,
    gateway: Gateway,
    model: tuple[str, str],
    dev_secrets: Mapping[str, str],
    logs: Path,
    status: Mapping[str, Any],
) -> list[str]:
    """The banner's lines: addresses, routes, schedules, tables, secrets, logs, pollers and stand-ins.

    ``model`` is what answers and over which provider's wire format, each described in words.
    """
    plan = stack.plan
    answers, provider = model
    lines = [
        f"Lockgate local stack ({stack.template_path.name}, config {stack.config_path})",
        f"  gateway:      {gateway.url}",
        f"  AWS endpoint: {stack.endpoint_url}  (region {stack.region})",
        f"  model:        {answers}",
        f"  provider:     {provider}",
    ]
    lines += [f"  route:        {r.route_key} -> {r.function}" for r in plan.routes]
    if stack.scheduler is not None:
        speed = stack.scheduler.speed
        lines += [
            f"  schedule:     {s.name} {s.expression} -> {s.function}" for s in plan.schedules if s.enabled
        ]
        lines.append(f"  clock:        x{speed:g} (a day in {86_400 / speed / 60:.1f} min)")
    lines += [f"  table:        {t.name}" for t in plan.tables.values()]
    lines += [f"  dev secret:   {source} = {value}" for source, value in dev_secrets.items()]
    lines.append(f"  logs:         {logs}  (the functions' JSON logs; --verbose shows them here)")
    lines.append("Pollers and stand-ins (`lockgate local status` in another terminal shows them live):")
    lines += rows(status)
    lines.append("Ctrl-C to stop.")
    return lines
