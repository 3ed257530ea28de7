"""Token counts for the planner and its strategies.

Every strategy measures the same conversation again and again. The ``Meter`` counts each message object once per
plan, all unseen messages of a call in one batch (which the tiktoken counter spreads over threads), and remembers
the count by object, so a repeat total is a dictionary lookup per message. Unseen messages are looked up in the
counter's shared count cache first (the one ``trim_messages`` uses), so planning a conversation again after it
grew by a turn tokenizes about that turn. It is the ``Counts`` a step is given (``StepContext.counts``), and the
trim step hands its counts to the trim engine as functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from operator import is_not
from typing import Any

from ctxwin.counters.base import TokenCounter
from ctxwin.messages import BaseMessage, HumanMessage
from ctxwin.strategies.pins import is_pinned, pinned_indexes
from ctxwin.trim.measure import AdditiveMeasure, Measure, make_measure


class Meter:
    """Per-message counts and list totals for one counter during one plan (a ``Counts``); ``exact`` asks the
    counter itself."""

    def __init__(self, counter: TokenCounter, tools: Sequence[dict[str, Any]] | None = None) -> None:
        self.counter = counter
        self.tools = list(tools) if tools else None
        self._measure: Measure | None = None
        # id(message) -> count, and the messages counted, held so that no id is reused while the plan runs.
        self._counts: dict[int, int] = {}
        self._held: list[BaseMessage] = []
        # The last list whose pinned messages were found, and their indexes (see ``pinned``).
        self._pinned: tuple[Sequence[BaseMessage], list[int]] | None = None

    def _measure_for(self) -> Measure:
        if self._measure is None:
            self._measure = make_measure(self.counter, HumanMessage(""))
        return self._measure

    @property
    def overhead(self) -> int | None:
        """What a non-empty request adds to its messages' counts; None when the counter is not additive."""
        measure = self._measure_for()
        return int(measure.overhead) if isinstance(measure, AdditiveMeasure) else None

    def each(self, messages: Sequence[BaseMessage]) -> list[int]:
        """Per-message token counts (framing included); unseen messages are counted together in one batch."""
        counts: list[Any] = list(map(self._counts.get, map(id, messages)))  # C loops: totals run on every step
        if None in counts:
            missing = [i for i, count in enumerate(counts) if count is None]
            fresh_messages = [messages[i] for i in missing]
            measure = self._measure_for()
            if isinstance(measure, AdditiveMeasure):  # through the counter's shared cache, as trim_messages counts
                fresh: Sequence[Any] = measure.counts(fresh_messages)
            else:
                fresh = list(map(self.counter.count_message, fresh_messages))
            for i, message, count in zip(missing, fresh_messages, fresh, strict=True):
                self._counts[id(message)] = counts[i] = count
            self._held += fresh_messages
        return counts

    def pinned(self, messages: Sequence[BaseMessage]) -> list[int]:
        """Indexes of the pinned messages. Steps ask this of lists that mostly hold the same objects at the same
        places (a shortened message replaces its original), so a list as long as the last one asked about is
        compared with it by identity (no message is read), and only the messages that differ are looked into.
        Scanning a long history reads every message, which costs milliseconds: they are not in the CPU's cache."""
        if self._pinned is not None and self._pinned[0] is messages:
            return self._pinned[1]
        if self._pinned is not None and len(self._pinned[0]) == len(messages):
            before, indexes = self._pinned
            changed = compress(range(len(messages)), map(is_not, messages, before))
            same = [i for i in indexes if messages[i] is before[i]]
            found = sorted({*same, *(i for i in changed if is_pinned(messages[i]))})
        else:
            found = pinned_indexes(messages)
        self._pinned = (messages, found)
        return found

    def follow(self, messages: Sequence[BaseMessage], pinned: list[int]) -> None:
        """Take ``pinned`` as the pinned indexes of ``messages`` (a session knows them from what was appended), so
        no step scans the history for pins."""
        self._pinned = (messages, pinned)

    def known(self, messages: Sequence[BaseMessage]) -> list[int | None]:
        """The counts already made of ``messages`` (None for the others), tokenizing nothing."""
        return list(map(self._counts.get, map(id, messages)))

    def retain(self, messages: Sequence[BaseMessage]) -> None:
        """Forget the counts of every message but ``messages`` (a session drops the copies its past plans made)."""
        counts = self._counts
        self._counts = {id(m): counts[id(m)] for m in messages if id(m) in counts}
        self._held = [m for m in messages if id(m) in self._counts]

    @property
    def held(self) -> int:
        """How many messages the meter holds counts of."""
        return len(self._held)

    def count(self, message: BaseMessage) -> int:
        """One message's count (``each`` for one message, without building lists)."""
        known = self._counts.get(id(message))
        return known if known is not None else self.each([message])[0]

    def total(self, messages: Sequence[BaseMessage]) -> int:
        """The count of the messages as one request (tool definitions not included)."""
        if not messages:
            return 0
        overhead = self.overhead
        if overhead is None:
            return int(self._measure_for().total(messages, [], 0, len(messages)))
        return sum(self.each(messages)) + overhead

    def exact(self, messages: Sequence[BaseMessage]) -> int:
        """The counter's own count of the whole request, tool definitions included."""
        return self.counter.count_messages(messages, tools=self.tools)

    def text(self, text: str) -> int:
        return self.counter.count_text(text)

    def texts(self, texts: list[str]) -> list[int]:
        """Counts of ``texts``, in one ``count_texts`` call when the counter has one (tiktoken's uses threads)."""
        count_texts = getattr(self.counter, "count_texts", None)
        return list(count_texts(texts)) if callable(count_texts) else list(map(self.counter.count_text, texts))

