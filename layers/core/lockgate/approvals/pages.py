"""Server-rendered approval pages: plain HTML, no JavaScript, every value escaped.

Pages are built only from the stored proposal and the verified link. Nothing
here decides anything: the GET page changes nothing, and the POST is decided
by the caller before it renders an outcome.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import parse_qsl

FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"
MAX_FORM_BYTES = 8 * 1024
MAX_FORM_FIELDS = 32
LINK_FIELDS = ("r", "e", "n", "d", "s")
FORM_TOKEN_FIELD = "form_token"  # noqa: S105 - a field name, not a secret
DECISION_FIELD = "decision"
UNVERIFIED_LABEL = "The assistant's reason (unverified — written by the AI, not checked):"
# A value this long, or on several lines, is shown whole in a <pre> block (e.g. an email body).
_INLINE_MAX_CHARS = 80


def security_headers() -> dict[str, str]:
    """Headers every approval page sends: never cached, never framed, never leaked in a Referer."""
    return {
        "content-type": "text/html; charset=utf-8",
        "cache-control": "no-store",
        "pragma": "no-cache",
        "x-frame-options": "DENY",
        "content-security-policy": (
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
            "frame-ancestors 'none'; base-uri 'none'"
        ),
        # Links carry signatures: the page must never send its URL to another site.
        "referrer-policy": "no-referrer",
        "x-content-type-options": "nosniff",
    }


@dataclass(frozen=True)
class Page:
    """A rendered page with its status and security headers."""

    status: int
    body: str
    headers: dict[str, str] = field(default_factory=security_headers)

    def to_apigw(self) -> dict[str, Any]:
        """The Lambda proxy (API Gateway) response for this page."""
        return {
            "statusCode": self.status,
            "headers": dict(self.headers),
            "body": self.body,
            "isBase64Encoded": False,
        }


@dataclass(frozen=True)
class ProposalView:
    """What a reviewer sees of a stored proposal; every field is shown escaped."""

    approval_id: str
    task: str
    tool: str
    summary: str
    details: list[tuple[str, str]]
    unverified_reason: str
    why_asked: list[str]
    expires_at: int
    created_at: int
    reviewers_required: int
    decisions: list[tuple[str, str, int]]


def confirmation_page(
    view: ProposalView, reviewer: str, form_action: str, form_token: str, query: str, now: int
) -> Page:
    """The GET page: what would happen, why a person is asked, and an Approve / Reject form."""
    mine = [d for d in view.decisions if d[0] == reviewer]
    if mine:
        action = (
            f"<p class=note>You already decided: <strong>{_e(mine[-1][1])}</strong> at {_when(mine[-1][2])}. "
            "Each reviewer decides once.</p>"
        )
    elif now > view.expires_at:
        action = "<p class=note>This request has expired. It can no longer be approved.</p>"
    else:
        action = _form(form_action, form_token, query)
    body = f"""
<p class=warn><strong>Nothing has happened yet.</strong> Opening this link changed nothing.
It runs only if it is approved on this page.</p>
<h1>{_e(view.summary)}</h1>
<p class=meta>Task {_e(view.task)} · tool {_e(view.tool)} · request {_e(view.approval_id)}
· asked {_when(view.created_at)}</p>
<h2>What exactly would happen</h2>
<p class=meta>The assistant's arguments. Amounts, orders and recipients were checked against our own
records; free text (such as a reason) was written by the AI and was not.</p>
{_details(view.details)}
<h2>{_e(UNVERIFIED_LABEL)}</h2>
<blockquote class=unverified>{_e(view.unverified_reason) or "<em>(no reason given)</em>"}</blockquote>
<h2>Why you are asked</h2>
{_list(view.why_asked)}
<h2>Decision</h2>
<p>Expires {_when(view.expires_at)} ({_e(_relative(view.expires_at, now))}).</p>
{_progress(view)}
<p>Deciding as <strong>{_e(reviewer)}</strong>.</p>
{action}
"""
    return Page(200, _document(view.summary, body))


def outcome_page(title: str, message: str, *, status: int) -> Page:
    """A result or error page; callers pass fixed wording, never why a signature failed."""
    return Page(status, _document(title, f"<h1>{_e(title)}</h1>\n<p>{_e(message)}</p>\n"))


@dataclass(frozen=True)
class DigestItem:
    """One waiting proposal in a reviewer's digest; ``link`` (their own) only in the private message."""

    summary: str
    why: str
    expires_at: int
    link: str
    approval_id: str = ""


def digest_page(reviewer: str, items: list[DigestItem], now: int, resend: tuple[str, dict[str, str]]) -> Page:
    """Batch review: what waits for this reviewer, no decision links; each item's link is re-sent by POST."""
    if not items:
        body = "<h1>Nothing is waiting for you</h1>\n<p>No proposals need your decision right now.</p>\n"
        return Page(200, _document("Nothing waiting", body))
    action, fields = resend
    hidden = "".join(_hidden(name, value) for name, value in fields.items())
    rows = "".join(
        f"<li>{_e(item.summary)}<br>"
        f"<span class=meta>{_e(item.why)} · expires {_e(_relative(item.expires_at, now))}</span>\n"
        f'<form method=post action="{_e(action)}">{hidden}<button type=submit name=approval '
        f'value="{_e(item.approval_id)}">Email me its link</button></form></li>\n'
        for item in items
    )
    body = (
        f"<h1>{len(items)} waiting for {_e(reviewer)}</h1>\n"
        "<p class=note>Nothing is decided from this list: each request is decided from its own link, "
        "sent to you privately. Lost one? Ask for it again below.</p>\n"
        f"<ul>\n{rows}</ul>\n"
    )
    return Page(200, _document("Waiting for your decision", body))


