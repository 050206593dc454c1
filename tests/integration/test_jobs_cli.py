"""`lockgate jobs run` and `lockgate jobs status` against a running local stack."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends

from lockgate.jobs.schedule import iso
from tests.integration.test_cli import run_cli, running_stack  # noqa: F401 - the fixture

pytestmark = pytest.mark.usefixtures("running_stack")


def test_jobs_run_enqueues_the_scheduled_task_and_status_shows_its_heartbeat(
    running_stack: Any,  # noqa: F811 - the imported fixture
    capsys: pytest.CaptureFixture[str],
) -> None:
    stack = running_stack
    # Given no job has run yet: every job is listed, none overdue
    code, out = run_cli("jobs", "status", "--json")
    jobs = {row["job"]: row for row in json.loads(out)}
    assert code == 0
    assert {"sweep-inbox", "approval-digest", "eval", "refund-summary"} <= set(jobs)
    assert all(row["last_success"] is None and not row["overdue"] for row in jobs.values())

    # When the operator runs the refund summary now (twice: the second is a duplicate)
    moment = iso(time.time())
    code, out = run_cli("jobs", "run", "refund-summary", "--time", moment)
    assert code == 0 and json.loads(out)["counts"] == {"enqueued": 1, "duplicate": 0}
    code, out = run_cli("jobs", "run", "refund-summary", "--time", moment)
    assert code == 0 and json.loads(out)["counts"] == {"enqueued": 0, "duplicate": 1}
    assert stack.drain(timeout=30)

    # Then the worker ran the task once and the owner got one email about yesterday
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    sent = [
        m
        for m in ses_backends[DEFAULT_ACCOUNT_ID][stack.region].sent_messages
        if m.subject == f"Refunds on {yesterday}"
    ]
    assert len(sent) == 1 and sent[0].destinations["ToAddresses"] == ["owner@shop.example.com"]
    assert f"No refunds were made on {yesterday}." in sent[0].body
    # And the status shows its heartbeat
    code, out = run_cli("jobs", "status")
    line = next(row for row in out.splitlines() if row.startswith("refund-summary"))
    assert "never" not in line and "OVERDUE" not in line

    # And an unknown job is refused with the list of known ones
    assert run_cli("jobs", "run", "no-such-job")[0] == 2
    assert "known: sweep-inbox" in capsys.readouterr().err
