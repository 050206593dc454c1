"""A run's running totals: tokens, dollars, calls, replays, blocked calls, and the split per model."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate.actions.guard import RunState
from lockgate.agent.intake import IntakeResult
from lockgate.model.client import ModelReply, Usage
from lockgate.model.price_table import PriceTable
from lockgate.model.usage import TOKEN_FIELDS, ModelTotals


@dataclass
class Totals:
    """Running totals for the run record, each call priced by ``prices``."""

    prices: PriceTable
    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_FIELDS, 0))
    cost_usd: float = 0.0
    model_calls: int = 0
    replayed_steps: int = 0
    blocked: int = 0
    by_model: dict[str, ModelTotals] = field(default_factory=dict)
    marked: dict[str, ModelTotals] | None = None  # by_model when a decision resumed the run

    def add(self, reply: ModelReply, cache_ttl: str) -> float:
        """Count one model reply; returns its cost (zero from the response cache, half in a batch)."""
        usd = self.prices.cost_usd(reply.model, reply.usage, cache_ttl, batch=reply.batch)
        self._count(reply.model, reply.usage, usd, cache_hits=int(reply.cache_hit), batched=int(reply.batch))
        return usd

    def add_intake(self, result: IntakeResult) -> None:
        """Count the extraction calls, per model tried."""
        for model, tokens in result.usage.items():
            usage = Usage(**tokens)
            counts = result.calls.get(model, {"calls": 1, "cache_hits": 0})
            usd = self.prices.cost_usd(model, usage)
            self._count(model, usage, usd, calls=counts["calls"], cache_hits=counts["cache_hits"])

    def _count(self, model: str, usage: Usage, usd: float, **counts: int) -> None:
        counted = usage.as_dict()
        for key in TOKEN_FIELDS:
            self.usage[key] += counted[key]
        self.cost_usd = round(self.cost_usd + usd, 6)
        self.by_model.setdefault(model, ModelTotals()).add(usage, usd, **counts)

    def resume(self, ended: Mapping[str, Any]) -> None:
        """Take up the totals the run ended with before a person's decision resumed it (its screens and
        intake included, which a replay does not count again); the day's rollup adds only what follows."""
        if ended:
            self.usage = {key: int(ended["usage"].get(key, 0)) for key in self.usage}
            self.cost_usd = float(ended["cost_usd"])
            self.model_calls = int(ended["model_calls"])
            self.replayed_steps = int(ended["replayed_steps"])
            self.blocked = int(ended["blocked"])
            self.by_model = {model: _model_totals(counted) for model, counted in ended["by_model"].items()}
        self.marked = {model: copy.deepcopy(totals) for model, totals in self.by_model.items()}

    def since_mark(self) -> dict[str, ModelTotals]:
        """The split per model since the run was resumed (models called since), else all of it."""
        if self.marked is None:
            return self.by_model
        since: dict[str, ModelTotals] = {}
        for model, now in self.by_model.items():
            was = self.marked.get(model, ModelTotals())
            if now.calls > was.calls:
                since[model] = ModelTotals(
                    calls=now.calls - was.calls,
                    cache_hits=now.cache_hits - was.cache_hits,
                    batched=now.batched - was.batched,
                    usd=round(now.usd - was.usd, 6),
                    tokens={key: value - was.tokens[key] for key, value in now.tokens.items()},
                )
        return since

    def as_dict(self, state: RunState) -> dict[str, Any]:
        """JSON-ready, with the run's taint."""
        return {
            "usage": self.usage,
            "cost_usd": self.cost_usd,
            "model_calls": self.model_calls,
            "replayed_steps": self.replayed_steps,
            "blocked": self.blocked,
            "taint_sources": state.taint_sources,
            "suspicious": state.suspicious,
            "by_model": {model: totals.as_dict() for model, totals in self.by_model.items()},
        }


def _model_totals(counted: Mapping[str, Any]) -> ModelTotals:
    """One model's share back from the run's recorded totals."""
    return ModelTotals(
        calls=int(counted["calls"]),
        cache_hits=int(counted["cache_hits"]),
        batched=int(counted["batched"]),
        usd=float(counted["usd"]),
        tokens={key: int(counted.get(key, 0)) for key in TOKEN_FIELDS},
    )
