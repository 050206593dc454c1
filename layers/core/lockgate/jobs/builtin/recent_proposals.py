"""The approval jobs' scan: proposals made in the last week, page by page, resumable from a cursor."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.jobs.contract import JobContext, JobResult

LOOKBACK_SECONDS = 7 * 86_400  # decide windows are hours: anything older was settled long ago
PAGE_SIZE = 100


def scan_recent(
    ctx: JobContext,
    proposals: ProposalStore,
    now: float,
    visit: Callable[[Proposal], None],
    counts: dict[str, int],
) -> JobResult:
    """``visit`` each proposal made since the cursor's time (counted as ``checked``); a run its
    deadline stops returns a cursor the next run resumes from, without visiting a page twice."""
    cursor = ctx.cursor or {}
    since = int(cursor.get("since", now - LOOKBACK_SECONDS))
    start: dict[str, Any] | None = cursor.get("start")
    while True:
        if ctx.should_stop():
            return JobResult(done=False, cursor={"since": since, "start": start}, counts=counts)
        page, start = proposals.page_since(since, start, PAGE_SIZE)
        for proposal in page:
            counts["checked"] += 1
            visit(proposal)
        if start is None:
            return JobResult(done=True, counts=counts)