def parse_form(body: bytes, content_type: str) -> dict[str, str]:
    """Fields of a small url-encoded form (last value wins); anything else is an empty dict. Never raises."""
    if not isinstance(content_type, str) or not isinstance(body, bytes | bytearray | memoryview):
        return {}
    media_type, _, params = content_type.partition(";")
    if media_type.strip().lower() != FORM_CONTENT_TYPE or len(body) > MAX_FORM_BYTES:
        return {}
    charset = params.strip().lower().replace(" ", "")
    if charset not in ("", "charset=utf-8", 'charset="utf-8"'):
        return {}
    try:
        text = bytes(body).decode("utf-8")
        # errors="strict": a percent-encoded invalid UTF-8 sequence refuses the form instead of guessing.
        pairs = parse_qsl(text, keep_blank_values=True, errors="strict", max_num_fields=MAX_FORM_FIELDS)
    except ValueError:  # UnicodeDecodeError is a ValueError, and so is "too many fields"
        return {}
    return dict(pairs)


def _form(form_action: str, form_token: str, query: str) -> str:
    link = {key: value for key, value in parse_qsl(query, keep_blank_values=True) if key in LINK_FIELDS}
    hidden = "".join(_hidden(name, link.get(name, "")) for name in LINK_FIELDS)
    # Reject first and the same size as Approve; no autofocus, so neither is the default.
    return f"""<form method=post action="{_e(form_action)}">
{hidden}{_hidden(FORM_TOKEN_FIELD, form_token)}
<div class=buttons>
<button type=submit name={DECISION_FIELD} value=reject class=reject>Reject</button>
<button type=submit name={DECISION_FIELD} value=approve class=approve>Approve</button>
</div>
</form>"""


def _hidden(name: str, value: str) -> str:
    return f'<input type=hidden name="{_e(name)}" value="{_e(value)}">\n'


def _details(details: list[tuple[str, str]]) -> str:
    if not details:
        return "<p><em>(no details)</em></p>"
    rows = []
    for label, value in details:
        text = str(value)
        shown = (
            f"<pre>{_e(text)}</pre>"
            if "\n" in text or len(text) > _INLINE_MAX_CHARS
            else f"<span class=value>{_e(text)}</span>"
        )
        rows.append(f"<dt>{_e(label)}</dt><dd>{shown}</dd>")
    return "<dl>" + "\n".join(rows) + "</dl>"


def _list(items: list[str]) -> str:
    if not items:
        return "<p><em>(no reason recorded)</em></p>"
    return "<ul>" + "".join(f"<li>{_e(item)}</li>" for item in items) + "</ul>"


def _progress(view: ProposalView) -> str:
    approvals = len({who for who, decision, _ in view.decisions if decision == "approve"})
    lines = [
        f"<li>{_e(who)}: <strong>{_e(decision)}</strong> at {_when(at)}</li>"
        for who, decision, at in view.decisions
    ]
    count = (
        f"<p>{approvals} of {view.reviewers_required} approvals so far.</p>"
        if view.reviewers_required > 1
        else "<p>One approval is needed.</p>"
    )
    already = (
        f"<p>Already decided:</p><ul>{''.join(lines)}</ul>" if lines else "<p>No one has decided yet.</p>"
    )
    return count + "\n" + already


def _when(epoch: int) -> str:
    try:
        return _e(datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC"))
    except (OverflowError, OSError, ValueError, TypeError):
        return _e(f"{epoch} (epoch seconds)")


def _relative(target: int, now: int) -> str:
    seconds = int(target) - int(now)
    if seconds < 0:
        return "already expired"
    hours, minutes = divmod(seconds // 60, 60)
    if hours:
        return (
            f"in {_plural(hours, 'hour')} {_plural(minutes, 'minute')}"
            if minutes
            else f"in {_plural(hours, 'hour')}"
        )
    return f"in {_plural(minutes, 'minute')}" if minutes else "in less than a minute"


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _document(title: str, body: str) -> str:
    return f"""<!doctype html>
<html lang=en>
<head>
<meta charset=utf-8>
<meta name=viewport content="width=device-width, initial-scale=1">
<meta name=referrer content=no-referrer>
<meta name=robots content="noindex, nofollow">
<title>{_e(title)} · Lockgate</title>
<style>{_CSS}</style>
</head>
<body>
<main>
{body}</main>
</body>
</html>
"""


_CSS = """
body{margin:0;font:17px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
 color:#111;background:#f6f6f4}
main{max-width:40rem;margin:0 auto;padding:1rem}
h1{font-size:1.4rem;line-height:1.3;overflow-wrap:anywhere}
h2{font-size:1.05rem;margin-top:1.5rem}
dt{font-weight:600;margin-top:.6rem}
dd{margin:0;overflow-wrap:anywhere}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#fff;border:1px solid #ccc;
 padding:.6rem;font-size:.95rem}
.meta{color:#555;font-size:.9rem;overflow-wrap:anywhere}
.warn{background:#fff7d6;border:1px solid #e0c45c;padding:.6rem}
.note{background:#eee;padding:.6rem}
.unverified{white-space:pre-wrap;overflow-wrap:anywhere;margin:0;padding:.6rem;
 background:#fff;border-left:4px solid #b58900}
.buttons{display:flex;gap:1rem;margin-top:1rem}
button{flex:1;min-height:3.5rem;font-size:1.15rem;font-weight:600;border-radius:.4rem;
 border:2px solid;cursor:pointer}
.approve{background:#e6f4ea;border-color:#1e7b34;color:#0d4a1c}
.reject{background:#fbe9e7;border-color:#b3261e;color:#7a1410}
"""
