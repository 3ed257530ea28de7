"""The strategy contract: ``BaseStrategy``, the ``StepContext`` a step is given, the ``StepResult`` it returns (with a
``Change`` per message it touched, so the planner can report every removed token), and what must stay.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from ctxwin._errors import InvalidInputError
from ctxwin.counters._compaction import newest_compaction
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.messages._placement import is_moved_media
from ctxwin.strategies._ledger import Ledger
from ctxwin.strategies._pins import pinned_indexes
from ctxwin.trim._tool_pairs import ToolPairs

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


def is_user_turn(message: BaseMessage) -> bool:
    """Whether ``message`` opens a user turn: a user message, not one ``place_media`` inserted to carry media moved
    out of a tool result or another message."""
    return isinstance(message, HumanMessage) and not is_moved_media(message)


def last_user_index(messages: Sequence[BaseMessage]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if is_user_turn(messages[i]):
            return i
    return None


Pinned = Callable[[Sequence[BaseMessage]], list[int]]


def must_keep(messages: Sequence[BaseMessage], pinned: Pinned = pinned_indexes) -> list[int]:
    """Indexes no strategy may remove: the leading system messages, pinned messages, the last user message and the
    newest message holding a provider's compaction block (it stands for everything before it: without it the
    provider sees none of that). During a plan, pass ``StepContext.pinned``, which follows the pins across the
    plan's lists."""
    keep = set(range(leading_system_count(messages)))
    keep.update(pinned(messages))
    last = last_user_index(messages)
    if last is not None:
        keep.add(last)
    compacted = newest_compaction(messages)
    if compacted is not None:
        keep.add(compacted)
    return sorted(keep)


def must_keep_with_partners(messages: Sequence[BaseMessage], pinned: Pinned = pinned_indexes) -> set[int]:
    """``must_keep`` plus the tool partners of those messages: what no later step can drop, since a call and its
    results are kept or dropped together."""
    return with_partners(messages, set(must_keep(messages, pinned)))


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


# An agent's working set: the newest tool outputs of the turn it is working on. A cut keeps at least these many
# whole when the budget holds them, however low its target.
WORKING_SET = 3


def working_set_start(messages: Sequence[BaseMessage]) -> int | None:
    """Where the newest tool rounds after the last user message, holding up to its last ``WORKING_SET`` tool
    outputs, start (the AI message that called the oldest of them); None without a tool output and its call after
    the last user message (outputs of earlier turns are not what the agent is working from)."""
    outputs: list[str] = []  # the newest outputs' call ids, newest first
    start = None
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if is_user_turn(message):
            break
        if isinstance(message, ToolMessage) and len(outputs) < WORKING_SET:
            outputs.append(message.tool_call_id)
        elif isinstance(message, AIMessage) and outputs and any(c["id"] == outputs[-1] for c in message.tool_calls):
            start = i
            if len(outputs) == WORKING_SET:
                break
    return start


@dataclass(frozen=True)
class Budget:
    """What the messages may use: the context window less reserved output, tool definitions and a safety margin
    (the tokens kept free for the counter's error). ``target``: the input tokens to fit to when a caller wants fewer
    than the budget allows (a session's cut to its low-water mark; ``aiming_at``), None for the budget itself."""

    context_window: int
    reserve_output: int
    tools_tokens: int = 0
    safety_margin: int = 0
    target: int | None = None

    def __post_init__(self) -> None:
        for name in ("context_window", "reserve_output", "tools_tokens", "safety_margin", "target"):
            value = getattr(self, name)
            if name == "target" and value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InvalidInputError(f"Budget.{name} must be a non-negative int, got {value!r}")

    @property
    def max_input_tokens(self) -> int:
        """The most the whole request (messages and tool definitions) may count: the budget, or ``target``."""
        limit = max(self.context_window - self.reserve_output - self.safety_margin, 0)
        return limit if self.target is None else min(limit, self.target)

    def aiming_at(self, target: int | None) -> Budget:
        """This budget fitting to ``target`` input tokens when that is fewer (None: the budget itself)."""
        if target is None or target >= self.max_input_tokens:
            return self
        return dataclasses.replace(self, target=max(target, 0))

    @property
    def messages_budget(self) -> int:
        """The most the messages may count, tool definitions already taken out."""
        return max(self.max_input_tokens - self.tools_tokens, 0)


