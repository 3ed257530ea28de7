"""The planner: compose strategies until a conversation fits a model's input budget, and report every step.

``Budget`` comes from the model (context window, default reserved output) or explicit numbers, less the tool
definitions (counted with the model's counter) and a safety margin that is zero for exact counters and, for an
estimating counter, its measured relative error (the counter's ``max_relative_error``) times the input budget.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ctxwin.counters.base import TokenCounter
from ctxwin.messages import BaseMessage, SystemMessage, convert_to_messages, convert_to_openai_messages
from ctxwin.plugins import get_counter, get_model, get_strategy_factory
from ctxwin.strategies.base import (
    Budget,
    StepResult,
    Strategy,
    is_pinned,
    last_user_index,
    leading_system_count,
    must_keep,
)
from ctxwin.strategies.meter import Meter

Output = Literal["messages", "openai"]
# id(message) -> (message, label); the message is held so its id cannot be reused while the plan runs.
_Labels = dict[int, tuple[BaseMessage, str]]


class BudgetExceeded(ValueError):
    """``strict=True`` and what must be kept does not fit; the figures are attributes and in the message."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.tokens = plan.tokens_after
        self.limit = plan.budget.max_input_tokens
        super().__init__(
            f"conversation needs {plan.tokens_after} tokens but the budget allows {plan.budget.max_input_tokens} "
            f"(context window {plan.budget.context_window} - reserved output {plan.budget.reserve_output} - "
            f"safety margin {plan.budget.safety_margin}; tool definitions use {plan.budget.tools_tokens}); "
            + "; ".join(plan.warnings)
        )


@dataclass(frozen=True)
class StepReport:
    """What one strategy did: request tokens before and after, and the messages it touched (id or ``#index``)."""

    name: str
    tokens_before: int
    tokens_after: int
    dropped_ids: list[str] = field(default_factory=list)
    truncated_ids: list[str] = field(default_factory=list)
    summarized_ids: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: bool = False


@dataclass
class Plan:
    """The fitted conversation and how it was fitted.

    Token figures are for the whole request (messages and tool definitions) as the planner's counter counts it;
    ``fits`` means ``tokens_after <= budget.max_input_tokens``. Message labels in the step reports are message
    ids, or ``#i`` (the position in the input) for messages without one.
    """

    messages: list[Any]
    fits: bool
    budget: Budget
    tokens_before: int
    tokens_after: int
    steps: list[StepReport]
    warnings: list[str]
    counter: str
    model: str | None = None
    system_tokens: int = 0  # of the leading system messages (summary included), for budget displays

    def summary(self) -> dict[str, Any]:
        """A JSON-ready digest (for JSONL outputs and dataset jobs)."""
        return {
            "fits": self.fits,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "budget": self.budget.max_input_tokens,
            "dropped": sum(len(s.dropped_ids) for s in self.steps),
            "truncated": sum(len(s.truncated_ids) for s in self.steps),
            "summarized": sum(len(s.summarized_ids) for s in self.steps),
            "warnings": list(self.warnings),
        }


# Tool-definition variants a planner remembers (with_tools) before it starts over.
_MAX_TOOL_VARIANTS = 64


def _default_chain(summarize: bool) -> list[str]:
    return ["filter", "truncate_tool_output", *(["summarize"] if summarize else []), "trim"]


