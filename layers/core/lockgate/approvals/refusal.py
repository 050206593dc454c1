"""Defence in depth for the approval pages: where a POST came from, and the one page every refusal shows.

A browser states where a form post came from in ``Sec-Fetch-Site`` and ``Origin``. A post that says
it came from another site is refused even when its form token is valid (the token alone stood
between a leaked page and a forged decision). A client that sends neither header (an old browser, a
script) falls back to the token. Every failed link, form or origin check gets the same page and
status, so a link holder cannot tell which part of a link verified; the reason goes to the log.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from lockgate.approvals.pages import Page, outcome_page

# "same-site" is refused too: a sibling subdomain is not necessarily ours.
ACCEPTED_FETCH_SITES = frozenset({"same-origin", "none"})
UNUSABLE_STATUS = 403


def cross_site_reason(headers: Mapping[str, str]) -> str | None:
    """Why a POST's ``Sec-Fetch-Site`` / ``Origin`` headers say another site sent it; None if they do not.

    ``headers`` has lower-case names and includes ``host``. Absent headers are not a refusal.
    """
    fetch_site = headers.get("sec-fetch-site")
    site = None if fetch_site is None else fetch_site.strip().lower()
    if site is not None and site not in ACCEPTED_FETCH_SITES:
        return f"sec-fetch-site {site[:20]}"
    origin = headers.get("origin")
    if origin is None:
        return None
    if origin.strip().lower() == "null":
        # Our pages send "Referrer-Policy: no-referrer", under which browsers post even a same-origin
        # form with "Origin: null"; only Sec-Fetch-Site can then vouch. Without it, an opaque origin
        # (a sandboxed frame, a data: URL) is refused.
        return None if site is not None else "origin null"
    host = headers.get("host", "").strip().lower()
    try:
        parts = urlsplit(origin.strip())
        netloc, scheme = parts.netloc.lower(), parts.scheme.lower()
    except ValueError:
        return "origin malformed"
    if scheme not in ("https", "http") or not host or netloc != host:
        return "origin cross-site"
    return None


def unusable_page() -> Page:
    """The one page for any link or form that does not check out; it never says which check failed."""
    return outcome_page(
        "This link cannot be used",
        "Nothing was decided. Open the newest link from your notification, or ask for a new one.",
        status=UNUSABLE_STATUS,
    )
