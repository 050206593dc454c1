"""What ``lockgate local`` reports about itself: each poller and stand-in, alive or stalled.

The running stack refreshes this every second into its state file (``.lockgate/local-<port>.json``,
under ``status``), which ``lockgate local status`` reads from another process. The state file is
the one channel every ``--local`` command already uses to find the stack: no second port, and no
route in the gateway, which serves the template's routes only, as API Gateway would. When a poller
becomes stalled or recovers, the console says so once (``local/health.py`` defines stalled).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from lockgate_infra.local.background import Background
from lockgate_infra.local.health import Verdict
from lockgate_infra.local.stream_position import records_after
from lockgate_infra.serving import Activity

if TYPE_CHECKING:
    from lockgate_infra.local.poller import SqsPoller
    from lockgate_infra.local.scheduler import LocalScheduler
    from lockgate_infra.local.stack import LocalStack
    from lockgate_infra.local.streams import StreamPoller

REFRESH_SECONDS = 1.0


class Served(Protocol):
    """A stand-in server: the stub Messages API, the Slack stand-in."""

    @property
    def running(self) -> bool: ...  # noqa: D102

    activity: Activity


@dataclass(frozen=True)
class StandIn:
    """A server that plays an outside service on loopback."""

    kind: str  # "model", "slack"
    name: str
    url: str
    server: Served


class Monitor:
    """Each refresh: a row per poller and stand-in; a console line when a poller stalls or recovers."""

    def __init__(
        self, stack: LocalStack, stand_ins: Sequence[StandIn] = (), say: Callable[[str], None] | None = None
    ) -> None:
        self._stack = stack
        self._stand_ins = list(stand_ins)
        self._say = say  # the console (lockgate local's, stamped with the time)
        self._stalled: dict[str, str] = {}  # poller name → the reason last reported

    def status(self) -> dict[str, Any]:
        """The ``status`` section of the state file, as of now."""
        pollers = [self._queue(p) for p in self._stack.pollers]
        pollers += [self._stream(p) for p in self._stack.stream_pollers]
        if self._stack.scheduler is not None:
            pollers.append(self._schedule(self._stack.scheduler))
        for row in pollers:
            self._report(row)
        return {
            "updated_at": time.time(),
            "pollers": pollers,
            "stand_ins": [_stand_in(s) for s in self._stand_ins],
        }

    def _queue(self, poller: SqsPoller) -> dict[str, Any]:
        waiting = _probe(poller.visible)
        source = poller.queue_url.rsplit("/", 1)[-1]
        return self._row("queue", poller, source, waiting, "message")

    def _stream(self, poller: StreamPoller) -> dict[str, Any]:
        streams = self._stack.client("dynamodbstreams")
        arn = poller.stream_arn or ""
        waiting = _probe(lambda: records_after(streams, arn, poller.shard_id, poller.position))
        return self._row("stream", poller, poller.table_name, waiting, "record")

    def _schedule(self, scheduler: LocalScheduler) -> dict[str, Any]:
        count = len([s for s in self._stack.plan.schedules if s.enabled])
        where = f"{count} schedules, clock x{scheduler.speed:g}"
        return self._row("schedule", scheduler, where, _probe(scheduler.due), "occurrence")

    def _row(self, kind: str, poller: Background, source: str, waiting: int, what: str) -> dict[str, Any]:
        health = poller.health
        verdict = health.verdict(poller.running, waiting, self._timeout, what)
        return {
            "kind": kind,
            "name": poller.name,
            "source": source,
            "state": verdict.state,
            "reason": verdict.reason,
            "busy": health.busy_since is not None,
            "handled": health.handled,
            "last_activity": health.last_activity,
            "waiting": waiting,
            "last_error": health.last_error,
        }

    def _timeout(self, function: str) -> float:
        plan = self._stack.plan.functions.get(function)
        return float(plan.timeout) if plan is not None else float("inf")

    def _report(self, row: dict[str, Any]) -> None:
        name, reason = f"{row['kind']} {row['name']}", row["reason"]
        said = ""
        if row["state"] == "stalled" and self._stalled.get(name) != reason:
            said = f"{name} is stalled: {reason} (`lockgate local status` shows every poller)"
            self._stalled[name] = reason
        elif row["state"] == "alive" and self._stalled.pop(name, None) is not None:
            said = f"{name} is alive again"
        if said and self._say is not None:
            self._say(said)


def _stand_in(stand_in: StandIn) -> dict[str, Any]:
    server = stand_in.server
    verdict = Verdict(False) if server.running else Verdict(True, "its server thread is not running")
    return {
        "kind": stand_in.kind,
        "name": stand_in.name,
        "url": stand_in.url,
        "state": verdict.state,
        "reason": verdict.reason,
        "handled": server.activity.handled,
        "last_activity": server.activity.last,
    }


def _probe(count: Any) -> int:
    """How much work waits (0 when it cannot be read now: the poller's own reads then say why)."""
    try:
        return int(count())
    except (BotoCoreError, ClientError):
        return 0
