"""Model figures from genai-prices, read at run time so that its updates reach users without a ctxwin release:
context windows and prices, found by genai-prices' own match rules.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any

from ctxwin.counters._caching import PriceTier

# A model's maker prices it first: a host that resells it is asked only when no maker lists the name.
MAKERS = ("openai", "anthropic", "google", "mistral", "deepseek", "moonshotai", "zhipuai", "zai", "x-ai", "cohere",
          "meta", "minimax")
# genai-prices' price keys, as ctxwin names them (``CachingRules``); a 1-hour cache write is Anthropic's long one.
_KEYS = (("input", "input_mtok"), ("cached_input", "cache_read_mtok"), ("cache_write", "cache_write_mtok"),
         ("long_write", "cache_write_1h_mtok"), ("output", "output_mtok"))


@dataclass(frozen=True)
class SourcePrices:
    """A model's prices as genai-prices gives them today, USD per million tokens. ``since``: the date they took effect
    (``YYYY-MM-DD``, "" when genai-prices gives none); ``peak``: prices change with the time of day (DeepSeek's
    off-peak hours) and these are the highest of them, so a cost is never under-estimated."""

    input: float | None
    cached_input: float | None
    cache_write: float | None
    long_write: float | None
    output: float | None
    tiers: tuple[PriceTier, ...]
    since: str
    peak: bool


@dataclass(frozen=True)
class SourceModel:
    """One model of genai-prices: its provider and id there, its context window and prices, and ``source``, which
    data it comes from (``"genai-prices 0.2.5"``, or the fetch that replaced it)."""

    provider: str
    id: str
    context_window: int | None
    prices: SourcePrices | None
    source: str
    date: str


class _Found:
    """What names found in one snapshot of the data (a refresh replaces the snapshot, and so this)."""

    def __init__(self, snapshot: Any) -> None:
        self.snapshot = snapshot
        self.by_name: dict[tuple[str, str | None], SourceModel | None] = {}
        self.ids: list[str] | None = None


_lock = threading.Lock()
_found: _Found | None = None
_fetched: dict[int, tuple[Any, str, str]] = {}  # id(snapshot) -> (snapshot, its label, its date)


def _current() -> _Found:
    global _found
    from genai_prices import data_snapshot

    snapshot = data_snapshot.get_snapshot()
    found = _found
    if found is None or found.snapshot is not snapshot:
        with _lock:
            if _found is None or _found.snapshot is not snapshot:
                _found = _Found(snapshot)
            found = _found
    return found


def note_fetched(snapshot: Any, url: str) -> None:
    """Label data fetched from ``url`` (``refresh_model_data``), so a model's figures say where they come from."""
    label, day = _fetch_label(snapshot)
    _fetched[id(snapshot)] = (snapshot, f"{label} from {url}", day)


def _fetch_label(snapshot: Any) -> tuple[str, str]:
    fetched = snapshot.timestamp.astimezone(timezone.utc)
    return f"genai-prices, fetched {fetched:%Y-%m-%d %H:%M} UTC", f"{fetched:%Y-%m-%d}"


def source_label() -> tuple[str, str]:
    """Which data is in use and its date: the package's own (``"genai-prices 0.2.5"``, no date), or a fetch (ours,
    or one the application ran with genai-prices' own updater: Pydantic AI's, for one)."""
    snapshot = _current().snapshot
    fetched = _fetched.get(id(snapshot))
    if fetched is not None and fetched[0] is snapshot:
        return fetched[1], fetched[2]
    if snapshot.from_auto_update:
        return _fetch_label(snapshot)
    from genai_prices import __version__

    return f"genai-prices {__version__}", ""


def find(candidates: Sequence[str], provider: str | None = None) -> tuple[str, SourceModel] | None:
    """The first of ``candidates`` (names to try in order, lower-cased) that genai-prices matches to a model, and
    that model; None if none: with ``provider``, among that provider's models only; else the provider genai-prices'
    own rules give the name, then the makers (``MAKERS``), then every other provider. Kept for the data in use."""
    found = _current()
    for candidate in dict.fromkeys(name.lower() for name in candidates):
        key = (candidate, provider)
        if key not in found.by_name:
            found.by_name[key] = _lookup(found.snapshot, candidate, provider)
        model = found.by_name[key]
        if model is not None:
            return candidate, model
    return None


