"""How a provider caches prompt prefixes and what it charges: ``CachingRules``, one per model, as data with its source
and the date it was read (docs/sessions.md).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from ctxwin._errors import InvalidInputError

CachingMode = Literal["automatic", "explicit"]
_PER_TOKEN = 1e-6  # prices are per million tokens
_PRICES = ("input", "cached_input", "cache_write", "output", "long_write")


@dataclass(frozen=True)
class PriceTier:
    """The prices of a request whose input is over ``above`` tokens: every token of it is billed at these (providers
    bill a long context this way: over 272k tokens on GPT-5.4 to 6.x, over 200k on Gemini 2.5 Pro); a price left None
    is the base price."""

    above: int
    input: float | None = None
    cached_input: float | None = None
    cache_write: float | None = None
    output: float | None = None
    long_write: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.above, bool) or not isinstance(self.above, int) or self.above < 0:
            raise InvalidInputError(f"PriceTier.above must be a non-negative int (input tokens), got {self.above!r}")
        _check_prices(self, "PriceTier")


def _check_prices(prices: object, owner: str) -> None:
    for name in _PRICES:
        value = getattr(prices, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            raise InvalidInputError(f"{owner}.{name} must be a non-negative price per million tokens or None, got "
                                    f"{value!r}")


@dataclass(frozen=True)
class CachingRules:
    """A model's prompt caching and prices; ``source`` (a URL) and ``date`` (``YYYY-MM-DD``, when the figures were
    read there) say where they come from, ``assumed`` what is not published and was assumed."""

    mode: CachingMode
    min_prefix: int
    granularity: int
    input: float | None
    cached_input: float | None
    cache_write: float | None
    output: float | None
    source: str
    date: str
    ttl: str = "5m"
    max_breakpoints: int = 0
    assumed: str = ""
    long_ttl: str = ""
    long_write: float | None = None
    cache_key: bool = False
    tiers: tuple[PriceTier, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in ("automatic", "explicit"):
            raise InvalidInputError(f"CachingRules.mode must be 'automatic' or 'explicit', got {self.mode!r}")
        for name in ("min_prefix", "granularity", "max_breakpoints"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInputError(f"CachingRules.{name} must be a non-negative int, got {value!r}")
        if self.granularity < 1:
            raise InvalidInputError(f"CachingRules.granularity must be at least 1, got {self.granularity}")
        if self.mode == "explicit" and self.max_breakpoints < 1:
            raise InvalidInputError("CachingRules: explicit caching needs max_breakpoints >= 1 (Anthropic allows 4)")
        if self.long_write is not None and not self.long_ttl:
            raise InvalidInputError("CachingRules.long_write prices a longer cache lifetime: it needs long_ttl (e.g. "
                                    "'1h')")
        _check_prices(self, "CachingRules")
        if isinstance(self.tiers, PriceTier) or not all(isinstance(tier, PriceTier) for tier in self.tiers):
            raise InvalidInputError("CachingRules.tiers must be a tuple of PriceTier")
        object.__setattr__(self, "tiers", tuple(sorted(self.tiers, key=lambda tier: tier.above)))
        if not isinstance(self.source, str) or not self.source.strip():
            raise InvalidInputError("CachingRules.source must say where the figures come from (a URL)")
        if not isinstance(self.date, str) or len(self.date) != 10 or self.date[4] != "-" or self.date[7] != "-":
            raise InvalidInputError(f"CachingRules.date must be YYYY-MM-DD, got {self.date!r}")

    @property
    def priced(self) -> bool:
        """Whether input, cached input and cache write prices are all known (so a cost can be estimated)."""
        return None not in (self.input, self.cached_input, self.cache_write)

    @property
    def read_ratio(self) -> float | None:
        """The cached input price as a fraction of the input price (0.1: a cached token costs a tenth)."""
        return self.cached_input / self.input if self.input and self.cached_input is not None else None

    @property
    def write_ratio(self) -> float | None:
        """The cache write price as a multiple of the input price (1.25 for Anthropic's 5-minute writes, 1 when a
        write costs what any input token costs)."""
        return self.cache_write / self.input if self.input and self.cache_write is not None else None

    @property
    def long_write_ratio(self) -> float | None:
        """The ``long_ttl`` write price as a multiple of the input price (2 for Anthropic's one-hour writes)."""
        return self.long_write / self.input if self.input and self.long_write is not None else None

    @property
    def bills_writes(self) -> bool:
        """Whether a request writes what it adds to the cache at a price of its own: explicit caching, or automatic
        caching with a write fee (OpenAI from GPT-5.6); automatic caching without one writes at the input price."""
        return self.mode == "explicit" or (self.write_ratio is not None and self.write_ratio != 1)

    def ttl_seconds(self, ttl: str) -> float | None:
        """``ttl`` (``"5m"``, ``"1h"``, ``"30m"``, ``"12h"``...) in seconds; None for a description that is not
        one duration."""
        units = {"s": 1, "m": 60, "h": 3600}
        head, unit = ttl[:-1], ttl[-1:]
        return float(head) * units[unit] if head.isdigit() and unit in units else None

    def cached_tokens(self, shared: int) -> int:
        """How many of ``shared`` prefix tokens (the prefix a request shares with a cached one) are read from the
        cache: none below ``min_prefix``, else rounded down to ``granularity``."""
        if shared < self.min_prefix or shared <= 0:
            return 0
        return shared // self.granularity * self.granularity

    def at(self, input_tokens: int) -> CachingRules:
        """These rules with the prices a request of ``input_tokens`` is billed at, and no tiers: the highest tier it
        is over (its prices, the base ones where it leaves one None), else the base prices."""
        over = [tier for tier in self.tiers if input_tokens > tier.above]
        if not over:
            return dataclasses.replace(self, tiers=()) if self.tiers else self
        prices = {name: getattr(over[-1], name) for name in _PRICES if getattr(over[-1], name) is not None}
        return dataclasses.replace(self, tiers=(), **prices)

    def cost(self, input_tokens: int, cached: int = 0, written: int = 0, output_tokens: int = 0, *,
             written_long: int = 0) -> float | None:
        """The USD cost of one request: ``input_tokens`` in all, of which ``cached`` read from the cache and
        ``written`` written to it (the rest billed as plain input), ``written_long`` of those at the ``long_ttl``
        price (the plain write price when the long one is not published), and ``output_tokens``, at the prices of
        its tier (``at``); None when unpriced."""
        if self.tiers:
            return self.at(input_tokens).cost(input_tokens, cached, written, output_tokens, written_long=written_long)
        if not self.priced:
            return None
        if not (cached >= 0 and 0 <= written_long <= written and cached + written <= input_tokens):
            raise InvalidInputError(
                f"cached ({cached}) and written ({written}, {written_long} of them at the long lifetime) tokens must "
                f"be non-negative and together at most the request's {input_tokens} input tokens"
            )
        assert self.input is not None and self.cached_input is not None and self.cache_write is not None
        plain = input_tokens - cached - written
        long_price = self.cache_write if self.long_write is None else self.long_write
        total = (plain * self.input + cached * self.cached_input + (written - written_long) * self.cache_write
                 + written_long * long_price)
        return (total + output_tokens * (self.output or 0.0)) * _PER_TOKEN
