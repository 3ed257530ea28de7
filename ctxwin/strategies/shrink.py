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
    candidates: Sequence[int],
    shrink: Callable[[int], BaseMessage | None],
    limit: int,
    meter: Meter,
    estimate: Callable[[int], int] | None = None,
) -> Shrunk:
    """Shrink ``messages[i]`` for ``i`` in ``candidates`` (ascending) oldest first until the messages count at most
    ``limit``; ``shrink(i)`` is the smaller copy or None. ``estimate(i)``, when given, is a cheap guess of the
    shrunk count, used while looking for the overflow point so that expensive shrinks (a tool output's cut) are
    only made for messages that may be kept."""
    made: dict[int, BaseMessage | None] = {}

    def real(i: int) -> BaseMessage | None:
        if i not in made:
            made[i] = shrink(i)
        return made[i]

    keeps = meter.later_keeps
    edge = _overflow(messages, set(candidates), real, limit, meter, estimate, keeps) if keeps else None
    if edge is not None:  # what lies beyond the edge is dropped by the later step: shrink only the rest
        reachable = range(edge, len(messages)) if keeps == "last" else range(edge + 1)
        outside = [i for i in candidates if i not in reachable]
        kept_anyway = must_keep_with_partners(messages) if outside else set()
        chosen = [i for i in candidates if i in reachable or i in kept_anyway]
        skipped = edge if keeps == "last" else len(messages) - edge - 1
        end, other = ("oldest", "newer") if keeps == "last" else ("newest", "older")
        note = (f"left the {skipped} {end} messages to a later step, which drops or summarises them: "
                f"the {other} ones alone overflow the budget")
        return Shrunk({i: s for i in chosen if (s := real(i)) is not None}, note)
    done = Shrunk()
    total = meter.total(messages)
    for i in candidates:
        if total <= limit:
            break
        smaller = real(i)
        if smaller is not None:
            total += meter.count(smaller) - meter.count(messages[i])
            done.replacements[i] = smaller
    return done


def _overflow(
    messages: Sequence[BaseMessage],
    candidates: set[int],
    real: Callable[[int], BaseMessage | None],
    limit: int,
    meter: Meter,
    estimate: Callable[[int], int] | None,
    keeps: str,
) -> int | None:
    """The index where the messages from the kept end, each as shrunk, first count over ``limit`` (None if they
    never do, or the counter is not additive). Candidates are counted by ``estimate`` until the sum first
    passes the limit; then their real shrinks are made and the sum checked again."""
    if not messages or not meter.is_additive(messages):
        return None
    room, used = limit - meter.overhead(messages), 0
    guessed: list[tuple[int, int]] = []  # candidates counted by their estimate so far
    for i, count in meter.walk(messages, room, newest_first=keeps == "last"):
        if i in candidates:
            if estimate is not None:
                guess = estimate(i)
                guessed.append((i, guess))
                count = guess
            else:
                smaller = real(i)
                count = meter.count(smaller) if smaller is not None else count
        used += count
        if used > room:
            for j, guess in guessed:
                smaller = real(j)
                used += meter.count(smaller if smaller is not None else messages[j]) - guess
            guessed.clear()
            if used > room:
                return i
    return None
