"""A run's allowance: several model calls admitted with one write, and settled with one.

Admitted one by one, every model call costs a transaction before it (the budget holds and the
rate takes) and another after it (the settle): in the example, 12 write units and two calls per
model call, over half of all DynamoDB writes. A run instead admits its next few calls at once
(``Gate.admit_ahead``): ``calls`` estimates are held on every spend counter and ``calls``
requests with their tokens are taken from every bucket, in the one write the gate makes. Each
call that fits in what is left is admitted here, in memory, and its actual cost is counted
against the dollars held. When the run stops (finished, deferred, paused for a person, failed)
what was held and not spent is given back in one write (``close``; one for all of a run's models).

Kept: a call is sent only with its whole estimate held on every counter and its request and
tokens taken from every bucket, so the caps still cannot be overspent across Lambdas. Near a
cap, or when a bucket cannot give several calls without waiting, the admission covers one call,
exactly as before. The price, on purpose: a running run holds up to ``calls`` estimates that
other runs cannot use until it stops; a crash before the run's settle leaves its hold charged
(the safe direction; before, one call's estimate); requests and tokens taken and not used are
not given back (a bucket refills within a minute).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from lockgate.capacity.gate import Ahead, Gate, Part
from lockgate.capacity.spend import Reservation

DEFAULT_CALLS_AHEAD = 5
PROMPT_GROWTH = 2  # tokens taken ahead per call, as a multiple of the first call's
# (the allowance, one call's estimate, tokens ahead, deadline) -> a joint admission's share, or None
Together = Callable[["Allowance", float, int, float], "Ahead | None"]


class Allowance:
    """What one run may still send on one model without writing, and what it has spent of it."""

    def __init__(
        self,
        gate: Gate,
        task: str,
        scopes: list[str],
        calls: int,
        together: Together | None = None,
        position: int | None = None,
    ) -> None:
        self._gate = gate
        self._position = position  # the run's shard position: the same shards for all its writes
        self._task = task
        self._scopes = scopes
        self._calls = max(1, calls)
        self._together = together
        self._reservation: Reservation | None = None
        self._spent = 0.0  # actual dollars of the calls made against the reservation
        self._requests = 0
        self._tokens = 0

    def admit(self, estimate_usd: float, tokens: int, deadline: float) -> None:
        """Admit one call: from what is left, else by admitting the next calls (may wait, or raise)."""
        if not self._covers(estimate_usd, tokens):
            # A run's prompts grow call by call: the tokens taken ahead allow for that.
            tokens_ahead = tokens * self._calls * PROMPT_GROWTH
            ahead = self._together(self, estimate_usd, tokens_ahead, deadline) if self._together else None
            if ahead is None:
                ahead = self._gate.admit_ahead(
                    self._task,
                    self._scopes,
                    estimate_usd,
                    tokens,
                    deadline,
                    calls=self._calls,
                    tokens_ahead=tokens_ahead,
                    position=self._position,
                )
            self.credit(ahead, tokens_ahead if ahead.calls > 1 else tokens)
        self._requests -= 1
        self._tokens -= tokens

    def part(self, estimate_usd: float, tokens_ahead: int) -> Part:
        """This allowance's share of a joint admission: its next calls like one of ``estimate_usd``."""
        return Part(tuple(self._scopes), estimate_usd, self._calls, tokens_ahead)

    def credit(self, ahead: Ahead, tokens: int) -> None:
        """Add what an admission gave: its dollars held, its calls and ``tokens``."""
        self._add(ahead.reservation)
        self._requests += ahead.calls
        self._tokens += tokens

    def spent(self, usd: float) -> None:
        """Count a sent call's cost (its estimate when it may have been billed but the cost is unknown)."""
        self._spent += usd

    def close(self) -> None:
        """Give back what was held and not spent, in one write; the allowance starts empty again."""
        self._gate.settle(*self.release())

    def release(self) -> tuple[Reservation | None, float]:
        """What was held and what was spent of it, for the caller to settle; the allowance starts empty."""
        released = self._reservation, self._spent
        self._reservation, self._spent, self._requests, self._tokens = None, 0.0, 0, 0
        return released

    def _covers(self, estimate_usd: float, tokens: int) -> bool:
        if self._requests < 1 or self._tokens < tokens:
            return False
        if self._gate.spend is None:
            return True
        held = float(self._reservation.estimate_usd) if self._reservation else 0.0
        return held - self._spent >= estimate_usd

    def _add(self, reservation: Reservation | None) -> None:
        """Merge a new hold into the run's; a hold on a new UTC day first settles the old day's."""
        if reservation is None:
            return
        old = self._reservation
        if old is not None and old.day != reservation.day:
            self._gate.settle(old, self._spent)
            old, self._spent = None, 0.0
        self._reservation = (
            reservation
            if old is None
            else replace(old, estimate_usd=old.estimate_usd + reservation.estimate_usd)
        )


