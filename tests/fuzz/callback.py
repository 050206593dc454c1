"""The approval callback as API Gateway calls it, for fuzzing every approval input on moto.

The handler module is imported under its deployed environment (``load_approval_app``); its desk,
digest, link re-send and Slack desk are then rebuilt by the same composition root
(``build_approvals``) with the worker's edit check answered in process (``refund_worker``: the
refund tool's own model, at most $500 with cents), as the deployed callback asks the worker over
Lambda. Slack's Web API and response URLs are the local stand-in's, on loopback.

What a test asserts is what was stored: ``written`` lists a proposal's Decisions rows (decisions,
versions, ``#state``) and inbox events, leaving out refusal rows, which are kept on purpose.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from lockgate.actions.editable import editable_fields
from lockgate.actions.tools import fingerprint
from lockgate.approvals.proposals import HOUR, Proposal, ProposalStore
from lockgate.approvals.refusals import PREFIX as REFUSED
from lockgate.config import SourceConfig, load_config
from lockgate.runtime.approvals import build_approvals
from lockgate.runtime.deps import lambda_deps
from lockgate.webhooks.signing import sign
from lockgate_infra.local.slack_stub import LOCAL_TEAM, SlackStub
from tests.refund_worker import Amount, refund_worker
from tests.support import Aws

HOST = "abc123.execute-api.us-east-1.amazonaws.com"
FORM = "application/x-www-form-urlencoded"
SAME_ORIGIN = {
    "host": HOST,
    "origin": f"https://{HOST}",
    "sec-fetch-site": "same-origin",
    "content-type": FORM,
}
SIGNING = "slack-signing-secret-for-fuzzing"
LINK_SECRET = "link-secret-for-fuzzing-0123456789abcdef"
ALICE, BOB, CAROL = "U0ALICE01", "U0BOB0001", "U0CAROL01"
TASK = "helpdesk"
PROPOSED = "80.00"
# The shop's refunds (lockgate.toml) in small: over $100 needs two people; Slack users mapped.
CONFIG = f"""
[approvals]
[[approvals.reviewers]]
id = "alice"
email = "alice@shop.example.com"
roles = ["refunds"]
slack_user = "{ALICE}"
[[approvals.reviewers]]
id = "bob"
email = "bob@shop.example.com"
roles = ["refunds"]
slack_user = "{BOB}"
[[approvals.reviewers]]
id = "carol"
email = "carol@shop.example.com"
roles = ["support"]
slack_user = "{CAROL}"

[approvals.slack]
channel = "C0APPROVALS"
bot_token = "env:TEST_SLACK_BOT"
signing_secret = "env:TEST_SLACK_SIGNING"
team_id = "{LOCAL_TEAM}"

[approvals.tools.refund_order]
roles = ["refunds"]

