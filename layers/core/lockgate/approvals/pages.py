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
REASON_FIELD = "reason"  # a rejection's optional reason
SEEN_FIELD = "seen"  # the fingerprint of the version the page showed: a decision counts for it only
EDIT_PREFIX = "edit."  # "edit.amount": a new value for an editable field ("Approve with changes")


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


def outcome_page(title: str, message: str, *, status: int) -> Page:
    """A result or error page; callers pass fixed wording, never why a signature failed."""
    return Page(status, document(title, f"<h1>{esc(title)}</h1>\n<p>{esc(message)}</p>\n"))


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
        return Page(200, document("Nothing waiting", body))
    action, fields = resend
    hidden = "".join(hidden_field(name, value) for name, value in fields.items())
    rows = "".join(
        f"<li>{esc(item.summary)}<br>"
        f"<span class=meta>{esc(item.why)} · expires {esc(time_left(item.expires_at, now))}</span>\n"
        f'<form method=post action="{esc(action)}">{hidden}<button type=submit name=approval '
        f'value="{esc(item.approval_id)}">Email me its link</button></form></li>\n'
        for item in items
    )
    body = (
        f"<h1>{len(items)} waiting for {esc(reviewer)}</h1>\n"
        "<p class=note>Nothing is decided from this list: each request is decided from its own link, "
        "sent to you privately. Lost one? Ask for it again below.</p>\n"
        f"<ul>\n{rows}</ul>\n"
    )
    return Page(200, document("Waiting for your decision", body))


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


def hidden_field(name: str, value: str) -> str:
    """A hidden form field, escaped."""
    return f'<input type=hidden name="{esc(name)}" value="{esc(value)}">\n'


def utc_time(epoch: int) -> str:
    """Epoch seconds as "2026-12-01 16:00 UTC", escaped; a stored absurd value never breaks the page."""
    try:
        return esc(datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC"))
    except (OverflowError, OSError, ValueError, TypeError):
        return esc(f"{epoch} (epoch seconds)")


def time_left(target: int, now: int) -> str:
    """How long until ``target``: "in 3 hours 5 minutes", "already expired"."""
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


def esc(value: object) -> str:
    """Any value as inert HTML text (quotes too: safe inside attributes)."""
    return escape(str(value), quote=True)


def document(title: str, body: str) -> str:
    """A whole page: phone-first, no script, no referrer, not indexed."""
    return f"""<!doctype html>
<html lang=en>
<head>
<meta charset=utf-8>
<meta name=viewport content="width=device-width, initial-scale=1">
<meta name=referrer content=no-referrer>
<meta name=robots content="noindex, nofollow">
<title>{esc(title)} · Lockgate</title>
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
.flag{font-weight:700;color:#7a1410;margin:.3rem 0}
h3{font-size:1rem;margin:.8rem 0 .2rem}
.reason{margin:.3rem 0 .3rem 0;padding:.3rem .6rem;border-left:3px solid #b3261e;background:#fff;
 white-space:pre-wrap;overflow-wrap:anywhere}
.after li{margin:.3rem 0}
label{display:block;margin-top:1rem;font-weight:600}
textarea{box-sizing:border-box;width:100%;font:inherit;padding:.4rem;margin-top:.3rem}
.buttons{display:flex;gap:1rem;margin-top:1rem}
button{flex:1;min-height:3.5rem;font-size:1.15rem;font-weight:600;border-radius:.4rem;
 border:2px solid;cursor:pointer}
.approve{background:#e6f4ea;border-color:#1e7b34;color:#0d4a1c}
.reject{background:#fbe9e7;border-color:#b3261e;color:#7a1410}
.edit{background:#e8eefb;border-color:#2a4d9b;color:#13254d}
input[type=text]{box-sizing:border-box;width:100%;font:inherit;padding:.4rem;margin-top:.3rem}
del{background:#fbe9e7}ins{background:#e6f4ea;text-decoration:none;font-weight:600}
"""
