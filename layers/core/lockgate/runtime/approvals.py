"""The approval side's object graph: the callback's desk and digest page, the notifier's channels.

One package, two functions with different roles: only the callback has the Decisions table (the
notifier gets no desk), and only the approval side can read the link-signing secret.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lockgate.approvals.checking import CheckVersion, WorkerVersionChecks
from lockgate.approvals.decisions import DecisionStore
from lockgate.approvals.desk import ApprovalDesk, LinkSigner
from lockgate.approvals.digest import ReviewDigest
from lockgate.approvals.notify import (
    Channel,
    EmailChannel,
    Notifier,
    PersonalChannel,
    PrintChannel,
    WebhookChannel,
    post_json,
    send_post,
)
from lockgate.approvals.notify_batch import NotifyBatch
from lockgate.approvals.outcome import ActionOutcomes
from lockgate.approvals.proposals import ProposalStore
from lockgate.approvals.refusals import RefusalLog
from lockgate.approvals.reissue import LinkReissuer, ReissueAudit
from lockgate.approvals.slack import SlackChannel, SlackDesk
from lockgate.approvals.slack_api import ResponseUrl, SlackWebApi
from lockgate.approvals.slack_posts import SlackPosts
from lockgate.approvals.slack_records import SlackPostStore
from lockgate.config import LockgateConfig, SlackApprovals
from lockgate.errors import ConfigError
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.runtime.deps import Deps
from lockgate.settings import ApprovalSettings


@dataclass(frozen=True)
class ApprovalParts:
    """What the approval handler serves: pages and decisions (callback only), the digest, notices."""

    desk: ApprovalDesk | None
    digest: ReviewDigest | None
    notifier: Notifier
    stream: NotifyBatch  # the notifier's stream batches: new proposals, new rows in Decisions
    reissuer: LinkReissuer | None = None  # POST /approvals: a digest page's "email me its link"
    slack: SlackDesk | None = None  # POST /approvals/slack: clicks on Slack's buttons ([approvals.slack])


def build_approvals(
    settings: ApprovalSettings, config: LockgateConfig, deps: Deps, checks: CheckVersion | None = None
) -> ApprovalParts:
    """The desk, digest and notifier for ``settings``; ConfigError names a channel it cannot build.

    ``checks`` replaces asking the worker over Lambda (VERSION_CHECK_FUNCTION) where the worker runs
    in the same process (a harness's): the same ``VersionChecks`` the worker answers with.
    """
    dynamodb = deps.client("dynamodb")
    proposals = ProposalStore(dynamodb, settings.approvals_table)

    def link_secrets() -> list[bytes]:
        """The link-signing key(s); cached by the resolver, refreshed every few minutes."""
        return [deps.secrets.resolve(settings.link_secret_ref).encode()]

    signer = LinkSigner(config.approvals, link_secrets, deps.clock, settings.base_url)
    desk = digest = reissuer = None
    if settings.decisions_table:
        decisions = DecisionStore(dynamodb, settings.decisions_table)
        desk = approval_desk(settings, config, deps, proposals, link_secrets, checks)
        digest = ReviewDigest(
            proposals=proposals,
            decisions=decisions,
            config=config.approvals,
            signer=signer,
            link_secrets=link_secrets,
            clock=deps.clock,
            base_url=settings.base_url,
            log=deps.log,
            metrics=deps.metrics,
        )
        if settings.state_table:
            reissuer = LinkReissuer(
                digest=digest,
                proposals=proposals,
                decisions=decisions,
                config=config.approvals,
                signer=signer,
                channel=personal_channel(settings, deps),
                audit=ReissueAudit(dynamodb, settings.state_table),
                clock=deps.clock,
                log=deps.log,
                metrics=deps.metrics,
            )
    posts = slack_posts(settings, config, deps, proposals)
    channels = [channel(name, settings, deps) for name in settings.channels]
    channels += [SlackChannel(posts)] if posts is not None else []
    # Each reviewer the proposal allows gets a link (``links_for``): the others are never sent one.
    everyone = config.approvals.reviewers
    notifier = Notifier(signer.links_for, lambda _tool: everyone, channels, deps.log, deps.metrics)
    slack = slack_desk(settings, config, deps, desk, proposals) if desk is not None else None
    stream = NotifyBatch(notifier, posts, deps.log, config.approvals)
    return ApprovalParts(desk, digest, notifier, stream, reissuer, slack)


def approval_desk(
    settings: ApprovalSettings,
    config: LockgateConfig,
    deps: Deps,
    proposals: ProposalStore,
    link_secrets: Callable[[], Sequence[bytes]],
    checks: CheckVersion | None = None,
) -> ApprovalDesk | None:
    """The callback's pages and decisions; None without the inbox it hands settled decisions to."""
    if not (settings.decisions_table and settings.inbox_table and settings.inbox_queue_url):
        return None
    dynamodb = deps.client("dynamodb")
    return ApprovalDesk(
        proposals=proposals,
        decisions=DecisionStore(dynamodb, settings.decisions_table),
        config=config.approvals,
        link_secrets=link_secrets,
        inbox=InboxStore(dynamodb, settings.inbox_table),
        queue=InboxQueue(deps.client("sqs"), settings.inbox_queue_url),
        clock=deps.clock,
        log=deps.log,
        metrics=deps.metrics,
        base_url=settings.base_url,
        outcomes=ActionOutcomes(dynamodb, settings.ledger_table) if settings.ledger_table else None,
        refusals=RefusalLog(dynamodb, settings.decisions_table, deps.clock, deps.log, deps.metrics),
        checks=checks or version_checks(settings, deps),
    )


def version_checks(settings: ApprovalSettings, deps: Deps) -> CheckVersion | None:
    """The worker's check of an edited version (VERSION_CHECK_FUNCTION), over Lambda's Invoke; None
    without it: then every edit is refused with a clear message, and decisions work as before."""
    if not settings.version_check_function:
        return None
    return WorkerVersionChecks(deps.client("lambda"), settings.version_check_function, deps.log)


def slack_posts(
    settings: ApprovalSettings, config: LockgateConfig, deps: Deps, proposals: ProposalStore
) -> SlackPosts | None:
    """The notifier's Slack messages when ``[approvals.slack]`` is set (the bot token read per call).

    The callback (the function with DECISIONS_TABLE) posts nothing: None there.
    """
    slack = config.approvals.slack
    if slack is None or settings.decisions_table is not None:
        return None
    if not (settings.slack_message_table and settings.decisions_read_table):
        raise ConfigError(
            "[approvals.slack] needs the notifier's SLACK_MESSAGE_TABLE (the State table) and "
            "DECISIONS_READ_TABLE (the Decisions table), as template.yaml sets them"
        )
    dynamodb = deps.client("dynamodb")
    return SlackPosts(
        settings=slack,
        api=slack_api(settings, slack, deps),
        records=SlackPostStore(dynamodb, settings.slack_message_table),
        proposals=proposals,
        decisions=DecisionStore(dynamodb, settings.decisions_read_table),
        config=config.approvals,
        clock=deps.clock,
        sleep=deps.sleep,
        log=deps.log,
        metrics=deps.metrics,
    )


def slack_desk(
    settings: ApprovalSettings,
    config: LockgateConfig,
    deps: Deps,
    desk: ApprovalDesk,
    proposals: ProposalStore,
) -> SlackDesk | None:
    """The callback's handler of Slack clicks and edit modals (deciding through the desk's recorder),
    when configured; it reads the signing secret, and the bot token only to open a modal."""
    slack = config.approvals.slack
    if slack is None or settings.decisions_table is None:
        return None
    return SlackDesk(
        settings=slack,
        config=config.approvals,
        proposals=proposals,
        decisions=DecisionStore(deps.client("dynamodb"), settings.decisions_table),
        recorder=desk.recorder,
        refusals=RefusalLog(
            deps.client("dynamodb"), settings.decisions_table, deps.clock, deps.log, deps.metrics
        ),
        signing_secrets=lambda: deps.secrets.resolve_all([slack.signing_secret]),
        responses=ResponseUrl(send_post, settings.slack_response_prefix),
        views=slack_api(settings, slack, deps),  # views.open: the Edit button's modal
        clock=deps.clock,
        log=deps.log,
        metrics=deps.metrics,
    )


def slack_api(settings: ApprovalSettings, slack: SlackApprovals, deps: Deps) -> SlackWebApi:
    """Slack's Web API with [approvals.slack]'s bot token, resolved per call (so a rotation is seen)."""
    return SlackWebApi(
        functools.partial(deps.secrets.resolve, slack.bot_token), send_post, settings.slack_api_url
    )


def personal_channel(settings: ApprovalSettings, deps: Deps) -> PersonalChannel:
    """Where a re-sent link goes: the reviewer's own email; printed on the local stack."""
    if "print" in settings.channels:
        return PrintChannel(lambda line: print(line, file=sys.stderr, flush=True))
    return EmailChannel(deps.client("ses"), settings.from_address)


def channel(name: str, settings: ApprovalSettings, deps: Deps) -> Channel:
    """One configured channel (APPROVAL_CHANNELS): email (SES), slack, discord deployed; print locally."""
    if name == "email":
        return EmailChannel(deps.client("ses"), settings.from_address)
    if name == "print":
        return PrintChannel(lambda line: print(line, file=sys.stderr, flush=True))
    if name in ("slack", "discord"):
        # e.g. APPROVAL_SLACK_WEBHOOK_REF=secretsmanager:lockgate/notify/slack; resolved per send.
        ref = settings.channel_refs.get(name)
        if not ref:
            raise ConfigError(f"the {name} channel needs APPROVAL_{name.upper()}_WEBHOOK_REF")
        return WebhookChannel(name, functools.partial(deps.secrets.resolve, ref), post_json)
    raise ConfigError(f"unknown approval channel {name!r} (email, slack, discord, print)")
