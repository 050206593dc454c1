"""Re-sending one proposal's own link from a reviewer's digest page: a POST, rate-limited and audited.

The digest page lists what waits but carries no decision links, so a leaked digest link decides
nothing. A reviewer who lost a proposal's message asks for its link again: the POST carries the
digest link and its form token, and the fresh link goes to the reviewer's own private channel
(email), never into the response. At most ``REISSUES_PER_HOUR`` requests per reviewer an hour; each
of them and the first refusal is an audit row in the State table's ``approval-links`` partition
(the only part of that table the callback's role may write), and the hour's row counts them all,
so a leaked digest link cannot flood the table.
"""

from __future__ import annotations

import secrets as _random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.approvals.decisions import DecisionStore, State, current_state
from lockgate.approvals.desk import LinkSigner
from lockgate.approvals.digest import ReviewDigest
from lockgate.approvals.eligibility import allowed_ids
from lockgate.approvals.notify import PersonalChannel
from lockgate.approvals.pages import Page, outcome_page
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.approvals.refusal import cross_site_reason
from lockgate.clock import Clock
from lockgate.config import ApprovalsConfig, Reviewer
from lockgate.dynamo import read_all, write_if
from lockgate.errors import StoreUnavailable
from lockgate.telemetry import Log, Metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PARTITION = "approval-links"
APPROVAL_FIELD = "approval"
REISSUES_PER_HOUR = 5
AUDIT_RETENTION_SECONDS = 90 * 86_400
_HOUR = 3_600
_NOTHING_YET = "Nothing happens unless you approve on its page."


@dataclass(frozen=True)
class Reissue:
    """One audited request for a link again: who, which proposal, when, from where, what happened."""

    reviewer: str
    approval_id: str
    at: int
    outcome: str  # sent | rate-limited | unreachable | not waiting
    source_ip: str


class ReissueAudit:
    """The per-reviewer hourly allowance and the audit rows, in the State table."""

    def __init__(self, dynamodb: DynamoDBClient, table_name: str) -> None:
        self._db = dynamodb
        self._table = table_name

    def take(self, reviewer: str, now: int) -> int:
        """Count one more request this hour for ``reviewer``; the count (the first few are allowed)."""
        hour = now - now % _HOUR
        try:
            reply = self._db.update_item(
                TableName=self._table,
                Key=_allowance_key(reviewer, hour),
                UpdateExpression="ADD attempts :one SET #ttl = :ttl",
                ExpressionAttributeNames={"#ttl": "ttl"},
                ExpressionAttributeValues={":one": {"N": "1"}, ":ttl": {"N": str(hour + 2 * _HOUR)}},
                ReturnValues="UPDATED_NEW",
            )
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        return int(reply["Attributes"]["attempts"]["N"])

    def record(self, entry: Reissue) -> None:
        """Append one audit row (a unique sort key: nothing is overwritten)."""
        sk = f"reissue#{entry.reviewer}#{entry.at:012d}#{_random.token_hex(4)}"
        write_if(
            self._db.put_item,
            TableName=self._table,
            Item={
                "pk": {"S": PARTITION},
                "sk": {"S": sk},
                "reviewer": {"S": entry.reviewer},
                "approval_id": {"S": entry.approval_id},
                "at": {"N": str(entry.at)},
                "outcome": {"S": entry.outcome},
                "source_ip": {"S": entry.source_ip or "-"},
                "ttl": {"N": str(entry.at + AUDIT_RETENTION_SECONDS)},
            },
            ConditionExpression="attribute_not_exists(pk)",
        )

    def entries(self) -> list[Reissue]:
        """Every audit row still kept, oldest first (for operators and tests; the callback never reads)."""
        items = read_all(
            self._db.query,
            TableName=self._table,
            KeyConditionExpression="pk = :p AND begins_with(sk, :r)",
            ExpressionAttributeValues={":p": {"S": PARTITION}, ":r": {"S": "reissue#"}},
        )
        return sorted((_entry(item) for item in items), key=lambda e: e.at)


def _allowance_key(reviewer: str, hour: int) -> dict[str, Any]:
    return {"pk": {"S": PARTITION}, "sk": {"S": f"allowance#{reviewer}#{hour}"}}


