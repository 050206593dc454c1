"""The guarded, durable tool loop over the Messages API.

Messages API rules hold by construction: every tool_use in a reply is answered in the next user
message, all results together and nothing before them; a reply cut off by max_tokens is never
executed; untrusted content enters only inside tool results.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from lockgate import tracing
from lockgate.actions.guard import RunState
from lockgate.actions.once import Operations
from lockgate.actions.proposing import Proposer
from lockgate.agent import decision_step
from lockgate.agent.batches import Batches
from lockgate.agent.intake import AdmittedReplies, IntakeResult, take_in, with_request
from lockgate.agent.run_gaps import RunGaps
from lockgate.agent.run_totals import Totals
from lockgate.agent.runs import Run, Runs
from lockgate.agent.screen import ScreenCalls, Screener, expected_screen
from lockgate.agent.tasks import Skip, Task
from lockgate.agent.tool_calls import ToolCalls
from lockgate.capacity.admission import Admission, InputTooLarge
from lockgate.capacity.allowance import DEFAULT_CALLS_AHEAD, RunAllowances
from lockgate.capacity.breaker import CircuitBreaker
from lockgate.capacity.gate import Gate
from lockgate.capacity.spend import input_tokens_upper_bound
from lockgate.clock import Clock
from lockgate.config.model import ApprovalsConfig
from lockgate.inbox.routing import InboxEvent
from lockgate.model.client import ModelClient, ModelReply, ModelRequest
from lockgate.model.price_table import PriceTable
from lockgate.model.response_cache import ResponseCache
from lockgate.model.usage import NoUsageMetrics, UsageMetrics, UsageRollup
from lockgate.telemetry import Log, Metrics


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended."""

    run_id: str
    status: str  # completed | gave_up | refused | step_limit | budget_limit | needs_person | skipped
    summary: str


