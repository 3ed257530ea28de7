"""Shrinking messages oldest first until the conversation fits, skipping what a later step drops anyway.

``filter`` (old reasoning blocks and images) and ``truncate_tool_output`` replace messages by smaller copies, oldest
first, and stop once the conversation fits. When a later step keeps the newest messages (``Meter.later_keeps``,
set by the planner from its chain: trim and summarize do) and the newest messages alone, shrunk, already overflow
the budget, no amount of shrinking makes the conversation fit: that step drops every message older than the
overflow point, whatever it counts. Those messages are then neither shrunk nor tokenized, and the conversation
after that step is the one shrinking everything gives; only the steps' reports differ (a message the later step
drops is reported dropped, not shrunk and dropped). ``"first"`` mirrors this from the oldest end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ctxwin.messages import BaseMessage
from ctxwin.strategies.base import must_keep_with_partners
from ctxwin.strategies.meter import Meter


@dataclass
class Shrunk:
    """Replacements (index -> smaller copy) and, when a later step drops part of the conversation anyway, a note
    for the step's report saying how many messages at its far end were left alone."""

    replacements: dict[int, BaseMessage] = field(default_factory=dict)
    note: str | None = None


def shrink_until_fits(
    messages: Sequence[BaseMessage],
    wanted: Callable[[int], bool],
    shrink: Callable[[list[int]], list[BaseMessage | None]],
    limit: int,
    meter: Meter,
    estimate: Callable[[int], int] | None = None,
) -> Shrunk:
    """Shrink the messages ``wanted(i)`` picks oldest first until the messages count at most ``limit``;
    ``shrink(indexes)`` makes their smaller copies (None where there is none) together, so that a strategy can
    tokenize their pieces in one batch. ``estimate(i)``, when given, is a cheap guess of the shrunk count, used
    while looking for the overflow point so that expensive shrinks (a tool output's cut) are only made for messages
    that may be kept. ``wanted`` is asked only about the messages the search reaches, not the whole history."""
    made: dict[int, BaseMessage | None] = {}

    def real(indexes: list[int]) -> list[BaseMessage | None]:
        new = [i for i in indexes if i not in made]
        if new:
            made.update(zip(new, shrink(new), strict=True))
        return [made[i] for i in indexes]

    keeps = meter.later_keeps
    edge = _overflow(messages, wanted, real, limit, meter, estimate, keeps) if keeps else None
    if edge is not None:  # what lies beyond the edge is dropped by the later step: shrink only the rest
        reachable = range(edge, len(messages)) if keeps == "last" else range(edge + 1)
        outside = [i for i in must_keep_with_partners(messages, meter) if i not in reachable]
        chosen = sorted(i for i in (*outside, *reachable) if wanted(i))
        skipped = edge if keeps == "last" else len(messages) - edge - 1
        end, other = ("oldest", "newer") if keeps == "last" else ("newest", "older")
        note = (f"left the {skipped} {end} messages to a later step, which drops or summarises them: "
                f"the {other} ones alone overflow the budget")
        replacements = {i: s for i, s in zip(chosen, real(chosen), strict=True) if s is not None}
        return Shrunk(replacements, note if replacements else None)  # a step that did nothing has nothing to explain
    done = Shrunk()
    total = meter.total(messages)
    for i in range(len(messages)):
        if total <= limit:
            break
        if not wanted(i):
            continue
        smaller = real([i])[0]
        if smaller is not None:
            total += meter.count(smaller) - meter.count(messages[i])
            done.replacements[i] = smaller
    return done


def _overflow(
    messages: Sequence[BaseMessage],
    wanted: Callable[[int], bool],
    real: Callable[[list[int]], list[BaseMessage | None]],
    limit: int,
    meter: Meter,
    estimate: Callable[[int], int] | None,
    keeps: str,
) -> int | None:
    """The index where the messages from the kept end, each as shrunk, first count over ``limit`` (None if they
    never do, or the counter is not additive). Candidates are counted by ``estimate`` until the sum first
    passes the limit; then their real shrinks are made (together) and the sum checked again."""
    if not messages or not meter.is_additive(messages):
        return None
    room, used = limit - meter.overhead(messages), 0
    guessed: dict[int, int] = {}  # candidates counted by their estimate so far
    for i, count in meter.walk(messages, room, newest_first=keeps == "last"):
        if wanted(i):
            if estimate is not None:
                count = guessed[i] = estimate(i)
            else:
                smaller = real([i])[0]
                count = meter.count(smaller) if smaller is not None else count
        used += count
        if used > room:
            shrunk = [messages[j] if s is None else s for j, s in zip(guessed, real(list(guessed)), strict=True)]
            used += sum(meter.each(shrunk)) - sum(guessed.values())
            guessed.clear()
            if used > room:
                return i
    return None
