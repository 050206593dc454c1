"""What a source's provider sends for an event type, for `lockgate new workflow` to build on.

Each shape gives two sample deliveries in the provider's documented payload shape (trimmed to the
fields a first workflow reads): an ordinary one, and one whose text says it is spam or a duplicate.
It also says where in the event the one-line subject and the text are, which event type a test
sends (``TestStack.send(event=...)``) and which the stored delivery gets. The shapes follow each
provider's documented examples: GitHub's webhook events and payloads, Stripe's Event object, the
Standard Webhooks specification's example, Slack's Events API and slash commands, Shopify's topic
payloads; a plain-HMAC source's shape follows its lockgate.toml options.
"""

from __future__ import annotations

from collections.abc import Callable

from lockgate.config import SourceConfig
from lockgate_infra.cli.event_shapes import github, providers
from lockgate_infra.cli.event_shapes.shape import EventShape, ShapeError

__all__ = ["EventShape", "ShapeError", "shape_for"]


def shape_for(source: SourceConfig, event: str) -> EventShape:
    """The shape of ``source``'s ``event`` deliveries; ShapeError if its provider never sends one so named."""
    build: Callable[[SourceConfig, str], EventShape] = {
        "github": github.github,
        "stripe": providers.stripe,
        "standard": providers.standard,
        "slack": providers.slack,
        "shopify": providers.shopify,
    }.get(source.scheme, providers.hmac)
    return build(source, event)
