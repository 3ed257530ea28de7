"""Token counts for the planner and its strategies.

Every strategy measures the same conversation again and again. The ``Meter`` counts each message object once per
plan, all unseen messages of a call in one batch (which the tiktoken counter spreads over threads), and remembers
the count by object, so a repeat total is a dictionary lookup per message. The trim step sees the same counts
through ``as_counter``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxwin.counters.base import TokenCounter
from ctxwin.engine.counter_adapter import make_measure
from ctxwin.engine.measure import AdditiveMeasure, Measure
from ctxwin.messages import BaseMessage


class Meter:
    """Per-message counts and list totals for one counter during one plan; ``exact`` asks the counter itself."""

    def __init__(self, counter: TokenCounter, tools: Sequence[dict[str, Any]] | None = None) -> None:
        self.counter = counter
        self.tools = list(tools) if tools else None
        self._measure: Measure | None = None
        # id(message) -> count, and the messages counted, held so that no id is reused while the plan runs.
        self._counts: dict[int, int] = {}
        self._held: list[BaseMessage] = []
        self._overhead: int | None = None

    def _measure_for(self, sample: BaseMessage) -> Measure:
        if self._measure is None:
            self._measure = make_measure(self.counter, sample)
        return self._measure

    @property
    def additive(self) -> bool:
        """Whether totals are sums of per-message counts (else every total asks the counter)."""
        return self._measure is None or isinstance(self._measure, AdditiveMeasure)

    def each(self, messages: Sequence[BaseMessage]) -> list[int]:
        """Per-message token counts (framing included); unseen messages are counted together in one batch."""
        counts: list[Any] = list(map(self._counts.get, map(id, messages)))  # C loops: totals run on every step
        if None in counts:
            missing = [i for i, count in enumerate(counts) if count is None]
            fresh_messages = [messages[i] for i in missing]
            batch = getattr(self.counter, "count_message_batch", None)
            fresh = batch(fresh_messages) if callable(batch) else list(map(self.counter.count_message, fresh_messages))
            for i, message, count in zip(missing, fresh_messages, fresh, strict=True):
                self._counts[id(message)] = counts[i] = count
            self._held += fresh_messages
        return counts

    def count(self, message: BaseMessage) -> int:
        """One message's count (``each`` for one message, without building lists)."""
        known = self._counts.get(id(message))
        return known if known is not None else self.each([message])[0]

    def content_tokens(self, message: BaseMessage) -> int:
        """The tokens a message's text content adds to it, from its remembered count and that of an empty copy, so a
        large text is not tokenized a second time (for the built-in counters: exactly its text's tokens)."""
        if not isinstance(message.content, str):
            return self.text(message.text)
        return self.count(message) - self.count(message.model_copy(update={"content": ""}))

    def total(self, messages: Sequence[BaseMessage]) -> int:
        """The count of the messages as one request (tool definitions not included)."""
        if not messages:
            return 0
        measure = self._measure_for(messages[0])
        if not isinstance(measure, AdditiveMeasure):
            return int(measure.total(messages, [], 0, len(messages)))
        if self._overhead is None:
            self._overhead = int(measure.total(messages[:1], [], 0, 1)) - self.each(messages[:1])[0]
        return sum(self.each(messages)) + self._overhead

    def as_counter(self) -> TokenCounter:
        """A TokenCounter answering from this meter, so the trim engine reuses the plan's counts."""
        return _MeteredCounter(self)

    def exact(self, messages: Sequence[BaseMessage]) -> int:
        """The counter's own count of the whole request, tool definitions included."""
        return self.counter.count_messages(messages, tools=self.tools)

    def text(self, text: str) -> int:
        return self.counter.count_text(text)


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

    def count_messages(self, messages: Sequence[BaseMessage], *, tools: Sequence[dict[str, Any]] | None = None) -> int:
        return self._meter.total(messages)
