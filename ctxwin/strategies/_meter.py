"""Token counts for the planner and its strategies (``StepContext.counts``): the plan's view of the counter's one count
cache, so a strategy measuring the same conversation again pays a lookup per message.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from operator import is_not
from typing import Any

from ctxwin.counters._base import TokenCounter, checked_count, declared_overhead
from ctxwin.messages import BaseMessage
from ctxwin.strategies._base import leading_system_count
from ctxwin.strategies._pins import head_length, is_pinned, pinned_indexes
from ctxwin.trim._count_cache import CountView, cache_for
from ctxwin.trim._measure import message_batch


class Meter:
    """Per-message counts and list totals for one counter during one plan (a ``Counts``); ``exact`` asks the
    counter itself."""

    def __init__(self, counter: TokenCounter, tools: Sequence[dict[str, Any]] | None = None) -> None:
        self.counter = counter
        self.tools = list(tools) if tools else None
        self._overhead = declared_overhead(counter)
        additive = self._overhead is not None
        self._view = CountView(cache_for(counter) if additive else None, message_batch(counter))
        # The last list whose pinned messages were found, and their indexes (see ``pinned``).
        self._pinned: tuple[Sequence[BaseMessage], list[int]] | None = None
        self._head: tuple[BaseMessage, ...] = ()

    @property
    def head(self) -> tuple[BaseMessage, ...]:
        """A session's fixed head: messages kept as they are right after the system prompt (``pinned`` counts
        them); the planner sets it for each run from what the session asks."""
        return self._head

    @head.setter
    def head(self, messages: Sequence[BaseMessage]) -> None:
        self._head = tuple(messages)
        self._pinned = None  # the pins found with the old head are not this one's

    @property
    def overhead(self) -> int | None:
        """What a non-empty request adds to its messages' counts; None when the counter is not additive."""
        return self._overhead

    def each(self, messages: Sequence[BaseMessage]) -> list[int]:
        """Per-message token counts (framing included); unseen messages are counted together in one batch."""
        return self._view.each(messages)

    def known(self, messages: Sequence[BaseMessage]) -> list[int | None]:
        """The counts already made of ``messages`` (None for the others), tokenizing nothing."""
        return self._view.known(messages)

    def note(self, message: BaseMessage, count: int) -> None:
        """Count ``message`` as ``count`` tokens from now on (measured, not tokenized: ``CountView.note``)."""
        self._view.note(message, count)

    def count(self, message: BaseMessage) -> int:
        """One message's count."""
        return self._view.each([message])[0]

    def total(self, messages: Sequence[BaseMessage]) -> int:
        """The count of the messages as one request (tool definitions not included)."""
        if not messages:
            return 0
        if self._overhead is None:
            return int(checked_count(self.counter.count_messages(messages), self.counter, "a list of messages"))
        return sum(self.each(messages)) + self._overhead

    def exact(self, messages: Sequence[BaseMessage]) -> int:
        """The counter's own count of the whole request, tool definitions included."""
        return self.counter.count_messages(messages, tools=self.tools)

    def text(self, text: str) -> int:
        return self.counter.count_text(text)

    def texts(self, texts: list[str]) -> list[int]:
        """Counts of ``texts``, in one ``count_texts`` call (tiktoken's uses threads)."""
        return list(self.counter.count_texts(texts))

    def pinned(self, messages: Sequence[BaseMessage]) -> list[int]:
        """Indexes of the pinned messages. Steps ask this of lists that mostly hold the same objects at the same
        places (a shortened message replaces its original), so a list as long as the last one asked about is
        compared with it by identity (no message is read), and only the messages that differ are looked into.
        Scanning a long history reads every message, which costs milliseconds: they are not in the CPU's cache.
        The messages of ``head`` found right after the leading system messages count as pinned."""
        if self._pinned is not None and self._pinned[0] is messages:
            return self._pinned[1]
        if self._pinned is not None and len(self._pinned[0]) == len(messages):
            before, indexes = self._pinned
            changed = compress(range(len(messages)), map(is_not, messages, before))
            same = [i for i in indexes if messages[i] is before[i]]
            found = sorted({*same, *(i for i in changed if is_pinned(messages[i]))})
        else:
            found = pinned_indexes(messages)
        if self.head:
            start = leading_system_count(messages)
            found = sorted({*found, *range(start, start + head_length(messages, self.head, start))})
        self._pinned = (messages, found)
        return found

    def follow(self, messages: Sequence[BaseMessage], pinned: list[int]) -> None:
        """Take ``pinned`` as the pinned indexes of ``messages`` (a session knows them from what was appended), so
        no step scans the history for pins."""
        self._pinned = (messages, pinned)

    def retain(self, messages: Sequence[BaseMessage]) -> None:
        """Forget the counts of every message but ``messages`` (a session drops the copies its past plans made)."""
        self._view.retain(messages)

    @property
    def held(self) -> int:
        """How many messages the meter holds counts of."""
        return self._view.held