def _entry(item: Mapping[str, Any]) -> Reissue:
    return Reissue(
        reviewer=item["reviewer"]["S"],
        approval_id=item["approval_id"]["S"],
        at=int(item["at"]["N"]),
        outcome=item["outcome"]["S"],
        source_ip=item["source_ip"]["S"],
    )


class LinkReissuer:
    """POST /approvals from the digest page: send one waiting proposal's own link to its reviewer again."""

    def __init__(
        self,
        *,
        digest: ReviewDigest,
        proposals: ProposalStore,
        decisions: DecisionStore,
        config: ApprovalsConfig,
        signer: LinkSigner,
        channel: PersonalChannel,
        audit: ReissueAudit,
        clock: Clock,
        log: Log,
        metrics: Metrics,
    ) -> None:
        self._digest = digest
        self._proposals = proposals
        self._decisions = decisions
        self._config = config
        self._signer = signer
        self._channel = channel
        self._audit = audit
        self._clock = clock
        self._log = log
        self._metrics = metrics

    def reissue(
        self, form: Mapping[str, str], headers: Mapping[str, str], source_ip: str = "", domain: str = ""
    ) -> Page:
        """Check the digest link, its form token and where the POST came from; then send, within limits.

        ``domain``: the API's domain as API Gateway reports it (not a client's header), for the link
        when the configured base URL is only a path.
        """
        cross_site = cross_site_reason(headers)
        if cross_site is not None:
            return self._digest.refused("origin", cross_site)
        reviewer = self._digest.verify_form(form)
        if isinstance(reviewer, Page):
            return reviewer
        now = int(self._clock.now())
        approval_id = form.get(APPROVAL_FIELD, "")[:128] or "-"
        attempt = self._audit.take(reviewer.id, now)
        proposal = self._waiting_for(reviewer, approval_id, now) if attempt <= REISSUES_PER_HOUR else None
        if attempt > REISSUES_PER_HOUR:
            outcome, page = "rate-limited", _RATE_LIMITED
        elif proposal is None:
            outcome, page = "not waiting", _NOT_WAITING
        else:
            link = self._signer.links_for(proposal, _public_base(self._signer.base_url, domain))[reviewer.id]
            text = f"Your own link for: {proposal.summary}\n\n{link}\n\n{_NOTHING_YET}\n"
            sent = self._channel.send_text(reviewer, f"Your link: {proposal.summary}", text)
            outcome, page = ("sent", _SENT) if sent else ("unreachable", _UNREACHABLE)
        if attempt <= REISSUES_PER_HOUR + 1:  # past the first refusal, the hour's count is the record
            self._audit.record(Reissue(reviewer.id, approval_id, now, outcome, source_ip))
        self._metrics.add_metric(name="ApprovalLinkReissued", unit="Count", value=int(outcome == "sent"))
        self._log.info("approval link re-send", extra={"reviewer": reviewer.id, "outcome": outcome})
        return page

    def _waiting_for(self, reviewer: Reviewer, approval_id: str, now: int) -> Proposal | None:
        """The proposal if it is pending, this reviewer may decide it, and has not; else None."""
        proposal = self._proposals.get(approval_id)
        if proposal is None:
            return None
        standing = self._decisions.standing(approval_id)
        if reviewer.id not in allowed_ids(self._config, proposal, standing):
            return None
        if current_state(self._config, proposal, standing, now) is not State.PENDING:
            return None
        return None if standing.decided(reviewer.id, standing.current(proposal).n) else proposal


def _public_base(base_url: str, domain: str) -> str:
    """Deployed, the callback knows its path only ("/approvals"): the domain is API Gateway's."""
    if base_url.startswith(("https://", "http://")):
        return base_url
    return f"https://{domain}{base_url}"


_SENT = outcome_page(
    "A fresh link is on its way", "It was sent to you privately. Nothing was decided.", status=200
)
_NOT_WAITING = outcome_page(
    "Nothing to send", "This request is no longer waiting for your decision. Nothing was decided.", status=409
)
_RATE_LIMITED = outcome_page(
    "Too many links asked for", "Try again in an hour, or open the link you were sent.", status=429
)
_UNREACHABLE = outcome_page(
    "We could not reach you", "No private address is set for you; ask an admin. Nothing was sent.", status=503
)
