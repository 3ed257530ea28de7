"""Token counts for the planner and its strategies.

Every strategy measures the same conversation again and again. The ``Meter`` counts each message object once per
plan, all unseen messages of a call in one batch (which the tiktoken counter spreads over threads), and remembers
the count by object, so a repeat total is a dictionary lookup per message. Unseen messages are looked up in the
counter's shared count cache first (the one ``trim_messages`` uses), so planning a conversation again after it
grew by a turn tokenizes about that turn. The trim step sees the same counts
through ``as_counter``. ``within`` answers "does it fit?" counting from the newest message back only until the
answer is no, so a plan never tokenizes history it is about to drop just to learn that it must drop some.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import compress
from operator import is_not
from typing import Any

from ctxwin.counters.base import TokenCounter
from ctxwin.messages import BaseMessage
from ctxwin.strategies.pins import is_pinned, pinned_indexes
from ctxwin.trim.measure import AdditiveMeasure, Measure, make_measure, next_chunk


class Meter:
    """Per-message counts and list totals for one counter during one plan; ``exact`` asks the counter itself."""

    def __init__(self, counter: TokenCounter, tools: Sequence[dict[str, Any]] | None = None) -> None:
        self.counter = counter
        self.tools = list(tools) if tools else None
        self._measure: Measure | None = None
        # id(message) -> count, and the messages counted, held so that no id is reused while the plan runs.
        self._counts: dict[int, int] = {}
        self._held: list[BaseMessage] = []
        # The last list whose pinned messages were found, and their indexes (see ``pinned``).
        self._pinned: tuple[Sequence[BaseMessage], list[int]] | None = None

    def _measure_for(self, sample: BaseMessage) -> Measure:
        if self._measure is None:
            self._measure = make_measure(self.counter, sample)
        return self._measure

    def is_additive(self, messages: Sequence[BaseMessage]) -> bool:
        """Whether totals are sums of per-message counts (else every total asks the counter); the counter is probed
        with the first message the first time."""
        return not messages or isinstance(self._measure_for(messages[0]), AdditiveMeasure)

    def each(self, messages: Sequence[BaseMessage]) -> list[int]:
        """Per-message token counts (framing included); unseen messages are counted together in one batch."""
        counts: list[Any] = list(map(self._counts.get, map(id, messages)))  # C loops: totals run on every step
        if None in counts:
            missing = [i for i, count in enumerate(counts) if count is None]
            fresh_messages = [messages[i] for i in missing]
            measure = self._measure_for(fresh_messages[0])
            if isinstance(measure, AdditiveMeasure):  # through the counter's shared cache, as trim_messages counts
                fresh: Sequence[Any] = measure.counts(fresh_messages)
            else:
                fresh = list(map(self.counter.count_message, fresh_messages))
            for i, message, count in zip(missing, fresh_messages, fresh, strict=True):
                self._counts[id(message)] = counts[i] = count
            self._held += fresh_messages
        return counts

    def known(self, messages: Sequence[BaseMessage]) -> list[int | None]:
        """The counts already made of ``messages`` (None for the others), tokenizing nothing."""
        return list(map(self._counts.get, map(id, messages)))

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

    def content_tokens(self, message: BaseMessage) -> int:
        """The tokens a message's text content adds to it, from its remembered count and that of an empty copy, so a
        large text is not tokenized a second time (for the built-in counters: exactly its text's tokens)."""
        if not isinstance(message.content, str):
            return self.text(message.text)
        empty = message.model_copy(update={"content": ""})  # counted directly: it is counted once, so not cached
        return self.count(message) - self.counter.count_message(empty)

    def total(self, messages: Sequence[BaseMessage]) -> int:
        """The count of the messages as one request (tool definitions not included)."""
        if not messages:
            return 0
        if not self.is_additive(messages):
            return int(self._measure_for(messages[0]).total(messages, [], 0, len(messages)))
        return sum(self.each(messages)) + self.overhead(messages)

    def overhead(self, messages: Sequence[BaseMessage]) -> int:
        """What a non-empty request adds to its messages' counts (reply priming), for an additive counter."""
        measure = self._measure_for(messages[0])
        assert isinstance(measure, AdditiveMeasure)
        return int(measure.overhead)

    def within(self, messages: Sequence[BaseMessage], limit: int) -> bool:
        """Whether ``total(messages) <= limit``, counting from the newest message back only until the messages are
        over: far over budget, only about ``limit`` tokens' worth of messages are tokenized."""
        if not messages:
            return limit >= 0
        if not self.is_additive(messages):
            return self.total(messages) <= limit
        return self.suffix_start(messages, limit - self.overhead(messages)) == 0

    def suffix_start(self, messages: Sequence[BaseMessage], room: float, start: int = 0) -> int:
        """The smallest ``cut >= start`` whose ``messages[cut:]`` count at most ``room`` together (per-message
        counts, no request overhead)."""
        used, cut = 0, len(messages)
        for i, count in self.walk(messages, room, start=start):
            used += count
            if used > room:
                break
            cut = i
        return cut

    def walk(
        self, messages: Sequence[BaseMessage], room: float, *, newest_first: bool = True, start: int = 0
    ) -> Iterator[tuple[int, int]]:
        """Indexes and counts of ``messages[start:]`` from one end. Counted messages are looked up one by one; the
        others are counted in batches sized (as the trim engine sizes them) to what ``room`` holds at the average
        so far, so a caller that stops once over ``room`` has tokenized little past that point, however far
        earlier steps had counted."""
        order = range(len(messages) - 1, start - 1, -1) if newest_first else range(start, len(messages))
        known, used, walked = self._counts, 0, 0
        while walked < len(order):
            count = known.get(id(messages[order[walked]]))
            if count is not None:
                yield order[walked], count
                used += count
                walked += 1
                continue
            span = order[walked : walked + next_chunk(used, walked, room, len(order) - walked)]
            for i, count in zip(span, self.each([messages[i] for i in span]), strict=True):
                yield i, count
                used += count
            walked += len(span)

    def as_counter(self) -> TokenCounter:
        """A TokenCounter answering from this meter, so the trim engine reuses the plan's counts."""
        return _MeteredCounter(self)

    def exact(self, messages: Sequence[BaseMessage]) -> int:
        """The counter's own count of the whole request, tool definitions included."""
        return self.counter.count_messages(messages, tools=self.tools)

    def text(self, text: str) -> int:
        return self.counter.count_text(text)

    def texts(self, texts: list[str]) -> list[int]:
        """Counts of ``texts``, in one ``count_texts`` call when the counter has one (tiktoken's uses threads)."""
        count_texts = getattr(self.counter, "count_texts", None)
        return list(count_texts(texts)) if callable(count_texts) else list(map(self.counter.count_text, texts))


class _MeteredCounter:
    """The planner's counter as the trim engine sees it: the same counts, none of them tokenized twice.

    No ``__weakref__`` slot: the engine then keeps no content-keyed cache for it (the meter already remembers every
    count), which saves keying each message again.
    """

    __slots__ = ("_meter", "name")

    def __init__(self, meter: Meter) -> None:
        self._meter = meter
        self.name = getattr(meter.counter, "name", "metered")

    def count_text(self, text: str) -> int:
        return self._meter.text(text)

    def count_message(self, message: BaseMessage) -> int:
        return self._meter.count(message)

    def count_message_batch(self, messages: Sequence[BaseMessage]) -> list[int]:
        return self._meter.each(messages)

    def known_counts(self, messages: Sequence[BaseMessage]) -> list[int | None]:
        """The counts the meter already holds (None for the others), so the engine tokenizes only the messages its
        walk reaches, however far earlier steps had counted."""
        return self._meter.known(messages)

    def count_messages(self, messages: Sequence[BaseMessage], *, tools: Sequence[dict[str, Any]] | None = None) -> int:
        return self._meter.total(messages)
