"""Approval side Lambdas (one package, two functions with different roles):

- ApprovalCallbackFunction: GET /approvals/{id} (confirmation page, changes nothing) and
  POST /approvals/{id} (a reviewer's decision). Only this role may write Decisions.
- ApprovalNotifierFunction: the Approvals table's stream; each new proposal → signed links.
Only the approval side can read the link-signing secret.
"""

from __future__ import annotations

import base64
import functools
import os
import sys
from pathlib import Path
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics

from lockgate.approvals.decisions import DecisionStore
from lockgate.approvals.desk import ApprovalDesk, LinkSigner
from lockgate.approvals.digest import ReviewDigest
from lockgate.approvals.notify import Channel, EmailChannel, Notifier, PrintChannel, WebhookChannel, post_json
from lockgate.approvals.pages import outcome_page, parse_form
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.clock import SystemClock
from lockgate.config import load_config
from lockgate.errors import ConfigError
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.secrets import SecretResolver
from lockgate.settings import ApprovalSettings

logger = Logger()
metrics = Metrics()
settings = ApprovalSettings.from_env(os.environ)
config = load_config(Path(__file__).parent / settings.config_path)
session = boto3.session.Session()
dynamodb = session.client("dynamodb")
clock = SystemClock()
secrets = SecretResolver(os.environ, secretsmanager=lambda: session.client("secretsmanager"))
proposals = ProposalStore(dynamodb, settings.approvals_table)


def link_secrets() -> list[bytes]:
    """The link-signing key(s); cached by the resolver, refreshed every few minutes."""
    return [secrets.resolve(settings.link_secret_ref).encode()]


def build_desk() -> ApprovalDesk | None:
    """The callback's desk; the notifier's role has no decisions table, so it gets none."""
    if not (settings.decisions_table and settings.inbox_table and settings.inbox_queue_url):
        return None
    return ApprovalDesk(
        proposals=proposals,
        decisions=DecisionStore(dynamodb, settings.decisions_table),
        config=config.approvals,
        link_secrets=link_secrets,
        inbox=InboxStore(dynamodb, settings.inbox_table),
        queue=InboxQueue(session.client("sqs"), settings.inbox_queue_url),
        clock=clock,
        log=logger,
        metrics=metrics,
        base_url=settings.base_url,
    )


def build_channels() -> list[Channel]:
    """The configured channels (APPROVAL_CHANNELS): email (SES), slack, discord deployed; print locally."""
    channels: list[Channel] = []
    for name in settings.channels:
        if name == "email":
            channels.append(EmailChannel(session.client("ses"), settings.from_address))
        elif name == "print":
            channels.append(PrintChannel(lambda line: print(line, file=sys.stderr, flush=True)))
        elif name in ("slack", "discord"):
            # e.g. APPROVAL_SLACK_WEBHOOK_REF=secretsmanager:lockgate/notify/slack; resolved per send.
            ref = os.environ.get(f"APPROVAL_{name.upper()}_WEBHOOK_REF", "").strip()
            if not ref:
                raise ConfigError(f"the {name} channel needs APPROVAL_{name.upper()}_WEBHOOK_REF")
            channels.append(WebhookChannel(name, functools.partial(secrets.resolve, ref), post_json))
        else:
            raise ConfigError(f"unknown approval channel {name!r} (email, slack, discord, print)")
    return channels


desk = build_desk()
signer = LinkSigner(config.approvals, link_secrets, clock, settings.base_url)
digest = (
    ReviewDigest(
        proposals=proposals,
        decisions=DecisionStore(dynamodb, settings.decisions_table),
        config=config.approvals,
        signer=signer,
        link_secrets=link_secrets,
        clock=clock,
        base_url=settings.base_url,
    )
    if settings.decisions_table
    else None
)
notifier = Notifier(signer.links_for, config.approvals.reviewers_for, build_channels(), logger, metrics)


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """A stream batch (notify) or an HTTP request (page / decision)."""
    if "Records" in event:
        return notify_batch(event)
    return http(event)


def notify_batch(event: dict[str, Any]) -> dict[str, Any]:
    """New proposals → notifications; a failed record is reported so the stream retries it."""
    failures = []
    for record in event.get("Records", []):
        if record.get("eventName") != "INSERT":
            continue
        try:
            notifier.notify(Proposal.from_item(record["dynamodb"]["NewImage"]))
        except Exception:  # noqa: BLE001 - reported to Lambda as a failed record, retried, then DLQ
            logger.exception("notification failed; the record will be retried")
            failures.append({"itemIdentifier": record["dynamodb"]["SequenceNumber"]})
    return {"batchItemFailures": failures}


def http(event: dict[str, Any]) -> dict[str, Any]:
    """GET shows the confirmation page; POST decides. Anything else: a clear page."""
    if desk is None:
        return outcome_page("Not found", "Nothing here.", status=404).to_apigw()
    method = event.get("requestContext", {}).get("http", {}).get("method", "GET")
    approval_id = (event.get("pathParameters") or {}).get("id", "")
    query = {str(k): str(v) for k, v in (event.get("queryStringParameters") or {}).items()}
    if not approval_id:  # GET /approvals?…: a reviewer's batch-review digest
        if method != "GET" or digest is None:
            return outcome_page("Not found", "Nothing was decided.", status=404).to_apigw()
        return digest.page(query).to_apigw()
    if method == "GET":
        return desk.show(approval_id, query).to_apigw()
    if method == "POST":
        raw = event.get("body") or ""
        body = base64.b64decode(raw) if event.get("isBase64Encoded") else raw.encode()
        headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
        return desk.decide(approval_id, query, parse_form(body, headers.get("content-type", ""))).to_apigw()
    return outcome_page("Method not allowed", "Nothing was decided.", status=405).to_apigw()
