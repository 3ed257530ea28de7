"""Broken tool pairs (orphan results, unanswered calls, media moved out of a result no longer sent), which OpenAI
refuses, and their repair: dropping the least that makes the request valid (docs/planner.md).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import compress, count, repeat
from operator import attrgetter

from ctxwin.messages import AIMessage, BaseMessage, ToolMessage
from ctxwin.messages._placement import MOVED_FROM
from ctxwin.strategies._base import BaseStrategy, Change, StepContext, StepKeeps, StepResult
from ctxwin.trim._tool_pairs import call_ids, keep_tool_calls

# The message types that can take part in a pair; every other message is passed over by a C loop.
_AI_TYPES = frozenset({"ai", "AIMessageChunk"})
_TOOL_TYPES = frozenset({"tool", "ToolMessageChunk"})
# Ids named in a note or warning before "and N more".
_NAMED = 8


@dataclass
class BrokenPairs:
    """Where a conversation's tool pairs are broken: orphan results, and the unanswered call ids of each AIMessage."""

    orphans: list[int] = field(default_factory=list)  # indexes of ToolMessages answering no call
    unanswered: dict[int, list[str]] = field(default_factory=dict)  # AIMessage index -> its unanswered call ids
    stray: list[int] = field(default_factory=list)  # indexes of moved media whose tool results are gone

    def __bool__(self) -> bool:
        return bool(self.orphans or self.unanswered or self.stray)

    def orphan_ids(self, messages: Sequence[BaseMessage]) -> list[str]:
        return [messages[i].tool_call_id for i in self.orphans]  # type: ignore[attr-defined]

    def unanswered_ids(self) -> list[str]:
        return [call_id for ids in self.unanswered.values() for call_id in ids]

    def split(self, messages: Sequence[BaseMessage], ids: set[str]) -> tuple[BrokenPairs, BrokenPairs]:
        """These broken pairs in two: those whose call id is in ``ids``, and the others (stray media: a step's)."""
        parts = (BrokenPairs(), BrokenPairs(stray=list(self.stray)))
        for i in self.orphans:
            parts[messages[i].tool_call_id not in ids].orphans.append(i)  # type: ignore[attr-defined]
        for i, call_ids_ in self.unanswered.items():
            for call_id in call_ids_:
                parts[call_id not in ids].unanswered.setdefault(i, []).append(call_id)
        return parts

    def describe(self, messages: Sequence[BaseMessage]) -> str:
        """``"2 orphan tool results (call_1, call_2), 1 unanswered tool call (call_9)"``, for notes and warnings."""
        parts = []
        for what, ids in (("orphan tool result", self.orphan_ids(messages)),
                          ("unanswered tool call", self.unanswered_ids())):
            if ids:
                named = ", ".join(ids[:_NAMED]) + (f" and {len(ids) - _NAMED} more" if len(ids) > _NAMED else "")
                parts.append(f"{len(ids)} {what}{'s' if len(ids) > 1 else ''} ({named})")
        if self.stray:
            parts.append(f"{len(self.stray)} message{'s' if len(self.stray) > 1 else ''} of media moved out of tool "
                         "results no longer sent")
        return ", ".join(parts)


def find_broken_pairs(messages: Sequence[BaseMessage], *, strays: bool = True) -> BrokenPairs:
    """The broken pairs of ``messages``. Most conversations have none, which comprehensions over the AI and tool
    messages confirm (distinct ids, each result after its call, every call answered); only otherwise are the
    messages walked one by one. ``strays=False`` leaves out stray media (none where no step dropped anything)."""
    types = list(map(attrgetter("type"), messages))
    broken = _pairs(messages, types)
    if strays:
        broken.stray = _stray_media(messages, types)
    return broken


def _stray_media(messages: Sequence[BaseMessage], types: list[str]) -> list[int]:
    """The indexes of moved media (``MOVED_FROM``) whose tool calls no result in ``messages`` answers."""
    humans = list(compress(count(), map("human".__eq__, types)))
    kwargs = map(attrgetter("additional_kwargs"), map(messages.__getitem__, humans))
    moved = list(compress(humans, map(operator.contains, kwargs, repeat(MOVED_FROM))))
    if not moved:
        return []
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    return [i for i in moved if not answered.issuperset(messages[i].additional_kwargs[MOVED_FROM])]


