"""The demo's approval walk-through: a person opens their link, reads the page, approves through the form.

Everything goes over HTTP to the embedded gateway, as a browser would: GET the link (changes
nothing), read the hidden form fields, POST Approve, then POST the same form again.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from html import unescape

from lockgate.approvals.desk import LinkSigner
from lockgate.approvals.pages import EDIT_PREFIX, REASON_FIELD
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.clock import SystemClock
from lockgate.config import ApprovalsConfig
from lockgate_infra.local.loopback import request
from lockgate_infra.local.stack import LocalStack

HIDDEN = re.compile(r'<input type="?hidden"? name="([^"]+)" value="([^"]*)"')


@dataclass(frozen=True)
class Step:
    """One HTTP exchange of the walk-through."""

    label: str
    status: int
    title: str


def local_signer(stack: LocalStack, config: ApprovalsConfig, base_url: str) -> LinkSigner:
    """Links signed with the embedded stack's generated link secret, as the notifier signs them."""
    secret = stack.client("secretsmanager").get_secret_value(SecretId=stack.resources["ApprovalLinkSecret"])
    return LinkSigner(config, lambda: [secret["SecretString"].encode()], SystemClock(), base_url)


def pending_proposals(stack: LocalStack) -> list[Proposal]:
    """Every proposal in the embedded Approvals table."""
    store = ProposalStore(stack.client("dynamodb"), stack.resources["ApprovalsTable"])
    items = stack.client("dynamodb").scan(TableName=stack.resources["ApprovalsTable"])["Items"]
    return [p for p in (store.get(i["approval_id"]["S"]) for i in items) if p is not None]


def walk(link: str) -> list[Step]:
    """Open the link, check the page, approve, then click Approve again."""
    return decide(link, "approve", again=True)


def decide(
    link: str,
    decision: str,
    *,
    again: bool = False,
    reason: str = "",
    changes: Mapping[str, str] | None = None,
) -> list[Step]:
    """Open the link, then submit its form with ``decision`` (``approve``, ``reject`` or ``edit``);
    ``again``: twice.

    ``reason``: a rejection's reason, typed into the page's field (empty: none given); ``changes``:
    the editable fields' new values, for "Approve with these changes" (``edit``).
    """
    status, page = _request(link)
    steps = [Step("open the link (GET: changes nothing)", status, _title(page))]
    fields = {unescape(k): unescape(v) for k, v in HIDDEN.findall(page)}
    if status != 200 or "form_token" not in fields:
        return steps
    action = urllib.parse.urlsplit(link)._replace(query="").geturl()
    given = {REASON_FIELD: reason} if reason else {}
    given |= {f"{EDIT_PREFIX}{name}": value for name, value in (changes or {}).items()}
    form = urllib.parse.urlencode({**fields, "decision": decision, **given}).encode()
    for label in (f"click {decision.capitalize()} (POST)", f"click {decision.capitalize()} again")[
        : 1 + again
    ]:
        status, page = _request(action, form)
        steps.append(Step(label, status, _title(page)))
    return steps


def page_text(link: str) -> str:
    """The confirmation page's HTML (for checks)."""
    return _request(link)[1]


def _request(url: str, form: bytes | None = None) -> tuple[int, str]:
    headers = {"content-type": "application/x-www-form-urlencoded"} if form is not None else {}
    return request(url, form, headers)


def _title(page: str) -> str:
    match = re.search(r"<h1>(.*?)</h1>", page, re.S)
    return unescape(match.group(1)).strip() if match else ""
