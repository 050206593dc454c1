"""Message Batches on the stub: create, retrieve and results, in the shapes the SDK parses.

``POST /v1/messages/batches`` answers every request at once through the stub's model (billed
like a normal call; the client prices it at the batch discount) and keeps the messages. A batch
reports ``in_progress`` while the desk is held (``hold()``), ``ended`` otherwise, with
``results_url`` pointing at ``GET /v1/messages/batches/{id}/results`` (JSON Lines).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from lockgate_infra.stub.replies import StubError
from lockgate_infra.stub.validation import request_problem

BATCHES_PATH = "/v1/messages/batches"

# (params, custom_id) -> a Message JSON, or the error to report for that request
Answer = Callable[[dict[str, Any], str], dict[str, Any] | StubError]


class BatchDesk:
    """The batches the stub has been sent; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._batches: dict[str, dict[str, Any]] = {}
        self._results: dict[str, list[dict[str, Any]]] = {}
        self._held = False
        self.requests: list[dict[str, Any]] = []  # every request (custom_id + params) received

    def hold(self, held: bool = True) -> None:
        """While held, batches stay ``in_progress`` and have no results."""
        with self._lock:
            self._held = held

    def route(
        self, method: str, path: str, body: Any, base_url: str, answer: Answer
    ) -> tuple[int, Any] | StubError | None:
        """(status, JSON or JSONL text) for a batches path, an error, or None when not a batches path."""
        if path == BATCHES_PATH and method == "POST":
            return self._create(body, base_url, answer)
        parts = path.removeprefix(BATCHES_PATH + "/").split("/")
        if not path.startswith(BATCHES_PATH + "/") or method != "GET" or len(parts) > 2:
            return None
        with self._lock:
            batch = self._batches.get(parts[0])
            if batch is None:
                return StubError(404, "not_found_error", f"No batch {parts[0]}")
            view = self._view(batch)
            if len(parts) == 1:
                return 200, view
            if parts[1] != "results" or view["results_url"] is None:
                return StubError(404, "not_found_error", "No results for this batch yet")
            return 200, "".join(json.dumps(line) + "\n" for line in self._results[parts[0]])

    def _create(self, body: Any, base_url: str, answer: Answer) -> tuple[int, Any] | StubError:
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return StubError(400, "invalid_request_error", "requests: a non-empty list is required")
        ids = [r.get("custom_id") if isinstance(r, dict) else None for r in requests]
        if not all(isinstance(i, str) and i for i in ids) or len(set(ids)) != len(ids):
            return StubError(400, "invalid_request_error", "each request needs a unique custom_id")
        lines = []
        for request in requests:
            params = request.get("params")
            problem = request_problem(params)
            outcome = (
                StubError(400, "invalid_request_error", problem)
                if problem
                else answer(params, request["custom_id"])
            )
            if isinstance(outcome, StubError):
                error = {"type": "error", "error": {"type": outcome.type, "message": outcome.message}}
                lines.append(
                    {"custom_id": request["custom_id"], "result": {"type": "errored", "error": error}}
                )
            else:
                lines.append(
                    {"custom_id": request["custom_id"], "result": {"type": "succeeded", "message": outcome}}
                )
        now = datetime.now(UTC)
        with self._lock:
            batch_id = f"msgbatch_stub_{next(self._ids):012d}"
            self.requests.extend(requests)
            self._batches[batch_id] = {
                "id": batch_id,
                "created_at": now,
                "base_url": base_url,
            }
            self._results[batch_id] = lines
            return 200, self._view(self._batches[batch_id])

    def _view(self, batch: dict[str, Any]) -> dict[str, Any]:
        lines = self._results[batch["id"]]
        ended = not self._held
        counts = {
            "processing": 0 if ended else len(lines),
            "succeeded": 0,
            "errored": 0,
            "canceled": 0,
            "expired": 0,
        }
        if ended:
            for line in lines:
                counts[line["result"]["type"]] += 1
        created: datetime = batch["created_at"]
        return {
            "id": batch["id"],
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts,
            "created_at": created.isoformat(),
            "expires_at": (created + timedelta(hours=24)).isoformat(),
            "ended_at": created.isoformat() if ended else None,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{batch['base_url']}{BATCHES_PATH}/{batch['id']}/results" if ended else None,
        }