def _pairs(messages: Sequence[BaseMessage], types: list[str]) -> BrokenPairs:
    tools = list(compress(count(), map(_TOOL_TYPES.__contains__, types)))
    ai_indexes = list(compress(count(), map(_AI_TYPES.__contains__, types)))
    ais = list(map(messages.__getitem__, ai_indexes))
    callers = list(compress(ais, map(attrgetter("tool_calls"), ais)))
    if not tools and not callers and not any(map(attrgetter("invalid_tool_calls"), ais)):
        return BrokenPairs()
    # C loops and flat lists only: a tuple per call would wake the garbage collector over the whole history.
    ids = [call["id"] for message in callers for call in message.tool_calls]  # type: ignore[attr-defined]
    where = [i for i, message in zip(ai_indexes, ais, strict=True) for _ in message.tool_calls]  # type: ignore[attr-defined]
    called = dict(zip(ids, where, strict=True))
    answers = list(map(attrgetter("tool_call_id"), map(messages.__getitem__, tools)))
    if (
        len(called) == len(ids) == len(answers) == len(set(answers))
        and not any(map(attrgetter("invalid_tool_calls"), ais))
        and all(map(operator.lt, map(called.get, answers, repeat(len(messages))), tools))
    ):
        return BrokenPairs()
    return _walk([*tools, *(i for i in ai_indexes if _has_calls(messages[i]))], messages)


def _has_calls(message: BaseMessage) -> bool:
    return bool(message.tool_calls or message.invalid_tool_calls)  # type: ignore[attr-defined]


def _walk(indexes: list[int], messages: Sequence[BaseMessage]) -> BrokenPairs:
    """``find_broken_pairs`` message by message, over the tool messages and AI messages with calls."""
    broken = BrokenPairs()
    open_calls: dict[str, int] = {}  # call id -> the AIMessage waiting for its result
    for i in sorted(indexes):
        message = messages[i]
        if isinstance(message, ToolMessage):
            if open_calls.pop(message.tool_call_id, None) is None:
                broken.orphans.append(i)
        elif isinstance(message, AIMessage):
            for call_id in call_ids(message):
                open_calls[call_id] = i
    for call_id, i in open_calls.items():
        broken.unanswered.setdefault(i, []).append(call_id)
    return broken


@dataclass
class RepairToolPairs(BaseStrategy):
    """Drop orphan tool results and remove unanswered tool calls (the rule: docs/planner.md); the planner runs it on
    its input (``broken_tool_pairs="drop"``) and, should a step have broken a pair, on its output."""

    name: str = "repair_tool_pairs"
    broken: BrokenPairs | None = None  # already found by the caller
    reason: str = "the input has"

    @property
    def keeps(self) -> StepKeeps:
        return "all"

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        broken = self.broken if self.broken is not None else find_broken_pairs(messages)
        if not broken:
            return StepResult(list(messages))
        dropped = {*broken.orphans, *broken.stray}
        replaced: dict[int, BaseMessage] = {}
        for i, ids in broken.unanswered.items():
            call = messages[i]
            assert isinstance(call, AIMessage)  # find_broken_pairs lists only AIMessages
            smaller = keep_tool_calls(call, _keeping(set(ids)))
            if not smaller.content and not smaller.tool_calls and not smaller.invalid_tool_calls:
                dropped.add(i)
                continue
            replaced[i] = smaller
        what = broken.describe(messages)
        return StepResult(
            [replaced.get(i, m) for i, m in enumerate(messages) if i not in dropped],
            [f"{self.reason} {what}: dropped orphan results{' and stray media' if broken.stray else ''} and removed "
             "unanswered calls"],
            [
                Change("dropped", [messages[i] for i in sorted(dropped)]),
                Change("truncated", [messages[i] for i in replaced], list(replaced.values())),
            ],
            warnings=[f"{self.reason} {what}, which providers reject; repaired (see docs/planner.md)"],
        )


def _keeping(lost: set[str]) -> Callable[[str | None], bool]:
    return lambda call_id: call_id not in lost