def model_ids() -> list[str]:
    """Every model id in the data (for suggestions when a name is found nowhere)."""
    found = _current()
    if found.ids is None:
        found.ids = sorted({model.id.lower() for provider in found.snapshot.providers for model in provider.models})
    return found.ids


def _lookup(snapshot: Any, name: str, provider: str | None) -> SourceModel | None:
    for owner in _providers(snapshot, name, provider):
        model = owner.find_model(name, all_providers=snapshot.providers)
        if model is not None:
            return _source_model(owner.id, model)
    return None


def _providers(snapshot: Any, name: str, provider: str | None) -> Iterator[Any]:
    by_id = {owner.id: owner for owner in snapshot.providers}
    if provider is not None:
        yield from ([by_id[provider]] if provider in by_id else [])
        return
    ruled = [owner for owner in snapshot.providers
             if owner.model_match is not None and owner.model_match.is_match(name)]
    makers = [by_id[maker] for maker in MAKERS if maker in by_id]
    yield from {id(owner): owner for owner in [*ruled[:1], *makers, *snapshot.providers]}.values()


def _source_model(provider: str, model: Any) -> SourceModel:
    label, fetched = source_label()
    prices = _prices(model.prices, datetime.now(timezone.utc).date())
    window = model.context_window if isinstance(model.context_window, int) and model.context_window > 0 else None
    return SourceModel(provider, model.id, window, prices, label, fetched)


def _prices(prices: Any, today: date) -> SourcePrices | None:
    """The prices in effect ``today``: the last conditional price whose start date has come (or with no
    condition), with the time-of-day prices listed after it taken at their highest."""
    from genai_prices.types import ModelPrice, StartDateConstraint, TimeOfDateConstraint

    if isinstance(prices, ModelPrice):
        chosen, since = [prices], ""
    elif prices:
        current = 0
        for index, conditional in enumerate(prices):
            constraint = conditional.constraint
            if constraint is None or (isinstance(constraint, StartDateConstraint) and constraint.start_date <= today):
                current = index
        constraint = prices[current].constraint
        since = constraint.start_date.isoformat() if isinstance(constraint, StartDateConstraint) else ""
        chosen = [prices[current].prices, *(later.prices for later in prices[current + 1:]
                                            if isinstance(later.constraint, TimeOfDateConstraint))]
    else:
        return None
    values = {ours: _highest(getattr(price, theirs, None) for price in chosen) for ours, theirs in _KEYS}
    if values["input"] is None and values["output"] is None:
        return None
    base = {ours: _base(value) for ours, value in values.items()}
    return SourcePrices(**base, tiers=_tiers(values), since=since, peak=len(chosen) > 1)


def _highest(values: Iterable[Any]) -> Any:
    present = [value for value in values if value is not None]
    return max(present, key=lambda value: _base(value) or 0.0) if present else None


def _base(value: Any) -> float | None:
    """A price (a Decimal, or genai-prices' ``TieredPrices``: its base) as a float."""
    if value is None:
        return None
    return float(getattr(value, "base", value))


def _tiers(values: dict[str, Any]) -> tuple[PriceTier, ...]:
    """One ``PriceTier`` per threshold any price has, each price at the tier it is in there (genai-prices bills the
    whole request at a tier once its input is over the tier's start)."""
    starts = sorted({tier.start for value in values.values() for tier in getattr(value, "tiers", ())})
    return tuple(PriceTier(start, **{ours: _at(value, start) for ours, value in values.items()}) for start in starts)


def _at(value: Any, start: int) -> float | None:
    if value is None:
        return None
    reached = [tier for tier in getattr(value, "tiers", ()) if tier.start <= start]
    return float(max(reached, key=lambda tier: tier.start).price) if reached else _base(value)