class RunAllowances:
    """One allowance per model for one run (a fallback model has its own buckets and price)."""

    def __init__(
        self, gate: Gate | None, task: str, source: str, calls: int = DEFAULT_CALLS_AHEAD, spread: str = ""
    ) -> None:
        self._gate = gate
        # One shard position per run (its first delivery id fixes the process's offset).
        self._position = gate.spread.pick(spread) if gate is not None else None
        self._task = task
        self._source = source
        self._calls = calls
        self._by_model: dict[str, Allowance] = {}
        self._expected: dict[str, tuple[float, int]] = {}

    def for_model(self, model: str) -> Allowance | None:
        """The run's allowance on ``model`` (None without a gate: nothing to admit)."""
        if self._gate is None:
            return None
        if model not in self._by_model:
            scopes = [f"source#{self._source}", f"model#{model}"]
            self._by_model[model] = Allowance(
                self._gate, self._task, scopes, self._calls, self._first, self._position
            )
        return self._by_model[model]

    def expect(self, model: str, estimate_usd: float, tokens: int) -> None:
        """The run will call ``model``, about like this (one call's estimate and prompt tokens): its
        calls are admitted with the run's first admission on another model, in the same write.
        """
        self._expected[model] = (estimate_usd, tokens)

    def _first(
        self, first: Allowance, estimate_usd: float, tokens_ahead: int, deadline: float
    ) -> Ahead | None:
        """The run's first admission, together with the models it expects (None: admit it alone)."""
        expected, self._expected = self._expected, {}  # tried once per run
        others = [
            (model, e, t) for model, (e, t) in expected.items() if self._by_model.get(model) is not first
        ]
        if self._gate is None or not others:
            return None
        companions = [(self._allowance(model), e, t * self._calls * PROMPT_GROWTH) for model, e, t in others]
        parts = [first.part(estimate_usd, tokens_ahead), *(a.part(e, t) for a, e, t in companions)]
        aheads = self._gate.admit_together(self._task, parts, deadline, self._position)
        if aheads is None:
            return None
        for (allowance, _, tokens), ahead in zip(companions, aheads[1:], strict=True):
            allowance.credit(ahead, tokens)
        return aheads[0]

    def _allowance(self, model: str) -> Allowance:
        allowance = self.for_model(model)
        assert allowance is not None  # there is a gate
        return allowance

    def close(self) -> None:
        """Settle every model's allowance: one write per day's counters they held dollars on.

        The models of one run hold on the same counters (the day's global and the task's), so
        their holds are given back together.
        """
        if self._gate is None:
            return
        merged: dict[tuple[str, tuple[str, ...]], tuple[Reservation, float]] = {}
        for held, used in (allowance.release() for allowance in self._by_model.values()):
            if held is None:
                continue
            key = (held.day, held.counters)
            if key in merged:
                before, used_before = merged[key]
                held = replace(before, estimate_usd=before.estimate_usd + held.estimate_usd)  # noqa: PLW2901
                used += used_before  # noqa: PLW2901
            merged[key] = (held, used)
        for reservation, spent in merged.values():
            self._gate.settle(reservation, spent)