[[approvals.tools.refund_order.rules]]
name = "refunds over $100"
argument = "amount"
over = 100
reviewers_required = 2
"""


@dataclass(frozen=True)
class LambdaContext:
    """What Powertools' decorators read of Lambda's context object."""

    function_name: str = "ApprovalCallbackFunction"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:ApprovalCallbackFunction"
    aws_request_id: str = "fuzz-0000"


_HIDDEN = re.compile(r'<input type=hidden name="([^"]+)" value="([^"]*)">')
_ids = itertools.count(1)


class Callback:
    """The deployed approval handler on moto, with helpers to propose, link, post and read back."""

    def __init__(self, aws: Aws, app: Any, slack: SlackStub) -> None:
        self.aws, self.app, self.slack = aws, app, slack
        self.db = aws.client("dynamodb")
        self.proposals = ProposalStore(self.db, aws.names["ApprovalsTable"])
        self.config = load_config(Path(os.environ["LOCKGATE_CONFIG"])).approvals
        deps = lambda_deps(os.environ, app.logger, app.metrics, timeout_seconds=10)
        checks = refund_worker(TASK, self.config, self.proposals)
        parts = build_approvals(app.settings, load_config(Path(os.environ["LOCKGATE_CONFIG"])), deps, checks)
        app.desk, app.digest, app.reissuer, app.slack = parts.desk, parts.digest, parts.reissuer, parts.slack
        self._waiting: Proposal | None = None

    # -- proposals and links -------------------------------------------------------------------

    def propose(self, amount: str = PROPOSED) -> Proposal:
        """A fresh pending refund with an editable amount, as the refund tool records it."""
        n = next(_ids)
        args = {"order_id": f"A-{2000 + n}", "amount": amount}
        now = int(time.time())
        proposal = Proposal(
            approval_id=f"ap_{os.getpid():08x}{n:016x}",
            task=TASK,
            run_id=f"{TASK}#msg_{n}",
            tool="refund_order",
            args=args,
            fingerprint=fingerprint(args),
            summary=f"refund ${amount} on order A-{2000 + n}",
            unverified_reason="The parcel never arrived.",
            why=("refunds over $50 need a person",),
            created_at=now,
            expires_at=now + 24 * HOUR,
            run_within_seconds=HOUR,
            extra={"editable": editable_fields(Amount.model_json_schema(), ("amount",))},
        )
        self.proposals.propose(proposal)
        return proposal

    def waiting(self) -> Proposal:
        """One refund that stays pending for the whole test (the digest reads every stored proposal:
        one per example would make each example slower than the last)."""
        if self._waiting is None:
            self._waiting = self.propose()
        return self._waiting

    def link(self, proposal: Proposal, reviewer: str = "alice") -> dict[str, str]:
        """The reviewer's signed link's query, as the notifier sends it."""
        assert self.app.desk is not None
        url = self.app.desk.links_for(proposal)[reviewer]
        return dict(parse_qsl(urlsplit(url).query))

    def form(self, proposal: Proposal, reviewer: str = "alice") -> dict[str, str]:
        """The hidden fields of the reviewer's review page (link, form token, seen), as a browser posts."""
        page = self.get(proposal.approval_id, self.link(proposal, reviewer))
        assert page["statusCode"] == 200, page["body"]
        return dict(_HIDDEN.findall(page["body"]))

    def digest_form(self, reviewer: str = "alice") -> dict[str, str]:
        """The hidden fields of the reviewer's digest page (its re-send form)."""
        assert self.app.digest is not None
        (who,) = [r for r in self.config.reviewers if r.id == reviewer]
        link = self.app.digest.link_for(reviewer, self.app.digest.items_for(who))
        page = self.get("", dict(parse_qsl(urlsplit(link).query)))
        assert page["statusCode"] == 200, page["body"]
        return dict(_HIDDEN.findall(page["body"]))

    # -- requests as API Gateway sends them ------------------------------------------------------

    def get(self, approval_id: str, query: Mapping[str, str] | None) -> dict[str, Any]:
        """GET /approvals/{id} (or /approvals when the id is empty)."""
        return self.invoke(event("GET", approval_id, query))

    def post(
        self,
        approval_id: str,
        body: bytes | str,
        headers: Mapping[str, str] = SAME_ORIGIN,
        query: Mapping[str, str] | None = None,
        *,
        binary: bool = False,
    ) -> dict[str, Any]:
        """POST /approvals/{id} (or /approvals); bytes that are not UTF-8 arrive base64-encoded, as
        API Gateway passes a binary body (``binary``: any body, as for a binary media type)."""
        return self.invoke(event("POST", approval_id, query, headers, body, binary=binary))

    def slack_post(self, body: bytes, headers: Mapping[str, str] | None = None) -> dict[str, Any]:
        """POST /approvals/slack, signed by Slack's signing secret unless ``headers`` are given."""
        sent = signed(body) if headers is None else dict(headers)
        return self.invoke({**event("POST", "", None, sent, body), "routeKey": "POST /approvals/slack"})

    def invoke(self, request: dict[str, Any]) -> dict[str, Any]:
        """Lambda's call of the handler: its logger and metrics decorators flush each invocation."""
        return self.app.handler(request, LambdaContext())  # type: ignore[no-any-return]

    # -- what was stored -----------------------------------------------------------------------

    def written(self, proposal: Proposal) -> list[str]:
        """The proposal's Decisions rows but refusals (decisions, versions, #state) and its inbox events."""
        table = self.aws.names["DecisionsTable"]
        items = self.db.query(
            TableName=table,
            KeyConditionExpression="approval_id = :a",
            ExpressionAttributeValues={":a": {"S": proposal.approval_id}},
            ConsistentRead=True,
        )["Items"]
        rows = [i["reviewer"]["S"] for i in items if not i["reviewer"]["S"].startswith(REFUSED)]
        events = self.db.scan(TableName=self.aws.inbox_table, ConsistentRead=True)["Items"]
        inbox = [i["pk"]["S"] for i in events if proposal.approval_id in i["pk"]["S"]]
        return sorted(rows) + inbox

    def decisions_anywhere(self) -> list[str]:
        """Every decision, version and #state row in the table, whichever proposal (refusals left out)."""
        table = self.aws.names["DecisionsTable"]
        items = self.db.scan(TableName=table, ConsistentRead=True)["Items"]
        return sorted(
            f"{i['approval_id']['S']} {i['reviewer']['S']}"
            for i in items
            if not i["reviewer"]["S"].startswith(REFUSED)
        )

    def version_args(self, proposal: Proposal) -> dict[str, Any]:
        """The arguments of the proposal's first edited version."""
        item = self.db.get_item(
            TableName=self.aws.names["DecisionsTable"],
            Key={"approval_id": {"S": proposal.approval_id}, "reviewer": {"S": "#v1"}},
            ConsistentRead=True,
        )["Item"]
        return json.loads(item["args"]["S"])  # type: ignore[no-any-return]