class Counts(Protocol):
    """The token counts a step works with: one counter's, each message counted once per plan (the planner's
    ``Meter``). Counts include each message's framing; ``total`` is the messages as one request (without tool
    definitions). ``overhead`` is what a non-empty request adds to the sum of its messages' counts, or None when the
    counter is not additive (a total is then not a sum: only ``total`` answers for a list). ``known`` tells the
    counts already made without tokenizing, so a walk counts only what it reaches (``ctxwin.strategies._walk``:
    ``within``, ``suffix_start``)."""

    @property
    def overhead(self) -> int | None: ...

    def count(self, message: BaseMessage) -> int: ...

    def each(self, messages: Sequence[BaseMessage]) -> list[int]: ...

    def known(self, messages: Sequence[BaseMessage]) -> list[int | None]: ...

    def total(self, messages: Sequence[BaseMessage]) -> int: ...

    def text(self, text: str) -> int: ...

    def texts(self, texts: list[str]) -> list[int]:
        """Counts of ``texts``, counted together (the tiktoken counter spreads them over threads)."""
        ...


@dataclass(frozen=True)
class StepContext:
    """What a step is given besides the messages: the budget, the plan's ``counts``, which end of the conversation
    the first later step that drops by position keeps (a shrinking step leaves alone what it drops anyway), and
    ``pinned`` (the indexes of a list's pinned messages; the planner's follows them across the plan's lists, so no
    step scans a long history for pins again), and ``head``: a session's fixed head, messages kept as they are
    right after the leading system messages (``pinned`` counts them; a summary goes after them). ``ledger``: what
    the conversation told, when the plan carries it in a block of its own (a summary need not say it again)."""

    budget: Budget
    counts: Counts
    later_keeps: Keeps | None = None
    pinned: Pinned = pinned_indexes
    head: Sequence[BaseMessage] = ()
    ledger: Ledger | None = None


ChangeKind = Literal["dropped", "truncated", "summarized", "replaced"]


@dataclass(frozen=True)
class Change:
    """What a step did to some of its input messages: ``dropped`` them; ``truncated`` them (shortened: ``copies``
    are the shorter copies in the result, in the same order); ``summarized`` them (a summary stands for them); or
    ``replaced`` them by changed ``copies`` that are none of those (a call that lost a dropped result's call).
    Reports name a copy like the message it replaced. One record holds many messages, so a trim that drops
    thousands of messages builds one list, not a record each."""

    kind: ChangeKind
    messages: Sequence[BaseMessage]
    copies: Sequence[BaseMessage] | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("dropped", "truncated", "summarized", "replaced"):
            raise InvalidInputError(f"Change.kind must be dropped, truncated, summarized or replaced, got "
                                    f"{self.kind!r}")
        if self.copies is not None and len(self.copies) != len(self.messages):
            raise InvalidInputError(f"Change: {len(self.copies)} copies for {len(self.messages)} messages")


@dataclass
class StepResult:
    """The messages after a strategy, what it did to the input messages, and what it says about it: ``notes`` for
    the report, ``warnings`` the caller must see, ``skipped`` when it did nothing on purpose."""

    messages: list[BaseMessage]
    notes: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    skipped: bool = False
    warnings: list[str] = field(default_factory=list)

    def touched(self, kind: ChangeKind) -> list[BaseMessage]:
        """The input messages of the changes of ``kind``, in order."""
        return [message for change in self.changes if change.kind == kind for message in change.messages]


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
    everything they would otherwise. ``summarizes``: the step summarises (a planner's ``summarizer`` and
    ``keep_last`` fill in the options it leaves unset). ``aapply`` runs ``apply`` unless overridden.
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
