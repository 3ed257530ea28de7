"""Looking up what the plugins registered: ``get_counter``, ``get_model``, strategies, and their listings.

Layering: ``ctxwin.plugin_manager`` (loads plugins, builds the registry) <- this module (lookups) <-
``ctxwin.plugins`` (the public plugin API, re-exporting both).

Counter spec forms, tried in this order: a registered counter name (``"approximate"``); a model name or alias
(``"gpt-4o"``, ``"claude-3-5-sonnet-20241022"``), which resolves to that model's counter; ``"<counter>:<arg>"``
(``"tiktoken:o200k_base"``, ``"hf:/path/tokenizer.json"``, ``"approximate:safe"``). Counters are stateless and
thread-safe, so ``get_counter`` returns one shared instance per spec.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Iterable
from typing import Any

from ctxwin.counters.base import CheckedCounter, TokenCounter
from ctxwin.counters.errors import TokenizerDataError
from ctxwin.counters.models import ModelSpec, name_candidates
from ctxwin.plugin_manager import CounterInfo, CtrlCWatch, Registry, StrategyInfo, describe, get_registry, plugin_source

_REQUIRED_METHODS = ("count_text", "count_message", "count_messages")

_cache_lock = threading.Lock()
_cache: dict[str, TokenCounter] = {}
_cache_owner: Registry | None = None


def _unknown(kind: str, name: str, known: Iterable[str], registry: Registry) -> ValueError:
    known = sorted(set(known))
    close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
    hint = f"; did you mean: {', '.join(close)}?" if close else ""
    failed = sorted({error.plugin for error in registry.errors})  # what they would have registered is missing
    note = f"; plugins that failed: {', '.join(map(repr, failed))}" if failed else ""
    return ValueError(
        f"unknown {kind} {name!r}{hint} (`ctxwin counters` and `ctxwin models` list what exists{note})"
    )


def _find_model(registry: Registry, name: str) -> ModelSpec | None:
    for candidate in name_candidates(name):
        if candidate.lower() in registry.model_names:
            return registry.models[registry.model_names[candidate.lower()]][0]
    return None


def get_model(name: str) -> ModelSpec:
    """The ModelSpec for a model name, alias, dated snapshot or fine-tune id; ValueError with close matches."""
    if not isinstance(name, str):
        raise TypeError(f"model name must be a str, got {type(name).__name__}")
    registry = get_registry()
    spec = _find_model(registry, name)
    if spec is None:
        raise _unknown("model", name, registry.model_names, registry)
    return spec


def list_models() -> list[ModelSpec]:
    return sorted((spec for spec, _ in get_registry().models.values()), key=lambda s: s.name)


def model_plugin(name: str) -> str:
    """The plugin that registered a model."""
    spec = get_model(name)
    return get_registry().models[spec.name][1]


def list_counters() -> list[CounterInfo]:
    return sorted(get_registry().counters.values(), key=lambda c: c.name)


def _build(info: CounterInfo, arg: str | None, spec: str) -> TokenCounter:
    """Call the factory; whatever goes wrong names the spec and (unless built in) the plugin.

    A bad argument (ValueError, TypeError) or unusable tokenizer data (TokenizerDataError) keeps its type, so
    callers can tell a user's mistake from a broken plugin (RuntimeError, also for SystemExit and the like).
    """
    whose = f"counter {spec!r}" + ("" if plugin_source(info.plugin) == "built-in" else f" (plugin {info.plugin!r})")
    with CtrlCWatch() as watch:
        try:
            counter = info.factory(arg)
        except TypeError as exc:
            raise TypeError(f"{whose}: {exc}") from exc
        except ValueError as exc:
            raise ValueError(f"{whose}: {exc}") from exc
        except TokenizerDataError as exc:
            raise TokenizerDataError(f"{whose}: {exc}") from exc
        except BaseException as exc:  # a plugin's own failure, SystemExit and KeyboardInterrupt included
            if watch.fatal(exc):
                raise
            raise RuntimeError(f"{whose} failed to build: {describe(exc)}") from exc
    missing = [m for m in _REQUIRED_METHODS if not callable(getattr(counter, m, None))]
    if missing or not isinstance(getattr(counter, "name", None), str):
        raise TypeError(
            f"{whose} returned {type(counter).__name__}, which is not a TokenCounter: it needs a str 'name' and "
            f"methods {', '.join(_REQUIRED_METHODS)}" + (f" (missing: {', '.join(missing)})" if missing else "")
        )
    if plugin_source(info.plugin) == "built-in":
        return counter  # type: ignore[no-any-return]
    return CheckedCounter(counter, f"{counter.name!r} (plugin {info.plugin!r})")


def _resolve(registry: Registry, spec: str) -> tuple[CounterInfo, str | None, str]:
    """The factory, its argument, and the canonical spec string for ``spec``."""
    if spec in registry.counters:
        return registry.counters[spec], None, spec
    model = _find_model(registry, spec)
    if model is not None:
        return _resolve(registry, model.counter)
    base, sep, arg = spec.partition(":")
    if sep and base in registry.counters:
        return registry.counters[base], arg, spec
    if sep:  # suggest the counter names close to the part before the colon, with the argument kept
        close = difflib.get_close_matches(base, list(registry.counters), n=3, cutoff=0.6)
        raise _unknown("counter or model", spec, [f"{name}:{arg}" for name in close], registry)
    raise _unknown("counter or model", spec, [*registry.counters, *registry.model_names], registry)


def get_counter(spec: str) -> TokenCounter:
    """The shared counter for a spec (see the module docstring); ValueError with close matches if unknown."""
    global _cache_owner
    if not isinstance(spec, str):
        raise TypeError(f"counter spec must be a str, got {type(spec).__name__}")
    registry = get_registry()
    with _cache_lock:
        if _cache_owner is not registry:  # plugins changed: counters may have been replaced
            _cache.clear()
            _cache_owner = registry
        if spec in _cache:
            return _cache[spec]
    info, arg, canonical = _resolve(registry, spec)
    with _cache_lock:
        counter = _cache.get(canonical)
    if counter is None:
        counter = _build(info, arg, canonical)
    with _cache_lock:
        if _cache_owner is registry:
            counter = _cache.setdefault(canonical, counter)
            _cache[spec] = counter
    return counter


def get_strategy_factory(name: str) -> Callable[..., Any]:
    """The factory a plugin registered for a strategy name; ValueError with close matches if unknown."""
    registry = get_registry()
    info: StrategyInfo | None = registry.strategies.get(name)
    if info is None:
        raise _unknown("strategy", name, registry.strategies, registry)
    return info.factory


def list_strategies() -> list[StrategyInfo]:
    return sorted(get_registry().strategies.values(), key=lambda s: s.name)
