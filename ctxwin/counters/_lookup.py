"""Looking up the counters and models that plugins register, by spec string or model name (docs/counters.md, "Spec
forms"); a counter is stateless, so one shared instance serves each spec.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin._plugins import Registrations, SharedNames, describe, interrupts, plugin_source, unknown_name
from ctxwin.counters._base import REQUIRED_METHODS, CheckedCounter, TokenCounter, missing_members
from ctxwin.counters._errors import PluginCounterError, TokenizerDataError
from ctxwin.counters._models import ModelSpec, name_candidates


@dataclass(frozen=True)
class CounterInfo:
    """A registered counter factory, the plugin that registered it, and where its data comes from (``origin``:
    registered as a note, or as a function that writes it, called when asked, so registering costs nothing)."""

    name: str
    factory: Callable[[str | None], Any]
    plugin: str
    registered_origin: str | Callable[[], str] = ""
    instances: dict[str | None, TokenCounter] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def origin(self) -> str:
        origin = self.registered_origin
        if isinstance(origin, str):
            return origin
        try:
            return str(origin())
        except Exception as exc:  # a listing must not fail on one plugin's note
            return f"unavailable: {describe(exc)}"


@dataclass(frozen=True)
class _Model:
    spec: ModelSpec
    plugin: str


def _counter_info(plugin: str, name: str, factory: Callable[[str | None], Any],
                  origin: str | Callable[[], str] | None = None) -> tuple[Iterable[str], CounterInfo]:
    """Validates ``register(name, factory, origin=None)`` from a ``register_counters`` hook."""
    if not isinstance(name, str) or not name or ":" in name:
        raise InvalidInputError(f"counter name must be a non-empty string without ':', got {name!r}")
    if not callable(factory):
        raise InvalidTypeError(f"counter {name!r}: factory must be callable, got {type(factory).__name__}")
    if origin is not None and not isinstance(origin, str) and not callable(origin):
        raise InvalidTypeError(f"counter {name!r}: origin must be a string, a function returning one, or None, got "
                               f"{type(origin).__name__}")
    return (name,), CounterInfo(name, factory, plugin, origin or "")


def _model(plugin: str, spec: ModelSpec) -> tuple[Iterable[str], _Model]:
    """Validates ``register(spec)`` from a ``register_models`` hook; a model's names are matched case-insensitively."""
    if not isinstance(spec, ModelSpec):
        raise InvalidTypeError(f"register_models: expected a ctxwin ModelSpec, got {type(spec).__name__}")
    checked = dataclasses.replace(spec)  # validated again (its fields may have been changed after __init__)
    base = checked.counter.split(":", 1)[0]
    if base not in _COUNTERS.by_name():
        raise InvalidInputError(f"model {checked.name!r} uses counter {checked.counter!r}, but no counter {base!r} is "
                                "registered")
    return [name.lower() for name in (checked.name, *checked.aliases)], _Model(checked, plugin)


_COUNTERS = Registrations("register_counters", _counter_info, "counter")
_MODELS = Registrations("register_models", _model, "model name")
# A counter and a model never share a name (get_counter("gpt-4o") and get_model("gpt-4o") give one count), unless
# the model counts with that very counter.
_NAMES = SharedNames(_COUNTERS, _MODELS, str.lower, lambda info, model: model.spec.counter == info.name)


def _counters() -> Mapping[str, CounterInfo]:
    return _NAMES.by_name()[0]


def _models() -> Mapping[str, _Model]:
    return _NAMES.by_name()[1]


def _unknown(kind: str, name: str, known: Iterable[str], *, match: str | None = None) -> ValueError:
    return unknown_name(kind, name, known, "`ctxwin counters` and `ctxwin models` list", match=match)


def _find_model(name: str) -> _Model | None:
    models = _models()
    for candidate in name_candidates(name):
        model = models.get(candidate.lower())
        if model is not None:
            return model
    return None


def get_model(name: str) -> ModelSpec:
    """The ModelSpec for a model name, alias, dated snapshot or fine-tune id: a registered model (a built-in one with
    genai-prices' window and prices where it lists the model), else one genai-prices knows (its maker's counter,
    an estimate); ValueError with close matches for a name neither knows."""
    if not isinstance(name, str):
        raise InvalidTypeError(f"model name must be a str, got {type(name).__name__}")
    model = _find_model(name)
    if model is not None:
        return _figures(model)
    from ctxwin.counters._sourced import from_source

    spec = from_source(name)
    if spec is None:
        raise _unknown("model", name, _suggestable(), match=name_candidates(name)[-1])
    return spec


