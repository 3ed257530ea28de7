"""The planner: compose strategies until a conversation fits a model's input budget, and report every step.

``Budget`` comes from the model (context window, default reserved output) or explicit numbers, less the tool
definitions (counted with the model's counter) and a safety margin that is zero for exact counters and, for an
estimating counter, its measured relative error (the counter's ``max_relative_error``) times the input budget.

A plan tokenizes what its decisions need and no more: whether a conversation fits is answered counting from the
newest message back until it is over, and a shrinking step leaves alone what a later trim drops anyway. The token
figures of its report are exact, and those that involve messages the plan dropped without reading are counted when
first read (once), so a chat loop that only sends ``plan.messages`` never tokenizes the history it drops.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ctxwin.counters import get_counter, get_model
from ctxwin.counters.base import TokenCounter
from ctxwin.messages import (
    BaseMessage,
    HumanMessage,
    SystemMessage,
    convert_to_messages,
    convert_to_openai_messages,
)
from ctxwin.strategies import get_strategy_factory
from ctxwin.strategies.base import (
    Budget,
    StepResult,
    Strategy,
    is_pinned,
    last_user_index,
    leading_system_count,
    must_keep,
)
from ctxwin.strategies.meter import Keeps, Meter
from ctxwin.strategies.pairs import BrokenPairs, RepairToolPairs, find_broken_pairs

Output = Literal["messages", "openai"]
BrokenToolPairs = Literal["drop", "keep"]


class _Labels:
    """How reports name messages: the id, else ``#i`` (the position in the input); a copy a step made (a shortened
    message) is named like its original. Positions are looked up only when a message without an id is named."""

    def __init__(self, inputs: list[BaseMessage]) -> None:
        self._inputs = inputs
        self._positions: dict[int, int] | None = None
        self._copies: dict[int, BaseMessage] = {}  # id(copy) -> its original
        self._held: list[list[BaseMessage]] = []  # the lists holding the copies, so that no id is reused

    def original(self, message: BaseMessage) -> BaseMessage:
        """The input message ``message`` stands for (itself, or the original of a copy a step made)."""
        while id(message) in self._copies:
            message = self._copies[id(message)]
        return message

    def name(self, message: BaseMessage) -> str:
        original = self._copies.get(id(message))
        if original is not None:
            return self.name(original)
        if message.id:
            return message.id
        if self._positions is None:
            self._positions = {id(m): i for i, m in enumerate(self._inputs)}
        position = self._positions.get(id(message))
        return f"#{position}" if position is not None else "?"

    def names(self, messages: list[BaseMessage]) -> list[str]:
        if self._copies:
            return [self.name(m) for m in messages]
        return [m.id or self.name(m) for m in messages]  # most messages: their id, read once

    def copies_of(self, result: StepResult) -> None:
        """Name the copies a step made (``result.origins``) like their originals."""
        if result.origins:
            self._held.append(result.messages)
            self._copies.update(result.origins)


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


class Figures:
    """The request tokens of each message list a plan went through (the input, then the list after each step),
    each counted when first read and then remembered; a pickled or copied plan carries them all, counted."""

    def __init__(self, count: Callable[[list[BaseMessage]], int], lists: list[list[BaseMessage]]) -> None:
        self._count: Callable[[list[BaseMessage]], int] | None = count
        self._lists = lists
        self._values: dict[int, int] = {}

    def __getitem__(self, index: int) -> int:
        value = self._values.get(index)
        if value is None:
            assert self._count is not None  # only a pickled copy lacks it, and it has every value
            value = self._values[index] = self._count(self._lists[index])
        return value

    def __len__(self) -> int:
        return len(self._lists) if self._count is not None else len(self._values)

    def known(self, index: int, value: int) -> None:
        self._values[index] = value

    def __getstate__(self) -> dict[str, Any]:
        return {"_count": None, "_lists": [], "_values": {i: self[i] for i in range(len(self))}}


class Touched:
    """The messages one step dropped, shortened and summarised, named (id or ``#index``) when first read: a step
    that drops thousands of messages spends nothing on their names unless the report is read."""

    def __init__(self, labels: _Labels, dropped: list[BaseMessage], truncated: list[BaseMessage],
                 summarized: list[BaseMessage]) -> None:
        self._labels: _Labels | None = labels
        self._messages = (dropped, truncated, summarized)
        self._ids: tuple[list[str], list[str], list[str]] | None = None

    @property
    def ids(self) -> tuple[list[str], list[str], list[str]]:
        if self._ids is None:
            assert self._labels is not None  # only a pickled copy lacks them, and it has the ids
            dropped, truncated, summarized = (self._labels.names(m) for m in self._messages)
            self._ids = (dropped, truncated, summarized)
        return self._ids

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Touched) and self.ids == other.ids

    __hash__ = None  # type: ignore[assignment]

    def __getstate__(self) -> dict[str, Any]:
        return {"_labels": None, "_messages": ([], [], []), "_ids": self.ids}


@dataclass(frozen=True)
class StepReport:
    """What one strategy did: request tokens before and after, and the messages it touched (id or ``#index``)."""

    name: str
    notes: list[str] = field(default_factory=list)
    skipped: bool = False
    touched: Touched = field(kw_only=True, repr=False)
    figures: Figures = field(kw_only=True, repr=False, compare=False)
    index: int = field(kw_only=True, repr=False, compare=False)  # this step's input list in ``figures``

    @property
    def dropped_ids(self) -> list[str]:
        return self.touched.ids[0]

    @property
    def truncated_ids(self) -> list[str]:
        return self.touched.ids[1]

    @property
    def summarized_ids(self) -> list[str]:
        return self.touched.ids[2]

    @property
    def tokens_before(self) -> int:
        return self.figures[self.index]

    @property
    def tokens_after(self) -> int:
        return self.figures[self.index + 1]

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data, token figures included."""
        return {
            "name": self.name,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "dropped_ids": list(self.dropped_ids),
            "truncated_ids": list(self.truncated_ids),
            "summarized_ids": list(self.summarized_ids),
            "notes": list(self.notes),
            "skipped": self.skipped,
        }


@dataclass
class Plan:
    """The fitted conversation and how it was fitted.

    Token figures are for the whole request (messages and tool definitions) as the planner's counter counts it;
    ``fits`` means ``tokens_after <= budget.max_input_tokens``. Message labels in the step reports are message
    ids, or ``#i`` (the position in the input) for messages without one. ``tokens_before`` and the steps' figures
    are counted when first read (see the module docstring).
    """

    messages: list[Any]
    fits: bool
    budget: Budget
    tokens_after: int
    steps: list[StepReport]
    warnings: list[str]
    counter: str
    model: str | None = None
    system_tokens: int = 0  # of the leading system messages (summary included), for budget displays
    # Counting from the newest, the input's user turns (a user message and what follows it up to the next one) that
    # end the fitted conversation verbatim, stopping at the first that does not.
    recent_turns_verbatim: int = 0
    figures: Figures = field(kw_only=True, repr=False, compare=False)

    @property
    def tokens_before(self) -> int:
        return self.figures[0]

    @property
    def budget_used(self) -> float:
        """``tokens_after / budget.max_input_tokens``: the share of the input budget the request uses (over 1 only
        when it does not fit). Low while the input was over budget means a step removed more than it had to."""
        limit = self.budget.max_input_tokens
        return self.tokens_after / limit if limit else float(self.tokens_after > 0)

    def summary(self) -> dict[str, Any]:
        """A JSON-ready digest (for JSONL outputs and dataset jobs)."""
        return {
            "fits": self.fits,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "budget": self.budget.max_input_tokens,
            "budget_used": round(self.budget_used, 4),
            "recent_turns_verbatim": self.recent_turns_verbatim,
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

    ``strategies`` are Strategy objects or registered names (or one name); by default ``filter``,
    ``truncate_tool_output``, ``summarize`` (only when a ``summarizer`` or ``keep_last`` is given) and ``trim``.
    ``keep_last`` keeps at least the last N messages verbatim (a warning says when the budget could not).
    ``broken_tool_pairs``: ``"drop"`` repairs orphan tool results and unanswered calls in the input (the rule is in
    ``ctxwin.strategies.pairs``), ``"keep"`` sends them as they are; both warn, naming the ids.
    """

    def __init__(
        self,
        model: str | None = None,
        strategies: Sequence[Strategy | str] | str | None = None,
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
        broken_tool_pairs: BrokenToolPairs = "drop",
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
        if reserve_output is None:  # the model's max output, but at least half the window left for the input
            reserve = min(reserve, window // 2)
        if reserve >= window:
            raise ValueError(f"reserve_output ({reserve}) must be smaller than the context window ({window})")
        if output not in ("messages", "openai"):
            raise ValueError(f"output must be 'messages' or 'openai', got {output!r}")
        if broken_tool_pairs not in ("drop", "keep"):
            raise ValueError(f"broken_tool_pairs must be 'drop' or 'keep', got {broken_tool_pairs!r}")
        if summarizer is not None and not callable(summarizer):
            raise TypeError(f"summarizer must be callable (list[BaseMessage] -> str), got {summarizer!r}")
        self.tools = list(tools) if tools else None
        self._variants: dict[str, Planner] = {}  # with_tools' planners, by the JSON of their tools
        error = float(getattr(self.counter, "max_relative_error", 0.0) or 0.0)
        margin = safety_margin if safety_margin is not None else math.ceil(error * (window - reserve))
        self.budget = Budget(window, reserve, self._tools_tokens(), margin)
        self.model = spec.name if spec else None
        self.strict = strict
        self.output = output
        self.broken_tool_pairs = broken_tool_pairs
        self.keep_last = keep_last
        chain = _strategy_list(strategies) or _default_chain(summarizer is not None or keep_last is not None)
        self.strategies = [self._strategy(s, summarizer, keep_last, i) for i, s in enumerate(chain)]
        self._later_keeps = [_later_keeps(self.strategies[i + 1 :]) for i in range(len(self.strategies))]

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
    def _strategy(item: Strategy | str, summarizer: Any, keep_last: int | None, index: int) -> Strategy:
        if not isinstance(item, str):
            if not callable(getattr(item, "apply", None)):
                raise TypeError(
                    f"strategies[{index}] must be a registered name or have an apply() method, got {item!r}"
                )
            return item
        try:
            factory = get_strategy_factory(item)
        except ValueError as exc:
            raise ValueError(f"strategies[{index}]: {exc}") from None
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
        return converted, _Labels(converted), Meter(self.counter, self.tools)

    def _check_pairs(self, run: _Run) -> None:
        """No broken tool pair goes out: those of the fitted conversation are repaired (a step of its own) and
        reported as the input's or as a step's. Only the fitted conversation is scanned (the input only when it has
        some), so a plan far over budget does not read the history it drops."""
        broken = find_broken_pairs(run.current)
        if not broken:
            return
        inputs = run.lists[0]
        known = broken if run.current is inputs else find_broken_pairs(inputs)
        inherited = {*known.orphan_ids(inputs), *known.unanswered_ids()}
        current = run.current
        from_input, from_steps = broken.split(current, inherited)
        if from_input and self.broken_tool_pairs == "keep":
            run.warnings.append(
                f"the input has {from_input.describe(current)}, which providers reject; kept (broken_tool_pairs='keep')"
            )
            from_input = BrokenPairs()
        if from_input:
            self._repair(run, from_input, "the input has")
            if from_steps:  # indexes moved: find the rest again in the repaired list
                from_steps = find_broken_pairs(run.current)
        if from_steps:
            self._repair(run, from_steps, "the fitting steps left")

    def _repair(self, run: _Run, broken: BrokenPairs, reason: str) -> None:
        repair = RepairToolPairs(broken=broken, reason=reason)
        run.record(repair, repair.apply(run.current, self.budget, run.meter))

    def _report(
        self, name: str, result: StepResult, labels: _Labels, figures: Figures, index: int
    ) -> StepReport:
        labels.copies_of(result)
        return StepReport(
            name,
            list(result.notes),
            result.skipped,
            touched=Touched(labels, result.dropped, result.truncated, result.summarized),
            figures=figures,
            index=index,
        )

    def _finish(self, run: _Run) -> Plan:
        self._check_pairs(run)
        messages, meter = run.current, run.meter
        after = self._request_tokens(messages, meter)
        run.figures.known(len(run.lists) - 1, after)
        fits = after <= self.budget.max_input_tokens
        steps = run.steps
        warnings = [f"{s.name}: {note}" for s in steps if s.skipped for note in s.notes] + run.warnings
        if not fits:
            kept = [messages[i] for i in must_keep(messages, meter)]
            warnings.append(
                f"does not fit: {after} tokens for a budget of {self.budget.max_input_tokens}; the must-keep part "
                f"(system, pinned, last user message) alone needs {self._request_tokens(kept, meter)}"
            )
        if last_user_index(messages) is None:
            warnings.append("the conversation has no user message")
        inputs = run.lists[0]
        if self.keep_last and messages is not inputs:
            present = set(map(id, messages))
            lost = sum(id(m) not in present for m in inputs[-self.keep_last :])
            if lost:
                warnings.append(
                    f"keep_last={self.keep_last}: {lost} of the last {min(self.keep_last, len(inputs))} messages "
                    "could not be kept verbatim within the budget (shortened or dropped; see the steps)"
                )
        name = getattr(self.counter, "name", type(self.counter).__name__)
        out: list[Any] = convert_to_openai_messages(messages) if self.output == "openai" else messages
        system = sum(meter.each(messages[: leading_system_count(messages)]))
        plan = Plan(
            out, fits, self.budget, after, steps, warnings, name, self.model, system,
            _verbatim_turns(inputs, messages), figures=run.figures,
        )
        if self.strict and not fits:
            raise BudgetExceeded(plan)
        return plan

    def _request_tokens(self, messages: list[BaseMessage], meter: Meter) -> int:
        if not messages:
            return meter.exact(messages)  # an empty request still has the reply priming (and the tools)
        if meter.is_additive(messages):
            return meter.total(messages) + self.budget.tools_tokens
        return meter.exact(messages)

    def _fits(self, messages: list[BaseMessage], meter: Meter) -> bool:
        """Whether the request fits, tokenizing from the newest message back only until it does not."""
        if messages and meter.is_additive(messages):
            return meter.within(messages, self.budget.max_input_tokens - self.budget.tools_tokens)
        return meter.exact(messages) <= self.budget.max_input_tokens

    def plan(self, messages: Any) -> Plan:
        """Apply the strategies in order until the conversation fits; never mutates the input."""
        run = _Run(self, *self._start(messages))
        for strategy in run.pending():
            run.record(strategy, strategy.apply(run.current, self.budget, run.meter))
        return self._finish(run)

    async def aplan(self, messages: Any) -> Plan:
        """``plan`` for async code: strategies with ``aapply`` (async summarizers) are awaited."""
        run = _Run(self, *self._start(messages))
        for strategy in run.pending():
            aapply = getattr(strategy, "aapply", None)
            result = await aapply(run.current, self.budget, run.meter) if aapply else None
            run.record(strategy, result or strategy.apply(run.current, self.budget, run.meter))
        return self._finish(run)


def _strategy_list(strategies: Any) -> list[Any] | None:
    """``strategies`` as a list: one name alone is a chain of one (``"trim"``, not the letters of it)."""
    if strategies is None or isinstance(strategies, str):
        return None if strategies is None else [strategies]
    try:
        return list(strategies)
    except TypeError:
        raise TypeError(
            f"strategies must be a strategy name or a list of names and Strategy objects, got {strategies!r}"
        ) from None


def _verbatim_turns(inputs: list[BaseMessage], fitted: list[BaseMessage]) -> int:
    """How many of the input's user turns, newest first, end ``fitted`` as the same objects (so verbatim), stopping
    at the first that does not; walks only the kept tail."""
    turns = 0
    for original, kept in zip(reversed(inputs), reversed(fitted), strict=False):
        if original is not kept:
            break
        turns += isinstance(original, HumanMessage)
    return turns


def _later_keeps(later: Sequence[Strategy]) -> Keeps | None:
    """Which end of the conversation the first later step that drops by position keeps (a strategy says so in
    its ``keeps``: "last", "first", or "all" for a step that only shrinks or filters); None if no step says."""
    for strategy in later:
        keeps: object = getattr(strategy, "keeps", None)
        if keeps == "last":
            return "last"
        if keeps == "first":
            return "first"
        if keeps != "all":
            return None
    return None


@dataclass
class _Run:
    """One plan in progress: the message list after each step so far, and the reports."""

    planner: Planner
    current: list[BaseMessage]
    labels: _Labels
    meter: Meter
    steps: list[StepReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what the steps said the caller must know

    def __post_init__(self) -> None:
        self.lists = [self.current]
        self.figures = Figures(lambda messages: self.planner._request_tokens(messages, self.meter), self.lists)

    def pending(self) -> Iterator[Strategy]:
        """The strategies still to apply, stopping as soon as the conversation fits."""
        planner = self.planner
        for strategy, keeps in zip(planner.strategies, planner._later_keeps, strict=True):
            if planner._fits(self.current, self.meter):
                return
            self.meter.later_keeps = keeps
            yield strategy

    def record(self, strategy: Strategy, result: StepResult) -> None:
        index = len(self.lists) - 1
        self.steps.append(self.planner._report(strategy.name, result, self.labels, self.figures, index))
        self.warnings.extend(f"{strategy.name}: {warning}" for warning in result.warnings)
        self.current = result.messages
        self.lists.append(self.current)


def fit(
    messages: Any,
    model: str | None = "gpt-4o",
    *,
    context_window: int | None = None,
    reserve_output: int | None = None,
    tools: Sequence[dict[str, Any]] | None = None,
    strategies: Sequence[Strategy | str] | str | None = None,
    summarizer: Any = None,
    keep_last: int | None = None,
    counter: TokenCounter | str | None = None,
    strict: bool = False,
    output: Output = "messages",
    broken_tool_pairs: BrokenToolPairs = "drop",
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
        broken_tool_pairs=broken_tool_pairs,
    ).plan(messages)


__all__ = ["Budget", "BudgetExceeded", "Plan", "Planner", "StepReport", "fit", "is_pinned"]