def event(
    method: str,
    approval_id: str,
    query: Mapping[str, str] | None,
    headers: Mapping[str, str] | None = None,
    body: bytes | str | None = None,
    *,
    binary: bool = False,
) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event for the approval routes; a body API Gateway could not pass as
    UTF-8 text (or any, with ``binary``) comes base64-encoded with ``isBase64Encoded``, as it sends one."""
    raw = body.encode("utf-8") if isinstance(body, str) else body
    encoded = raw is not None and (binary or not _is_utf8(raw))
    if raw is not None:
        body = base64.b64encode(raw).decode("ascii") if encoded else raw.decode("utf-8")
    route = "/approvals/{id}" if approval_id else "/approvals"
    return {
        "routeKey": f"{method} {route}",
        "requestContext": {"http": {"method": method, "sourceIp": "198.51.100.9"}, "domainName": HOST},
        "pathParameters": {"id": approval_id} if approval_id else None,
        "queryStringParameters": dict(query) if query else None,
        "headers": dict(headers or {"host": HOST}),
        "body": body,
        "isBase64Encoded": encoded,
    }


def _is_utf8(data: bytes) -> bool:
    return data.decode("utf-8", "replace").encode("utf-8") == data


def signed(body: bytes, now: int | None = None) -> dict[str, str]:
    """Slack's signature headers for ``body`` (lower-case names, as the handler reads them)."""
    source = SourceConfig(name="slack-approvals", scheme="slack", secrets=("-",))
    headers = sign(source, SIGNING, body, int(time.time() if now is None else now))
    return {"content-type": FORM, **{k.lower(): v for k, v in headers.items()}}


def slack_form(payload: Any) -> bytes:
    """Slack's interaction body: the one ``payload`` field, its JSON form-encoded."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return urlencode({"payload": text}).encode()


def environment(aws: Aws, config: Path, slack: SlackStub) -> dict[str, str]:
    """The callback's environment as template.yaml sets it, pointed at moto and the Slack stand-in."""
    return {
        "APPROVALS_TABLE": aws.names["ApprovalsTable"],
        "DECISIONS_TABLE": aws.names["DecisionsTable"],
        "INBOX_TABLE": aws.inbox_table,
        "INBOX_QUEUE_URL": aws.queue_url,
        "LINK_RESEND_TABLE": aws.state_table,
        "SHOP_FROM_ADDRESS": "support@shop.example.com",
        "APPROVAL_LINK_SECRET_ARN": "env:TEST_LINK_SECRET",
        "TEST_LINK_SECRET": LINK_SECRET,
        "TEST_SLACK_SIGNING": SIGNING,
        "TEST_SLACK_BOT": slack.bot_token,
        "SLACK_API_URL": slack.api_url,
        "SLACK_RESPONSE_URL_PREFIX": slack.response_prefix,
        "LOCKGATE_CONFIG": str(config),
        "POWERTOOLS_SERVICE_NAME": "lockgate",  # as template.yaml's Globals set them
        "POWERTOOLS_METRICS_NAMESPACE": "Lockgate",
    }
