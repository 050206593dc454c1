"""The shop's offline models: they answer its tasks by rule, so the demo, tests and evals need no Claude.

Use them with `lockgate local --model shop.model:scripted_model` (the default, `demo`) and
`lockgate eval support-inbox --model shop.model:scripted_model` (or `shop`); the gullible one,
which obeys instructions in what it reads, with `--model gullible` for the attack evals.
"""

from __future__ import annotations

from shop.offline.gullible import GullibleModel
from shop.offline.inbox import ShopModel


def scripted_model() -> ShopModel:
    """The helpful support agent: the support inbox and the refund summary (``shop.offline``)."""
    return ShopModel()


def gullible_model() -> GullibleModel:
    """The same agent, doing whatever the content it reads tells it: for the attack evals."""
    return GullibleModel()