class Planner:
    """Fits conversations for one model/budget; build it once and call ``plan`` (or ``aplan``) per conversation.

    ``strategies`` are Strategy objects or registered names; by default ``filter``, ``truncate_tool_output``,
    ``summarize`` (only when a ``summarizer`` or ``keep_last`` is given) and ``trim``.
    """

    def __init__(
        self,
        model: str | None = None,
        strategies: Sequence[Strategy | str] | None = None,
        *,
        context_window: int | None = None,
        reserve_output: int | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
        counter: TokenCounter | str | None = None,
        summarizer: Any = None,
        keep_last: int | None = None,
        safety_margin: int | None = None,
        strict: bool = False,
        output: Output = "messages",
    ) -> None:
        spec = get_model(model) if model is not None else None
        if counter is None and spec is None:
            raise ValueError("Planner needs a model name or a counter (and then a context_window)")
        if isinstance(counter, str) or counter is None:
            self.counter: TokenCounter = get_counter(counter or spec.counter)  # type: ignore[union-attr]
        else:
            self.counter = counter
        window = context_window if context_window is not None else (spec.context_window if spec else None)
        if window is None:
            raise ValueError("context_window is required when no model is given")
        reserve = reserve_output if reserve_output is not None else (spec.max_output_tokens if spec else 0)
        for label, value in (("context_window", window), ("reserve_output", reserve), ("keep_last", keep_last)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{label} must be a non-negative int, got {value!r}")
        if reserve >= window:
            raise ValueError(f"reserve_output ({reserve}) must be smaller than the context window ({window})")
        if output not in ("messages", "openai"):
            raise ValueError(f"output must be 'messages' or 'openai', got {output!r}")
        self.tools = list(tools) if tools else None
        self._variants: dict[str, Planner] = {}  # with_tools' planners, by the JSON of their tools
        error = float(getattr(self.counter, "max_relative_error", 0.0) or 0.0)
        margin = safety_margin if safety_margin is not None else math.ceil(error * (window - reserve))
        self.budget = Budget(window, reserve, self._tools_tokens(), margin)
        self.model = spec.name if spec else None
        self.strict = strict
        self.output = output
        self.strategies = [
            self._strategy(s, summarizer, keep_last)
            for s in strategies or _default_chain(summarizer is not None or keep_last is not None)
        ]

    def with_tools(self, tools: Sequence[dict[str, Any]] | None) -> Planner:
        """This planner for requests that send ``tools`` instead (the budget changes, nothing else).

        ``self`` for the same tools. Variants are remembered by the tools' JSON, so a dataset whose conversations
        all carry the same tool definitions counts them once, not once per conversation.
        """
        wanted = list(tools) if tools else None
        if wanted == self.tools:
            return self
        key = json.dumps(wanted, sort_keys=True, ensure_ascii=False)
        other = self._variants.get(key)
        if other is None:
            if len(self._variants) >= _MAX_TOOL_VARIANTS:
                self._variants.clear()
            other = copy.copy(self)  # shares _variants: every variant derives from the same settings
            other.tools = wanted
            other.budget = dataclasses.replace(self.budget, tools_tokens=other._tools_tokens())
            self._variants[key] = other
        return other

    def _tools_tokens(self) -> int:
        if not self.tools:
            return 0
        count_tools = getattr(self.counter, "count_tools", None)
        if callable(count_tools):
            return int(count_tools(self.tools))
        probe = [SystemMessage("x")]
        return self.counter.count_messages(probe, tools=self.tools) - self.counter.count_messages(probe)

    @staticmethod
    def _strategy(item: Strategy | str, summarizer: Any, keep_last: int | None) -> Strategy:
        if not isinstance(item, str):
            if not callable(getattr(item, "apply", None)):
                raise TypeError(f"a strategy must be a registered name or have an apply() method, got {item!r}")
            return item
        factory = get_strategy_factory(item)
        if item == "summarize":
            options: dict[str, Any] = {"keep_last_messages": keep_last}
            if summarizer is not None:
                options["summarizer"] = summarizer
            strategy: Strategy = factory(**options)
            return strategy
        built: Strategy = factory()
        return built

    def _start(self, messages: Any) -> tuple[list[BaseMessage], _Labels, Meter]:
        converted = convert_to_messages(messages)
        labels: _Labels = {id(m): (m, m.id or f"#{i}") for i, m in enumerate(converted)}
        return converted, labels, Meter(self.counter, self.tools)

    def _report(self, name: str, result: StepResult, before: int, after: int, labels: _Labels) -> StepReport:
        def names(items: list[BaseMessage]) -> list[str]:
            return [labels[id(m)][1] if id(m) in labels else (m.id or "?") for m in items]

        if result.origins:  # a copy is reported under its original's label
            by_id = {id(m): m for m in result.messages}
            for copy_id, original in result.origins.items():
                labels[copy_id] = (by_id[copy_id], names([original])[0])
        return StepReport(
            name,
            before,
            after,
            names(result.dropped),
            names(result.truncated),
            names(result.summarized),
            list(result.notes),
            result.skipped,
        )

    def _finish(self, messages: list[BaseMessage], before: int, steps: list[StepReport], meter: Meter) -> Plan:
        after = self._request_tokens(messages, meter)
        fits = after <= self.budget.max_input_tokens
        warnings = [f"{s.name}: {note}" for s in steps if s.skipped for note in s.notes]
        if not fits:
            kept = [messages[i] for i in must_keep(messages)]
            warnings.append(
                f"does not fit: {after} tokens for a budget of {self.budget.max_input_tokens}; the must-keep part "
                f"(system, pinned, last user message) alone needs {self._request_tokens(kept, meter)}"
            )
        if last_user_index(messages) is None:
            warnings.append("the conversation has no user message")
        name = getattr(self.counter, "name", type(self.counter).__name__)
        out: list[Any] = convert_to_openai_messages(messages) if self.output == "openai" else messages
        system = sum(meter.each(messages[: leading_system_count(messages)]))
        plan = Plan(out, fits, self.budget, before, after, steps, warnings, name, self.model, system)
        if self.strict and not fits:
            raise BudgetExceeded(plan)
        return plan

    def _request_tokens(self, messages: list[BaseMessage], meter: Meter) -> int:
        return meter.total(messages) + self.budget.tools_tokens if meter.additive else meter.exact(messages)

    def _run(self, messages: Any) -> _Run:
        current, labels, meter = self._start(messages)
        return _Run(self, current, labels, meter, self._request_tokens(current, meter))

    def plan(self, messages: Any) -> Plan:
        """Apply the strategies in order until the conversation fits; never mutates the input."""
        run = self._run(messages)
        for strategy in run.pending():
            run.record(strategy, strategy.apply(run.current, self.budget, run.meter))
        return run.finish()

    async def aplan(self, messages: Any) -> Plan:
        """``plan`` for async code: strategies with ``aapply`` (async summarizers) are awaited."""
        run = self._run(messages)
        for strategy in run.pending():
            aapply = getattr(strategy, "aapply", None)
            result = await aapply(run.current, self.budget, run.meter) if aapply else None
            run.record(strategy, result or strategy.apply(run.current, self.budget, run.meter))
        return run.finish()


@dataclass
class _Run:
    """One plan in progress: the current messages, their request tokens and the reports so far."""

    planner: Planner
    current: list[BaseMessage]
    labels: _Labels
    meter: Meter
    before: int
    steps: list[StepReport] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tokens = self.before

    def pending(self) -> Iterator[Strategy]:
        """The strategies still to apply, stopping as soon as the conversation fits."""
        for strategy in self.planner.strategies:
            if self.tokens <= self.planner.budget.max_input_tokens:
                return
            yield strategy

    def record(self, strategy: Strategy, result: StepResult) -> None:
        after = self.planner._request_tokens(result.messages, self.meter)
        self.steps.append(self.planner._report(strategy.name, result, self.tokens, after, self.labels))
        self.current, self.tokens = result.messages, after

    def finish(self) -> Plan:
        return self.planner._finish(self.current, self.before, self.steps, self.meter)


def fit(
    messages: Any,
    model: str | None = "gpt-4o",
    *,
    context_window: int | None = None,
    reserve_output: int | None = None,
    tools: Sequence[dict[str, Any]] | None = None,
    strategies: Sequence[Strategy | str] | None = None,
    summarizer: Any = None,
    keep_last: int | None = None,
    counter: TokenCounter | str | None = None,
    strict: bool = False,
    output: Output = "messages",
) -> Plan:
    """Fit ``messages`` (any shape ``convert_to_messages`` accepts) to ``model``; see ``Planner``."""
    return Planner(
        model,
        strategies,
        context_window=context_window,
        reserve_output=reserve_output,
        tools=tools,
        counter=counter,
        summarizer=summarizer,
        keep_last=keep_last,
        strict=strict,
        output=output,
    ).plan(messages)


__all__ = ["Budget", "BudgetExceeded", "Plan", "Planner", "StepReport", "fit", "is_pinned"]
