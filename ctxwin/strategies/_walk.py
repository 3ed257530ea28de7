"""Walking a conversation from one end with its token counts, counting only about as far as a room reaches, so a walk
that stops once over its room has tokenized little past that point.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ctxwin.messages import BaseMessage
from ctxwin.strategies._base import Counts
from ctxwin.trim._measure import next_chunk


def walk(
    counts: Counts, messages: Sequence[BaseMessage], room: float, *, newest_first: bool = True, start: int = 0
) -> Iterator[tuple[int, int]]:
    """Indexes and counts of ``messages[start:]``, from the newest (or the oldest) message."""
    order = range(len(messages) - 1, start - 1, -1) if newest_first else range(start, len(messages))
    used, walked = 0, 0
    while walked < len(order):
        span = order[walked : walked + next_chunk(used, walked, room, len(order) - walked)]
        batch = [messages[i] for i in span]
        found = counts.known(batch)
        for k, count in enumerate(found):
            if count is None:  # the rest of the chunk, counted together when the walk reaches it
                found[k:] = counts.each(batch[k:])
                count = found[k]
                assert count is not None  # just counted
            yield span[k], count
            used += count
        walked += len(span)


def suffix_start(counts: Counts, messages: Sequence[BaseMessage], room: float, start: int = 0) -> int:
    """The smallest ``cut >= start`` whose ``messages[cut:]`` count at most ``room`` together (per-message counts,
    no request overhead)."""
    used, cut = 0, len(messages)
    for i, count in walk(counts, messages, room, start=start):
        used += count
        if used > room:
            break
        cut = i
    return cut


def within(counts: Counts, messages: Sequence[BaseMessage], limit: int) -> bool:
    """Whether ``counts.total(messages) <= limit``, counting from the newest message back only until the messages
    are over: far over budget, only about ``limit`` tokens' worth of messages are tokenized."""
    if not messages:
        return limit >= 0
    overhead = counts.overhead
    if overhead is None:  # not additive: only the whole list's count answers
        return counts.total(messages) <= limit
    return suffix_start(counts, messages, limit - overhead) == 0