def _figures(model: _Model) -> ModelSpec:
    """A registered model as ``get_model`` gives it: a plugin's as registered, a built-in one with genai-prices'
    figures."""
    if plugin_source(model.plugin) != "built-in":
        return model.spec
    from ctxwin.counters._sourced import sourced

    return sourced(model.spec)


def _suggestable() -> list[str]:
    """The names an unknown model's close matches are drawn from: the registered ones and genai-prices' ids."""
    from ctxwin.counters._genai_prices import model_ids

    return [*_models(), *model_ids()]


def list_models() -> list[ModelSpec]:
    """Every registered model (as ``get_model`` gives it); genai-prices' others are found by name only."""
    unique = {id(model.spec): model for model in _models().values()}
    return sorted((_figures(model) for model in unique.values()), key=lambda spec: spec.name)


def model_plugin(name: str) -> str:
    """The plugin that registered a model; ``"genai-prices"`` for a model only genai-prices knows."""
    model = _find_model(get_model(name).name)
    return "genai-prices" if model is None else model.plugin


def list_counters() -> list[CounterInfo]:
    return sorted(_counters().values(), key=lambda info: info.name)


def _build(info: CounterInfo, arg: str | None, spec: str) -> TokenCounter:
    """Call the factory; whatever goes wrong names the spec and (unless built in) the plugin.

    A bad argument (ValueError, TypeError) or unusable tokenizer data (TokenizerDataError) keeps its type, so
    callers can tell a user's mistake from a broken plugin (PluginCounterError, also for OSError, SystemExit and
    the like) or a broken built-in counter (RuntimeError: a ctxwin bug).
    """
    builtin = plugin_source(info.plugin) == "built-in"
    whose = f"counter {spec!r}" + ("" if builtin else f" (plugin {info.plugin!r})")
    try:
        counter = info.factory(arg)
    except TypeError as exc:
        raise InvalidTypeError(f"{whose}: {exc}") from exc
    except ValueError as exc:
        raise InvalidInputError(f"{whose}: {exc}") from exc
    except TokenizerDataError as exc:
        raise TokenizerDataError(f"{whose}: {exc}") from exc
    except BaseException as exc:  # a plugin's own failure, SystemExit and KeyboardInterrupt included
        if interrupts(exc):
            raise
        failed = RuntimeError if builtin else PluginCounterError
        raise failed(f"{whose} failed to build: {describe(exc)}") from exc
    if missing := missing_members(counter):
        methods = [member for member in missing if member in REQUIRED_METHODS]
        raise InvalidTypeError(
            f"{whose} returned {type(counter).__name__}, which is not a TokenCounter: it needs a str 'name' and "
            f"methods {', '.join(REQUIRED_METHODS)}" + (f" (missing: {', '.join(methods)})" if methods else "")
        )
    if builtin:
        return counter  # type: ignore[no-any-return]  # built-in counters declare the whole contract
    return CheckedCounter(counter, f"{counter.name!r} (plugin {info.plugin!r})")


def _resolve(spec: str) -> tuple[CounterInfo, str | None, str]:
    """The registration, its factory's argument, and the canonical spec string for ``spec``."""
    counters = _counters()
    model = None if spec in counters else _find_model(spec)
    target = spec if model is None else model.spec.counter  # a model's counter was checked when it registered
    base, sep, arg = target.partition(":")
    if target in counters:
        return counters[target], None, target
    if sep and base in counters:
        return counters[base], arg, target
    if model is None:  # a model only genai-prices knows counts with its maker's counter
        from ctxwin.counters._sourced import counter_for

        counter = counter_for(spec)
        if counter is not None:
            return _resolve(counter)
    if sep:  # suggest the counter names close to the part before the colon, with the argument kept
        close = difflib.get_close_matches(base, list(counters), n=3, cutoff=0.6)
        raise _unknown("counter or model", spec, [f"{name}:{arg}" for name in close])
    raise _unknown("counter or model", spec, [*counters, *_models()], match=name_candidates(spec)[-1])


def check_counter_spec(spec: str) -> None:
    """ValueError with close matches when no counter or model is registered as ``spec``, without building it."""
    _resolve(spec)


def get_counter(spec: str) -> TokenCounter:
    """The shared counter for a spec (docs/counters.md, "Spec forms"); ValueError with close matches if unknown."""
    if not isinstance(spec, str):
        raise InvalidTypeError(f"counter spec must be a str, got {type(spec).__name__}")
    info, arg, canonical = _resolve(spec)
    counter = info.instances.get(arg)
    if counter is None:  # two threads may both build it; both then return the one kept first
        counter = info.instances.setdefault(arg, _build(info, arg, canonical))
    return counter