class AgentLoop:
    """Runs a task for an inbox event, recording each step so a retry replays instead of redoing."""

    def __init__(
        self,
        *,
        model: ModelClient,
        prices: PriceTable,
        runs: Runs,
        ledger: Operations,
        clock: Clock,
        log: Log,
        metrics: Metrics,
        screener: Screener | None = None,
        approvals: Proposer | None = None,
        breaker: CircuitBreaker | None = None,
        responses: ResponseCache | None = None,
        batches: Batches | None = None,
        rollup: UsageRollup | None = None,
        usage_metrics: UsageMetrics | None = None,
        gate: Gate | None = None,
        count_tokens: bool = False,
        calls_ahead: int = DEFAULT_CALLS_AHEAD,
        rules: ApprovalsConfig | None = None,
        gaps: RunGaps | None = None,
    ) -> None:
        self._model = model
        self._gaps = gaps or RunGaps()  # how far apart each task's runs start, for cache_ttl="auto"
        self._runs = runs
        self._clock = clock
        self._log = log
        self._metrics = metrics
        self._tool_calls = ToolCalls(
            runs=runs, ledger=ledger, log=log, metrics=metrics, screener=screener, approvals=approvals,
            rules=rules,
        )  # fmt: skip
        self._prices = prices  # every call's estimate and cost, and each model's cacheable minimum
        self._calls = Admission(
            model,
            prices,
            metrics=metrics,
            log=log,
            breaker=breaker,
            gate=gate,
            count_tokens=count_tokens,
            responses=responses,
        )
        self._calls_ahead = calls_ahead
        self._batches = batches
        self._rollup = rollup
        self._usage_metrics = usage_metrics or NoUsageMetrics()

    def run(self, task: Task, event: InboxEvent, deadline: float) -> RunOutcome:
        """Run (or resume) the task for this event until the model ends its turn or a limit hits."""
        # Model calls are admitted a few at a time; what the run held and did not spend is given
        # back when it stops, however it stops (lockgate.capacity.allowance).
        # calls_ahead=0: each call admitted and settled on its own (the design before allowances).
        allowances = (
            RunAllowances(
                self._calls.gate, task.name, event.delivery.source, self._calls_ahead, event.delivery.pk
            )
            if self._calls_ahead > 0
            else None
        )
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": task.name,
            "gen_ai.request.model": task.model,
            "lockgate.run.id": event.delivery.pk,
        }
        with tracing.span(f"invoke_agent {task.name}", attributes=attributes):
            try:
                outcome = self._run(task, event, deadline, allowances)
            finally:
                if allowances is not None:
                    allowances.close()
            tracing.annotate({"lockgate.run.status": outcome.status})
            return outcome

    def _run(
        self, task: Task, event: InboxEvent, deadline: float, allowances: RunAllowances | None
    ) -> RunOutcome:
        if isinstance(start := task.start(event, task.services), Skip):  # no run, no model call
            return RunOutcome(event.delivery.pk, "skipped", start.reason)
        run = self._runs.open(event.delivery.pk, task.name, event.delivery.pk)
        state, totals, prices = RunState(start.facts), Totals(self._prices), self._prices
        tools = [t.schema() for t in task.tools]
        cache_ttl = self._gaps.cache_ttl(task, tools, prices, event.delivery.pk, self._clock.now())
        prompt = start.prompt
        if allowances is not None:  # the models the run will call are admitted in its first write
            allowances.expect(task.model, *_first_call(prices, task, tools, prompt, cache_ttl))
            if task.screen_model:
                allowances.expect(task.screen_model, *expected_screen(prices, task.screen_model))
        if task.intake is not None:
            taken = self._take_in(task, event, run, deadline, totals, allowances)
            if taken.needs_person:
                # Guessing at a request nobody could read is worse than asking a person.
                self._metrics.add_metric(name="RunNeedsPerson", unit="Count", value=1)
                why = "; ".join(taken.problems)
                return self._finish(run, "needs_person", f"could not read the request: {why}", totals, state)
            prompt = with_request(prompt, taken)
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        source, cacheable = event.delivery.source, not task.fresh
        ask = ScreenCalls(self._calls, task, source, totals, self._usage_metrics, cacheable, allowances)
        offered, model_steps = tools, 0
        for n in itertools.count(1):  # a model reply and its tool results, or a decision (Task.respond)
            if (decision := run.step(n, decision_step.KIND)) is not None:
                decision_step.hear(run, decision, messages, totals)
                offered = [*tools, decision_step.SCHEMA]
                continue
            if model_steps == task.max_steps:
                break
            if model_steps and (over := _over_budget(task, totals, model_steps)):  # the run's own cap
                return self._finish(run, "budget_limit", over, totals, state)
            model_steps += 1
            try:
                reply = self._reply(
                    task, run, n, offered, messages, deadline, totals, cache_ttl, event, allowances
                )
            except InputTooLarge as exc:
                self._finish(run, "input_too_large", str(exc), totals, state)
                raise  # set aside with this reason: a person must shorten or handle the input
            messages.append({"role": "assistant", "content": reply.content})
            if reply.stop_reason == "max_tokens":
                cut_off = "the reply was cut off at max_tokens; nothing in it was executed"
                return self._finish(run, "gave_up", cut_off, totals, state)
            if reply.stop_reason == "refusal":
                return self._finish(run, "refused", "the model declined this request", totals, state)
            if reply.stop_reason == "pause_turn":
                continue  # the API paused a long turn: send it back as-is to let it continue
            calls = [b for b in reply.content if b.get("type") == "tool_use"]
            if reply.stop_reason != "tool_use" or not calls:
                if run.step(n + 1, decision_step.KIND) is not None:
                    continue  # the run ended here, and a person's decision resumed it
                return self._finish(run, "completed", _text(reply) or "finished", totals, state)
            results = self._tool_calls.step(task, run, n, calls, state, totals, _text(reply), ask)
            messages.append({"role": "user", "content": results})
        ended = decision_step.limit_summary(run, task.max_steps)  # says so if a decision came too late
        return self._finish(run, "step_limit", ended, totals, state)

    # -- model steps ----------------------------------------------------------------------

    def _reply(
        self,
        task: Task,
        run: Run,
        n: int,
        tools: list[dict[str, Any]],
        messages: list[dict[str, Any]],
        deadline: float,
        totals: Totals,
        cache_ttl: str,
        event: InboxEvent,
        allowances: RunAllowances | None,
    ) -> ModelReply:
        recorded = run.step(n, "model")
        if recorded is not None:
            totals.replayed_steps += 1
            reply = ModelReply.from_dict(recorded.data)
            totals.add(reply, cache_ttl)
            return reply
        request = ModelRequest(
            model=task.model,
            system=task.system_prompt(),
            tools=tools,
            messages=messages,
            max_tokens=task.max_output_tokens,
            cache_ttl=cache_ttl,
            conversation=True,
        )
        if task.batched(n) and self._batches is not None:
            self._batches.call(task.name, run, n, request)  # waits (Deferred) unless the batch failed
        source = event.delivery.source
        fresh = self._calls.create(
            task, request, deadline, source, cacheable=_cacheable(task), run=allowances
        )
        totals.model_calls += 1
        # If another attempt recorded this step first, its reply is the one that counts.
        reply = ModelReply.from_dict(self._runs.record(run, n, "model", fresh.as_dict()).data)
        usd = totals.add(reply, cache_ttl)
        self._usage_metrics.model_call(task.name, reply.model, reply.usage, usd, cache_hit=reply.cache_hit)
        return reply

    def _take_in(
        self,
        task: Task,
        event: InboxEvent,
        run: Run,
        deadline: float,
        totals: Totals,
        allowances: RunAllowances | None,
    ) -> IntakeResult:
        """Step 0: the request extracted from the event (replayed from the record on a retry)."""
        assert task.intake is not None
        recorded = run.step(0, "intake")
        if recorded is None:
            cacheable = task.intake.cacheable and not task.fresh
            source = event.delivery.source
            replies = AdmittedReplies(
                lambda request, until: self._calls.create(
                    task, request, until, source, cacheable=cacheable, run=allowances
                )
            )
            taken = take_in(task.intake, event, task.services, replies, deadline)
            recorded = self._runs.record(run, 0, "intake", taken.as_dict())
        result = IntakeResult.from_dict(recorded.data)
        totals.add_intake(result)
        return result

    def _finish(self, run: Run, status: str, summary: str, totals: Totals, state: RunState) -> RunOutcome:
        ended = self._runs.finish(run, status, summary, totals.as_dict(state))
        tracing.annotate(
            {
                "lockgate.run.model_calls": totals.model_calls,
                "lockgate.run.replayed_steps": totals.replayed_steps,
                "lockgate.cost_usd": totals.cost_usd,
            }
        )
        if ended and self._rollup is not None:  # a replayed finish was counted the first time
            self._rollup.add_run(run.run_id, run.task, totals.since_mark())
        self._metrics.add_metric(name=f"Run_{status}", unit="Count", value=1)
        return RunOutcome(run.run_id, status, summary)


def _over_budget(task: Task, totals: Totals, steps: int) -> str | None:
    """Why the run stops here, once it has spent its budget (``Task.budget_usd``); None: it goes on."""
    if totals.cost_usd < task.budget_usd:
        return None
    return (
        f"stopped after {steps} steps: the run spent ${totals.cost_usd:.4f}, "
        f"its budget is ${task.budget_usd:.2f} (Task.budget_usd)"
    )


def _cacheable(task: Task) -> bool:
    return task.cacheable and not task.fresh


def _first_call(prices: PriceTable, task: Task, tools: list[Any], prompt: str, ttl: str) -> tuple[float, int]:
    """The main model's first call, as admission estimates it: (dollars, prompt tokens)."""
    tokens = input_tokens_upper_bound(task.system_prompt(), tools, [{"role": "user", "content": prompt}])
    return prices.estimate_usd(task.model, tokens, task.max_output_tokens, cache_ttl=ttl), tokens


def _text(reply: ModelReply) -> str:
    return " ".join(b.get("text", "") for b in reply.content if b.get("type") == "text").strip()[:500]
