"""Approval side Lambdas (one package, two functions with different roles):

- ApprovalCallbackFunction: GET /approvals/{id} (confirmation page, changes nothing) and
  POST /approvals/{id} (a reviewer's decision); GET /approvals (a reviewer's digest, no links) and
  POST /approvals (re-send one proposal's link privately); POST /approvals/slack (a click on a Slack
  message's Approve / Edit / Reject button, or the edit form's submission). Only this role may write
  Decisions.
- ApprovalNotifierFunction: the Approvals table's stream (each new proposal → signed links, and its
  Slack message) and the Decisions table's (each new decision → that Slack message updated).
Only the approval side can read the link-signing secret.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Logger, Metrics

from lockgate.approvals.pages import outcome_page, parse_form
from lockgate.config import load_config
from lockgate.runtime.approvals import build_approvals
from lockgate.runtime.deps import lambda_deps
from lockgate.settings import ApprovalSettings
from lockgate.telemetry import expect_empty_metrics

expect_empty_metrics()  # an invocation that adds no metric is normal: no warning for it
logger = Logger()
metrics = Metrics()
settings = ApprovalSettings.from_env(os.environ)
parts = build_approvals(
    settings,
    load_config(Path(__file__).parent / settings.config_path, settings.stage),
    lambda_deps(os.environ, logger, metrics, timeout_seconds=settings.timeout_seconds),
)
desk, digest, notifier, reissuer = parts.desk, parts.digest, parts.notifier, parts.reissuer
slack, stream = parts.slack, parts.stream


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """A stream batch (notify, update) or an HTTP request (page / decision)."""
    if "Records" in event:
        return notify_batch(event)
    return http(event)


def notify_batch(event: dict[str, Any]) -> dict[str, Any]:
    """New proposals → notifications, new decisions → Slack updates; failed records are reported."""
    return stream.handle(event)


def http(event: dict[str, Any]) -> dict[str, Any]:
    """GET shows the confirmation page; POST decides. Anything else: a clear page."""
    if desk is None:
        return outcome_page("Not found", "Nothing here.", status=404).to_apigw()
    request_context = event.get("requestContext", {})
    http_context = request_context.get("http", {})
    method = http_context.get("method", "GET")
    approval_id = (event.get("pathParameters") or {}).get("id", "")
    query = {str(k): str(v) for k, v in (event.get("queryStringParameters") or {}).items()}
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    form: dict[str, str] = {}
    if method == "POST":
        raw = event.get("body") or ""
        try:  # API Gateway encodes a body itself; one that is not base64 was not sent through it
            body = base64.b64decode(raw, validate=True) if event.get("isBase64Encoded") else raw.encode()
        except ValueError:
            return outcome_page("Bad request", "Nothing was decided.", status=400).to_apigw()
        if event.get("routeKey") == "POST /approvals/slack":  # Slack's signed clicks and edit forms
            if slack is None:
                return outcome_page("Not found", "Slack approvals are not configured.", status=404).to_apigw()
            return slack.handle(body, headers).to_apigw()
        form = parse_form(body, headers.get("content-type", ""))
    if not approval_id:  # /approvals?…: a reviewer's batch-review digest; POST re-sends one link
        if method == "GET" and digest is not None:
            return digest.page(query).to_apigw()
        if method == "POST" and reissuer is not None:
            source_ip = str(http_context.get("sourceIp", ""))
            domain = str(request_context.get("domainName", ""))  # API Gateway's, not a client's Host
            return reissuer.reissue(form, headers, source_ip, domain).to_apigw()
        return outcome_page("Not found", "Nothing was decided.", status=404).to_apigw()
    if method == "GET":
        return desk.show(approval_id, query).to_apigw()
    if method == "POST":
        return desk.decide(approval_id, query, form, headers).to_apigw()
    return outcome_page("Method not allowed", "Nothing was decided.", status=405).to_apigw()
