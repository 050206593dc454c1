"""approval-digest: once a day, each reviewer gets one private message listing what waits for them.

Reuses ReviewDigest (the same list the signed digest page shows) and a personal channel of the
notifier (email: a reviewer's links are credentials, so never a shared channel). One digest per
reviewer per scheduled day: a conditional put marks it sent, so a retried run sends no repeat.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.approvals.digest import ReviewDigest
from lockgate.approvals.notify import PersonalChannel
from lockgate.approvals.pages import DigestItem
from lockgate.config import ApprovalsConfig, Reviewer
from lockgate.dynamo import write_if
from lockgate.errors import StoreUnavailable
from lockgate.jobs.contract import JobContext, JobResult

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

NAME = "approval-digest"
MARK_RETENTION_SECONDS = 3 * 86_400


class DigestMarks:
    """ "Sent today" marks in the State table: one conditional put per reviewer and day."""

    def __init__(self, dynamodb: DynamoDBClient, table_name: str) -> None:
        self._db = dynamodb
        self._table = table_name

    def claim(self, reviewer: str, day: str, now: int) -> bool:
        """Mark the digest as being sent; False if it was already sent for this day."""
        return write_if(
            self._db.put_item,
            TableName=self._table,
            Item={
                **_key(reviewer, day),
                "sent_at": {"N": str(now)},
                "ttl": {"N": str(now + MARK_RETENTION_SECONDS)},
            },
            ConditionExpression="attribute_not_exists(pk)",
        )

    def release(self, reviewer: str, day: str) -> None:
        """Undo a claim whose send failed, so the retried run sends it."""
        try:
            self._db.delete_item(TableName=self._table, Key=_key(reviewer, day))
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailable(type(exc).__name__) from exc


class ApprovalDigestJob:
    """The ``approval-digest`` job."""

    def __init__(
        self,
        *,
        digest: ReviewDigest,
        config: ApprovalsConfig,
        channel: PersonalChannel,
        marks: DigestMarks,
    ) -> None:
        self._digest = digest
        self._config = config
        self._channel = channel
        self._marks = marks

    def __call__(self, ctx: JobContext) -> JobResult:
        """One message per reviewer with something waiting; resumes at the next reviewer."""
        counts = {"sent": 0, "nothing_waiting": 0, "already_sent": 0, "unreachable": 0}
        day = ctx.scheduled_time[:10]
        reviewers = self._config.reviewers
        first = int((ctx.cursor or {}).get("next", 0))
        for n in range(first, len(reviewers)):
            if ctx.should_stop():
                return JobResult(done=False, cursor={"next": n}, counts=counts)
            counts[self._send(ctx, reviewers[n], day)] += 1
        ctx.metrics.add_metric(name="ApprovalDigestSent", unit="Count", value=counts["sent"])
        return JobResult(done=True, counts=counts)

    def _send(self, ctx: JobContext, reviewer: Reviewer, day: str) -> str:
        items = self._digest.items_for(reviewer)
        if not items:
            return "nothing_waiting"
        if not self._marks.claim(reviewer.id, day, int(ctx.clock.now())):
            return "already_sent"
        subject, text = digest_message(items, self._digest.link_for(reviewer.id, items))
        try:
            reached = self._channel.send_text(reviewer, subject, text)
        except Exception:
            self._marks.release(reviewer.id, day)
            raise  # the run fails loudly; Scheduler's retry sends it
        if not reached:
            self._marks.release(reviewer.id, day)
            return "unreachable"
        ctx.log.info("approval digest sent", extra={"reviewer": reviewer.id, "items": len(items)})
        return "sent"


def digest_message(items: list[DigestItem], digest_link: str) -> tuple[str, str]:
    """Subject and plain text: each code-built summary, why it waits, its deadline, its own link."""
    lines = [f"{len(items)} action(s) wait for your decision. Nothing happens unless you approve.", ""]
    for item in items:
        deadline = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(item.expires_at))
        lines += [f"- {item.summary}", f"  why: {item.why}", f"  decide by {deadline}: {item.link}", ""]
    lines.append(f"All of them on one page: {digest_link}")
    return f"{len(items)} approval(s) waiting for you", "\n".join(lines) + "\n"


def _key(reviewer: str, day: str) -> dict[str, Any]:
    return {"pk": {"S": f"digest#{reviewer}"}, "sk": {"S": day}}
