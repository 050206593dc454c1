"""Notifying reviewers of a new proposal: one signed link per reviewer, on their channels.

A failed notification never loses the proposal: the stream record is reported as failed and
retried (then set aside in a DLQ), and the proposal stays listed (`lockgate approvals list`).
Notification text is short: the code-built summary and the link, no private data beyond it.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from lockgate import tracing
from lockgate.approvals.proposals import Proposal
from lockgate.config import Reviewer
from lockgate.errors import ConfigError
from lockgate.telemetry import Log, Metrics

WEBHOOK_TIMEOUT_SECONDS = 5.0
# Slack reads <!channel>, <!everyone> and <url|label> in text: escape the three characters it parses.
_SLACK_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
# Discord renders markdown, including masked links: a backslash makes each character literal.
_DISCORD_ESCAPES = str.maketrans({c: f"\\{c}" for c in "\\*_~`|[]()<>#-:"})


class Channel(Protocol):
    """A way to reach a reviewer."""

    name: str

    def send(self, reviewer: Reviewer, proposal: Proposal, link: str) -> None:
        """Deliver one notification; raise on failure (the record is retried).

        Channels with ``shared = True`` get one call per proposal with reviewer and link None.
        """


def message_text(proposal: Proposal) -> str:
    """The short text every channel sends (no arguments beyond the summary); an escalated proposal
    says that nobody decided it in time."""
    if proposal.escalated_at is not None:
        return (
            f"Escalated to you ({proposal.task}): nobody has decided {proposal.summary} yet. "
            "Open your personal link to review; nothing happens unless it is approved."
        )
    return (
        f"Approval needed ({proposal.task}): {proposal.summary}. "
        "Open your personal link to review; nothing happens unless you approve."
    )


class EmailChannel:
    """Email through SES from the deployment's verified address."""

    name = "email"

    def __init__(self, ses: Any, from_address: str) -> None:
        self._ses = ses
        self._from = from_address

    def send(self, reviewer: Reviewer, proposal: Proposal, link: str) -> None:
        """One email to the reviewer's address; skipped when they have none."""
        text = f"{message_text(proposal)}\n\n{link}\n"
        what = "Escalated to you" if proposal.escalated_at is not None else "Approval needed"
        self.send_text(reviewer, f"{what}: {proposal.summary}", text)

    def send_text(self, reviewer: Reviewer, subject: str, text: str) -> bool:
        """A plain-text email to this reviewer only (its links are theirs); False without an address."""
        if not reviewer.email:
            return False
        self._ses.send_email(
            Source=self._from,
            Destination={"ToAddresses": [reviewer.email]},
            Message={"Subject": {"Data": subject[:200]}, "Body": {"Text": {"Data": text}}},
        )
        return True


class WebhookChannel:
    """Slack incoming webhook or Discord webhook; Discord gets allowed_mentions empty, so no pings.

    A team channel is shared, and a reviewer's link is a credential (whoever holds it decides as that
    reviewer), so webhook channels announce the proposal once, without links: the links go only to
    each reviewer's own address, and `lockgate approvals list` shows what waits.
    """

    shared = True

    def __init__(self, name: str, url: Callable[[], str], post: Callable[[str, bytes], None]) -> None:
        if name not in ("slack", "discord"):
            raise ConfigError(f"unknown webhook channel {name!r} (slack, discord)")
        self.name = name
        self._url = url  # resolved per send: a secret, rotated without a redeploy
        self._post = post

    def send(self, reviewer: Reviewer | None, proposal: Proposal, link: str | None) -> None:
        """Announce the proposal (no link); the text is escaped so it can ping no one."""
        text = f"{message_text(proposal)} Reviewers: your personal link is in your email."
        if self.name == "discord":
            payload: dict[str, Any] = {
                "content": text.translate(_DISCORD_ESCAPES),
                "allowed_mentions": {"parse": []},
            }
        else:
            payload = {"text": text.translate(_SLACK_ESCAPES)}
        url = self._url()
        require_https(url)
        self._post(url, json.dumps(payload).encode())


def require_https(url: str) -> None:
    """Refuse a webhook URL that is not https (the link in the message is a credential)."""
    if not url.lower().startswith("https://"):
        raise ConfigError("webhook URLs must be https://")


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a 3xx becomes an HTTPError: never follow a webhook somewhere else


