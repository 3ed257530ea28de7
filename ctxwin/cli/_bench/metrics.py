"""What a fitted conversation kept of its original, measured from the two message lists alone. Written from the
definitions in docs/bench.md, not with the engine's helpers, so an engine bug shows as a bad figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.strategies._summarize import SUMMARY_KEY, is_summary


@dataclass(frozen=True)
class Kept:
    """The metrics of one fitted conversation; None where the original has nothing to measure."""

    recent_turns: float | None  # None: the original has no user message
    tool_pairs_intact: bool
    system_kept: bool | None  # None: the original has no leading system message
    summarized: int


def user_turns(messages: Sequence[BaseMessage]) -> list[tuple[int, int]]:
    """``(start, end)`` of each user turn, oldest first."""
    starts = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    return list(zip(starts, [*starts[1:], len(messages)], strict=False))  # no user message: no turn


def recent_turns_verbatim(original: Sequence[BaseMessage], fitted: Sequence[BaseMessage]) -> int:
    """How many of the original's user turns, newest first, end ``fitted`` verbatim."""
    end, kept = len(fitted), 0
    for start, stop in reversed(user_turns(original)):
        size = stop - start
        if size > end or list(fitted[end - size : end]) != list(original[start:stop]):
            break
        end -= size
        kept += 1
    return kept


def recent_turns_kept(original: Sequence[BaseMessage], fitted: Sequence[BaseMessage]) -> float | None:
    turns = len(user_turns(original))
    return recent_turns_verbatim(original, fitted) / turns if turns else None


def _broken_pairs(messages: Sequence[BaseMessage]) -> tuple[set[str], set[str]]:
    """Ids of tool results with no earlier open call, and of calls never answered later."""
    open_calls: set[str] = set()
    orphans: set[str] = set()
    for message in messages:
        if isinstance(message, AIMessage):
            open_calls.update(c["id"] for c in (*message.tool_calls, *message.invalid_tool_calls) if c["id"])
        elif isinstance(message, ToolMessage):
            if message.tool_call_id in open_calls:
                open_calls.discard(message.tool_call_id)
            else:
                orphans.add(message.tool_call_id)
    return orphans, open_calls


def tool_pairs_intact(original: Sequence[BaseMessage], fitted: Sequence[BaseMessage]) -> bool:
    orphans_before, unanswered_before = _broken_pairs(original)
    orphans, unanswered = _broken_pairs(fitted)
    return orphans <= orphans_before and unanswered <= unanswered_before


def system_kept(original: Sequence[BaseMessage], fitted: Sequence[BaseMessage]) -> bool | None:
    count = 0
    while count < len(original) and isinstance(original[count], SystemMessage):
        count += 1
    if not count:
        return None
    return list(fitted[:count]) == list(original[:count])


def _summarized_count(messages: Sequence[BaseMessage]) -> int:
    total = 0
    for message in messages:
        if is_summary(message):
            record: Any = message.response_metadata[SUMMARY_KEY]
            total += int(record.get("summarized_count", 0)) if isinstance(record, dict) else 0
    return total


def messages_summarized(original: Sequence[BaseMessage], fitted: Sequence[BaseMessage]) -> int:
    return max(_summarized_count(fitted) - _summarized_count(original), 0)


def measure(original: Sequence[BaseMessage], fitted: Sequence[BaseMessage]) -> Kept:
    """All metrics of one fitted conversation against its original."""
    return Kept(
        recent_turns_kept(original, fitted),
        tool_pairs_intact(original, fitted),
        system_kept(original, fitted),
        messages_summarized(original, fitted),
    )
