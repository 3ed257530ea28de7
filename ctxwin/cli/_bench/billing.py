"""How a replayed chat loop is billed: each request against the one before it, the way providers bill prompt caching,
in input-token equivalents and, with prices, USD (docs/sessions.md, "The cost model").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ctxwin.counters._caching import CachingRules
from ctxwin.messages import BaseMessage
from ctxwin.strategies._meter import Meter

# The billing: OpenAI-style automatic caching, from 1,024 tokens in 128-token steps at a tenth of the price
# (how OpenAI's newest models and Anthropic's cache reads are priced); prices per million tokens relative to 1.
STANDARD_RULES = CachingRules(
    "automatic", 1024, 128, 1.0, 0.1, 1.0, 0.0,
    source="ctxwin's reference billing: OpenAI's automatic caching rule (1,024 tokens, 128-token steps) at 10%",
    date="2026-11-26",
    ttl="assumed never expiring between the requests of a replay",
    assumed="relative prices (input 1): the cost is in input-token equivalents",
)


@dataclass(frozen=True)
class Bill:
    """One request as billed: its tokens, the prefix shared with the previous request, what the cache read and
    wrote, and the price."""

    tokens: int
    shared: int
    cached: int
    written: int
    billed: float
    cost: float | None

    @property
    def hit(self) -> bool:
        return self.cached > 0


def shared_messages(previous: Sequence[BaseMessage], current: Sequence[BaseMessage]) -> int:
    """How many leading messages of ``current`` equal ``previous``'s (the same object, or equal by value)."""
    shared = 0
    for before, now in zip(previous, current, strict=False):
        if before is not now and before != now:
            break
        shared += 1
    return shared


class Biller:
    """Bills the requests of one conversation in order; ``meter`` counts them (its counts are kept by identity)."""

    def __init__(self, rules: CachingRules, meter: Meter, tools_tokens: int = 0) -> None:
        self.rules = rules
        self.meter = meter
        self.tools_tokens = tools_tokens
        self._previous: list[BaseMessage] | None = None
        self._marked: tuple[int, ...] = ()

    def bill(self, request: list[BaseMessage], tokens: int, marks: Sequence[int] = ()) -> Bill:
        """Bill ``request`` of ``tokens`` (the request's count, tools included) after the previous one; ``marks``:
        the lengths of the prefixes it marks (none: its last message, where writes are billed)."""
        rules = self.rules
        shared = 0
        if self._previous is not None:
            count = shared_messages(self._previous, request)
            if rules.bills_writes:  # read up to the longest prefix the previous request marked
                count = max((end for end in self._marked if end <= count), default=0)
            if count or not rules.bills_writes:
                shared = min(self.tools_tokens + sum(self.meter.each(request[:count])), tokens)
        self._previous = request
        self._marked = tuple(marks) or (len(request),)
        cached = rules.cached_tokens(shared)
        written = tokens - cached if rules.bills_writes and tokens >= rules.min_prefix else 0
        read, write = rules.read_ratio, rules.write_ratio
        billed = tokens - cached - written + cached * (1.0 if read is None else read)
        billed += written * (1.0 if write is None else write)
        return Bill(tokens, shared, cached, written, billed, rules.cost(tokens, cached, written))