def post_json(url: str, body: bytes) -> None:
    """POST a JSON body to an https webhook, with a short timeout; raise on any non-2xx answer."""
    require_https(url)
    send_post(url, body, {"Content-Type": "application/json"})


def send_post(url: str, body: bytes, headers: Mapping[str, str]) -> bytes:
    """POST with a short timeout, never following a redirect; the answer's body. The caller checks the URL."""
    request = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")  # noqa: S310
    with urllib.request.build_opener(_NoRedirects).open(request, timeout=WEBHOOK_TIMEOUT_SECONDS) as response:
        if not 200 <= response.status < 300:
            raise OSError(f"webhook answered {response.status}")
        return bytes(response.read(1_048_576))


class PersonalChannel(Protocol):
    """A channel that reaches one reviewer privately, so it may carry their links (the digest)."""

    name: str

    def send_text(self, reviewer: Reviewer, subject: str, text: str) -> bool:
        """Send to this reviewer only; False if they cannot be reached this way."""
        ...


class PrintChannel:
    """The embedded stack's channel: print the link (a local credential, fine on your own machine)."""

    name = "print"

    def __init__(self, sink: Callable[[str], None], outbox: list[dict[str, str]] | None = None) -> None:
        self._sink = sink
        self.outbox = outbox if outbox is not None else []

    def send(self, reviewer: Reviewer, proposal: Proposal, link: str) -> None:
        """Print and keep the link for the local approvals page."""
        self.outbox.append(
            {
                "reviewer": reviewer.id,
                "approval_id": proposal.approval_id,
                "summary": proposal.summary,
                "link": link,
            }
        )
        self._sink(f"[approval] {reviewer.id}: {proposal.summary} -> {link}")

    def send_text(self, reviewer: Reviewer, subject: str, text: str) -> bool:
        """Print a message for one reviewer (the local digest)."""
        self._sink(f"[{reviewer.id}] {subject}\n{text}")
        return True


class Notifier:
    """Sends each reviewer of a new proposal their own link on every channel."""

    def __init__(
        self,
        links: Callable[[Proposal], Mapping[str, str]],
        reviewers: Callable[[str], Sequence[Reviewer]],
        channels: Sequence[Channel],
        log: Log,
        metrics: Metrics,
    ) -> None:
        self._links = links
        self._reviewers = reviewers
        self._channels = channels
        self._log = log
        self._metrics = metrics

    def notify(self, proposal: Proposal, only: Sequence[str] | None = None) -> None:
        """Notify everyone (``only``: just these reviewers, as an escalation does); raise if any channel
        failed, so the stream retries the record."""
        attributes = {"lockgate.approval.id": proposal.approval_id, "lockgate.approval.tool": proposal.tool}
        with tracing.span("notify reviewers", parent=proposal.extra.get("trace"), attributes=attributes):
            self._notify(proposal, only)

    def _notify(self, proposal: Proposal, only: Sequence[str] | None) -> None:
        links = {k: v for k, v in self._links(proposal).items() if only is None or k in only}
        failures = 0
        deliveries: list[tuple[Channel, Reviewer | None, str | None]] = []
        for channel in self._channels:
            if getattr(channel, "shared", False):
                deliveries.append((channel, None, None))  # one announcement, no credentials
                continue
            for person in self._reviewers(proposal.tool):
                if person.id in links:
                    deliveries.append((channel, person, links[person.id]))
        for channel, reviewer, link in deliveries:
            try:
                channel.send(reviewer, proposal, link)  # type: ignore[arg-type]
            except Exception as exc:  # noqa: BLE001 - count, log without the link, retry the record
                failures += 1
                self._log.warning(
                    "notification failed",
                    extra={
                        "approval": proposal.approval_id,
                        "reviewer": reviewer.id if reviewer else "-",
                        "channel": channel.name,
                        "error": type(exc).__name__,
                    },
                )
        self._metrics.add_metric(name="ApprovalNotified", unit="Count", value=1)
        tracing.annotate(
            {"lockgate.notifications": len(deliveries), "lockgate.notifications_failed": failures}
        )
        if failures:
            self._metrics.add_metric(name="ApprovalNotifyFailed", unit="Count", value=failures)
            raise NotificationFailed(f"{failures} notification(s) failed for {proposal.approval_id}")


class NotificationFailed(Exception):  # noqa: N818 - reported to the stream as a failed record
    """At least one channel failed; the stream redelivers the record."""
