"""A model's figures taken from genai-prices where it has them; a model only genai-prices knows gets the rest from its
maker's rule (``_provider_rules``). Each figure says where it comes from.
"""

from __future__ import annotations

import dataclasses

from ctxwin._errors import InvalidInputError
from ctxwin.counters._caching import CachingRules
from ctxwin.counters._genai_prices import SourceModel, SourcePrices, find
from ctxwin.counters._models import FigureSource, ModelSpec, base_name, name_candidates
from ctxwin.counters._provider_rules import OTHER, Maker, maker_of

_CTXWIN = "ctxwin"
_PEAK = ("; prices: the peak-hour ones, the highest of those that change with the time of day (genai-prices), so a "
         "cost is not under-estimated")


def sourced(spec: ModelSpec) -> ModelSpec:
    """A built-in model with genai-prices' window and prices where its maker's provider lists the model there."""
    provider = maker_of(spec.name).provider
    hit = find([spec.name], provider) if provider is not None else None
    model = hit[1] if hit is not None else None
    window = model.context_window if model is not None and model.context_window is not None else None
    prices = model.prices if model is not None else None
    rules = spec.caching
    return dataclasses.replace(
        spec,
        context_window=window or spec.context_window,
        caching=_priced(rules, prices),
        sources=(
            _window_source(model) if window and model else FigureSource("context_window", _CTXWIN),
            FigureSource("max_output_tokens", _CTXWIN),
            *_price_sources(model, rules),
            FigureSource("counter", _CTXWIN),
        ),
    )


def _candidates(name: str) -> list[str]:
    """``name``'s spellings for genai-prices: without gateway prefixes first (``openai/gpt-6-sol`` is OpenAI's
    model, not a gateway's listing of it), then as given."""
    given = (name, name.lower())
    return [*(candidate for candidate in name_candidates(name) if candidate not in given), name]


def _find(name: str) -> tuple[str, SourceModel] | None:
    """The first of ``name``'s spellings genai-prices lists with a context window, else the first it lists."""
    hits = [hit for hit in (find([candidate]) for candidate in _candidates(name)) if hit is not None]
    return next((hit for hit in hits if hit[1].context_window is not None), hits[0] if hits else None)


def counter_for(name: str) -> str | None:
    """The counter spec of a model only genai-prices knows (its maker's rule), None if it does not know it."""
    hit = _find(name)
    return None if hit is None else _maker(name, hit[1]).counter


def _maker(name: str, model: SourceModel) -> Maker:
    maker = maker_of(model.id, model.provider)
    return maker_of(base_name(name), model.provider) if maker is OTHER else maker


def from_source(name: str) -> ModelSpec | None:
    """A model only genai-prices knows (None if it does not): its window and prices, and its maker's counter, output
    limit and caching rules; its name is the one of ``name``'s spellings genai-prices matched."""
    hit = _find(name)
    if hit is None:
        return None
    matched, model = hit
    maker = _maker(name, model)
    if model.context_window is None:
        raise InvalidInputError(
            f"model {name!r}: genai-prices lists it ({model.provider}/{model.id}) without a context window, and "
            "ctxwin's table does not know it; give context_window= (`ctxwin fit --context-window`), or register a "
            "ModelSpec for it in a plugin (docs/counters.md)"
        )
    rules = _priced(maker.caching, model.prices)
    if rules is not None and rules.cached_input is None and rules.input is not None:
        rules = dataclasses.replace(rules, cached_input=rules.input)  # no cache discount listed: read as input
    return ModelSpec(
        matched, model.context_window, min(maker.max_output, model.context_window), maker.counter, note=maker.note,
        caching=rules, tokenizer=maker.tokenizer,
        sources=(_window_source(model), FigureSource("max_output_tokens", f"{_CTXWIN}: {maker.name} rule"),
                 *_price_sources(model, maker.caching), FigureSource("counter", f"{_CTXWIN}: {maker.name} rule")),
    )


def _window_source(model: SourceModel) -> FigureSource:
    return FigureSource("context_window", f"{model.source} ({model.provider}/{model.id})", model.date)


def _price_sources(model: SourceModel | None, rules: CachingRules | None) -> tuple[FigureSource, ...]:
    if rules is None:
        return ()
    caching = FigureSource("caching", f"{_CTXWIN}: {rules.source}", rules.date)
    if model is None or model.prices is None:
        return (FigureSource("prices", f"{_CTXWIN}: {rules.source}", rules.date), caching) if rules.priced else (
            caching,)
    return FigureSource("prices", f"{model.source} ({model.provider}/{model.id})",
                        model.prices.since or model.date), caching


def _priced(rules: CachingRules | None, prices: SourcePrices | None) -> CachingRules | None:
    """``rules`` with genai-prices' prices where it gives one (the rules' own elsewhere). Automatic caching that
    lists no write price writes at the input price, tiers included."""
    if rules is None or prices is None:
        return rules
    input_price = _first(prices.input, rules.input)
    free_writes = rules.mode == "automatic" and prices.cache_write is None
    write = input_price if free_writes else _first(prices.cache_write, rules.cache_write)
    tiers = prices.tiers if not free_writes else tuple(
        dataclasses.replace(tier, cache_write=tier.input) for tier in prices.tiers)
    return dataclasses.replace(
        rules, input=input_price, cached_input=_first(prices.cached_input, rules.cached_input), cache_write=write,
        output=_first(prices.output, rules.output),
        long_write=_first(prices.long_write, rules.long_write) if rules.long_ttl else None, tiers=tiers,
        assumed=rules.assumed + (_PEAK if prices.peak else ""),
    )


def _first(*values: float | None) -> float | None:
    return next((value for value in values if value is not None), None)
