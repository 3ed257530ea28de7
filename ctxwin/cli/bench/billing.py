"""How a replayed chat loop is billed: each request against the one before it, the way providers bill prompt caching.

A request's prefix shared with the previous request is its tool definitions (when they are the same) and its
leading messages equal to the previous request's, counted by the bench's counter; it is measured by message, so a
message changed in its middle shares nothing (a provider compares tokens and could read a few more from the cache:
the figures are a lower bound for every chain alike). The cache reads ``rules.cached_tokens(shared)`` of it (none
below the minimum prefix, then in the provider's steps). With explicit caching (Anthropic), every chain is taken to
mark a breakpoint on its last message, as Anthropic's automatic caching does: the rest of the request is written
to the cache, at the write price, when the request reaches the minimum prefix. With automatic caching a write costs
what any input token costs.

``billed`` is in input-token equivalents (a cached token counts ``read_ratio``, a written one ``write_ratio``), so
chains compare without prices; ``cost`` is in USD when the rules have prices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ctxwin.counters.caching import CachingRules
from ctxwin.messages import BaseMessage
from ctxwin.strategies.meter import Meter

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

    def bill(self, request: list[BaseMessage], tokens: int) -> Bill:
        """Bill ``request`` of ``tokens`` (the request's count, tools included) after the previous one."""
        rules = self.rules
        shared = 0
        if self._previous is not None:
            count = shared_messages(self._previous, request)
            shared = min(self.tools_tokens + sum(self.meter.each(request[:count])), tokens)
        self._previous = request
        cached = rules.cached_tokens(shared)
        written = tokens - cached if rules.mode == "explicit" and tokens >= rules.min_prefix else 0
        read, write = rules.read_ratio, rules.write_ratio
        billed = tokens - cached - written + cached * (1.0 if read is None else read)
        billed += written * (1.0 if write is None else write)
        return Bill(tokens, shared, cached, written, billed, rules.cost(tokens, cached, written))
