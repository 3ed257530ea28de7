"""The strategy contract: ``BaseStrategy``, the ``StepContext`` a step is given, the ``StepResult`` it returns, and
the part of a conversation that must stay.

A strategy gets the messages and a context (the budget, a ``Meter`` of cached token counts for the planner's
counter, which end a later step keeps, the planner's options) and returns a ``StepResult``: the new messages plus
the input messages it dropped, shortened (with their copies) or summarised, so the planner can report every removed
token by message.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.strategies.meter import Meter
from ctxwin.strategies.pins import pinned_indexes
from ctxwin.trim.tool_pairs import ToolPairs

# Which messages a later step of the plan keeps by position: the newest ("last", as trim and summarize do) or the
# oldest ("first"); None when no later step says.
Keeps = Literal["last", "first"]
# What a step says it keeps: an end of the conversation, "all" for a step that only shrinks or filters, or None.
StepKeeps = Literal["last", "first", "all"] | None
# A summarizer: the messages to summarise -> the summary text (or an awaitable of it).
Summarizer = Callable[[list[BaseMessage]], "str | Awaitable[str]"]


def without(messages: Sequence[BaseMessage], indexes: Sequence[int]) -> list[BaseMessage]:
    """``messages`` less those at the sorted ``indexes``, copied by slices (a long history costs no Python loop)."""
    out: list[BaseMessage] = []
    for start, end in zip([-1, *indexes], [*indexes, len(messages)], strict=True):
        out += messages[start + 1 : end]
    return out


def leading_system_count(messages: Sequence[BaseMessage]) -> int:
    count = 0
    while count < len(messages) and isinstance(messages[count], SystemMessage):
        count += 1
    return count


def last_user_index(messages: Sequence[BaseMessage]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return i
    return None


def must_keep(messages: Sequence[BaseMessage], meter: Meter | None = None) -> list[int]:
    """Indexes no strategy may remove: the leading system messages, pinned messages and the last user message.
    During a plan (``meter`` given), pinned messages are found through ``Meter.pinned``."""
    keep = set(range(leading_system_count(messages)))
    keep.update(meter.pinned(messages) if meter is not None else pinned_indexes(messages))
    last = last_user_index(messages)
    if last is not None:
        keep.add(last)
    return sorted(keep)


def must_keep_with_partners(messages: Sequence[BaseMessage], meter: Meter | None = None) -> set[int]:
    """``must_keep`` plus the tool partners of those messages: what no later step can drop, since a call and its
    results are kept or dropped together."""
    return with_partners(messages, set(must_keep(messages, meter)))


def with_partners(messages: Sequence[BaseMessage], keep: set[int]) -> set[int]:
    """``keep`` (indexes) plus the tool calls of the results in it and the results of the calls in it."""
    if not any(isinstance(messages[i], (ToolMessage, AIMessage)) for i in keep):
        return keep  # no tool partners to find: skip indexing the conversation's pairs
    pairs = ToolPairs(messages)
    for result, call in pairs.call_of.items():
        if result in keep:
            keep.add(call)
    for call, results in pairs.results_of.items():
        if call in keep:
            keep.update(result for result, _ in results)
    return keep


def last_turn(messages: Sequence[BaseMessage]) -> set[int]:
    """The last user message, everything after it, and their tool partners before it (a call the user message
    interrupted): what no step may leave a hole in. Empty without a user message."""
    last = last_user_index(messages)
    if last is None:
        return set()
    turn = set(range(last, len(messages)))
    pairs = ToolPairs(messages, suffix_only=True)
    pairs.cover(last)  # indexes the turn, and finds the calls of its results before it
    if any(pairs.call_of[result] < last for result in pairs.call_of if result >= last):
        return with_partners(messages, turn)  # rare: such a call may have other results before the turn
    return turn


@dataclass(frozen=True)
class Budget:
    """What the messages may use: the context window less reserved output, tool definitions and a safety margin."""

    context_window: int
    reserve_output: int
    tools_tokens: int = 0
    safety_margin: int = 0

    def __post_init__(self) -> None:
        for name in ("context_window", "reserve_output", "tools_tokens", "safety_margin"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Budget.{name} must be a non-negative int, got {value!r}")

    @property
    def max_input_tokens(self) -> int:
        """The most the whole request (messages and tool definitions) may count."""
        return max(self.context_window - self.reserve_output - self.safety_margin, 0)

    @property
    def messages_budget(self) -> int:
        """The most the messages may count, tool definitions already taken out."""
        return max(self.max_input_tokens - self.tools_tokens, 0)


@dataclass(frozen=True)
class StepContext:
    """What a step is given besides the messages: the budget, the plan's meter, which end of the conversation the
    first later step that drops by position keeps (a shrinking step leaves alone what it drops anyway), and the
    planner's options (a step reads those it uses: ``summarize`` the summarizer and ``keep_last``)."""

    budget: Budget
    meter: Meter
    later_keeps: Keeps | None = None
    summarizer: Summarizer | None = None
    keep_last: int | None = None


@dataclass
class StepResult:
    """The messages after a strategy, and which of the input messages it dropped, shortened or summarised."""

    messages: list[BaseMessage]
    notes: list[str] = field(default_factory=list)
    dropped: list[BaseMessage] = field(default_factory=list)
    truncated: list[BaseMessage] = field(default_factory=list)
    summarized: list[BaseMessage] = field(default_factory=list)
    skipped: bool = False
    # What the plan must tell its caller (a must-keep part it could not keep whole, a repaired input, ...).
    warnings: list[str] = field(default_factory=list)
    # (input message, the copy of it in ``messages``) for each message the step replaced by a changed copy, so
    # reports name the copy like its original.
    replaced: list[tuple[BaseMessage, BaseMessage]] = field(default_factory=list)


@runtime_checkable
class Strategy(Protocol):
    """One way of shrinking a conversation: a ``name`` and ``apply(messages, context) -> StepResult``, which never
    mutates the messages it is given. Built-in strategies subclass ``BaseStrategy``; any object of this shape is
    accepted by the planner too."""

    name: str

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult: ...


class BaseStrategy(ABC):
    """The base of strategies: ``apply`` to write, the rest has defaults.

    ``keeps`` says which messages the step keeps by position: ``"last"`` (the newest, as trim and summarize do),
    ``"first"``, or ``"all"`` for one that only shrinks or filters (filter, truncate_tool_output). Earlier shrinking
    steps then leave alone what it drops anyway (``StepContext.later_keeps``); with None (the default) they shrink
    everything they would otherwise. ``summarizes``: the step reads the planner's ``summarizer`` and ``keep_last``
    (a planner given those expects such a step in its chain). ``aapply`` runs ``apply`` unless overridden.
    """

    name: str = ""

    @property
    def keeps(self) -> StepKeeps:
        return None

    @property
    def summarizes(self) -> bool:
        return False

    @abstractmethod
    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        """The step's result for ``messages``; never mutates them."""

    async def aapply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        """``apply`` for ``Planner.aplan``: a step that awaits something (an async summarizer) overrides it."""
        return self.apply(messages, context)
