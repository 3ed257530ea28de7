"""The plugin machinery: built-in default plugins plus entry points in the ``ctxwin`` group, loaded lazily, once.

``CTXWIN_LOAD_PLUGINS`` restricts which entry-point plugins load: a comma-separated list of entry-point or
distribution names (spaces around names and empty items are ignored); set but empty loads none (the built-in
default plugins always load). A plugin that fails to import, to register with pluggy, or inside a hook is reported
by name as a ``PluginError`` in ``plugin_errors()`` (which ``ctxwin counters`` shows; nothing is printed or warned,
so a broken plugin does not add noise to every command), and its registrations from that hook are discarded, while
the other plugins load normally. Each hook implementation is called on its own for that reason (a plain pluggy
hook call stops at the first exception).

Nothing a plugin raises ends the host: ``SystemExit``, ``KeyboardInterrupt`` or any other ``BaseException`` from its
import or its hooks is reported like any error. Only a real Ctrl-C (SIGINT arriving while plugin code runs) still
interrupts, see ``CtrlCWatch``.

Tests and applications add or remove plugins explicitly with ``register_plugin`` / ``unregister_plugin``; the
registry is rebuilt on next use.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import pluggy

from ctxwin import hookspecs
from ctxwin.counters.models import ModelSpec

ENTRY_POINT_GROUP = "ctxwin"
LOAD_PLUGINS_ENV = "CTXWIN_LOAD_PLUGINS"
DEFAULT_PLUGINS: tuple[str, ...] = (
    "ctxwin.default_plugins.counters",
    "ctxwin.default_plugins.models",
    "ctxwin.default_plugins.strategies",
)

pm = pluggy.PluginManager("ctxwin")
pm.add_hookspecs(hookspecs)


@dataclass(frozen=True)
class PluginError:
    """What went wrong with one plugin: its name, the stage (``load`` or a hook name) and the error text."""

    plugin: str
    stage: str
    error: str

    def __str__(self) -> str:
        return f"plugin {self.plugin!r} failed in {self.stage}: {self.error}"


@dataclass(frozen=True)
class CounterInfo:
    """A registered counter factory, the plugin that registered it, and where its data comes from."""

    name: str
    factory: Callable[[str | None], Any]
    plugin: str
    origin: str = ""


@dataclass(frozen=True)
class StrategyInfo:
    name: str
    factory: Callable[..., Any]
    plugin: str


@dataclass
class Registry:
    """Everything the plugins registered; built once from the plugin manager and replaced when it changes."""

    counters: dict[str, CounterInfo] = field(default_factory=dict)
    models: dict[str, tuple[ModelSpec, str]] = field(default_factory=dict)  # name -> (spec, plugin)
    model_names: dict[str, str] = field(default_factory=dict)  # name or alias -> model name
    strategies: dict[str, StrategyInfo] = field(default_factory=dict)
    errors: list[PluginError] = field(default_factory=list)


_lock = threading.RLock()
_loaded = False
_load_errors: list[PluginError] = []
_sources: dict[str, str] = {}  # plugin name -> "built-in" or "<distribution> <version>"
_registry: Registry | None = None
_building = False  # set while the hooks run, so a hook that looks something up fails instead of recursing


class CtrlCWatch:
    """Tells a real Ctrl-C apart from plugin code raising ``KeyboardInterrupt`` itself.

    Used as ``with CtrlCWatch() as watch:`` around plugin code: in the main thread (the only one Python delivers
    SIGINT to) it wraps the SIGINT handler to note the signal, then restores it; ``watch.fatal(exc)`` is true only
    for a KeyboardInterrupt that a SIGINT caused, which must go on interrupting. In another thread, or when SIGINT
    is ignored or kills outright, no KeyboardInterrupt can come from Ctrl-C, so every one is the plugin's.
    """

    def __init__(self) -> None:
        self.seen = False
        self._previous: Callable[[int, FrameType | None], Any] | None = None

    def __enter__(self) -> CtrlCWatch:
        if threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGINT)
            if callable(previous):
                self._previous = previous
                signal.signal(signal.SIGINT, self._note)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self.seen = True
        if self._previous is not None:
            self._previous(signum, frame)

    def fatal(self, exc: BaseException) -> bool:
        return isinstance(exc, KeyboardInterrupt) and self.seen


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _report(error: PluginError, sink: list[PluginError]) -> None:
    sink.append(error)


def _normalize(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _load_entry_points(watch: CtrlCWatch) -> None:
    selected = os.environ.get(LOAD_PLUGINS_ENV)
    wanted = None if selected is None else {_normalize(n) for n in selected.split(",") if n.strip()}
    matched: set[str] = set()
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = entry_point.dist
        keys = {_normalize(entry_point.name)} | ({_normalize(dist.name)} if dist else set())
        if wanted is not None and not keys & wanted:
            continue
        matched |= keys
        try:
            pm.register(entry_point.load(), name=entry_point.name)
            _sources[entry_point.name] = f"{dist.name} {dist.version}" if dist else entry_point.value
        except BaseException as exc:  # SystemExit or KeyboardInterrupt at import included, see CtrlCWatch
            if watch.fatal(exc):
                raise
            _report(PluginError(entry_point.name, "load", describe(exc)), _load_errors)
    for missing in sorted((wanted or set()) - matched):
        _report(PluginError(missing, "load", f"named in {LOAD_PLUGINS_ENV} but not installed"), _load_errors)


def load_plugins() -> None:
    """Register the default plugins and the selected entry points; only the first call does anything."""
    global _loaded
    with _lock:
        if _loaded:
            return
        _loaded = True
        with CtrlCWatch() as watch:
            for module_name in DEFAULT_PLUGINS:
                if pm.has_plugin(module_name):
                    continue
                try:  # a built-in is a plugin like any other: its failure is reported, the rest still load
                    pm.register(importlib.import_module(module_name), name=module_name)
                    _sources[module_name] = "built-in"
                except Exception as exc:
                    _report(PluginError(module_name, "load", describe(exc)), _load_errors)
            _load_entry_points(watch)


def register_plugin(plugin: object, name: str | None = None) -> str:
    """Register a plugin (module or object with hookimpls) explicitly; returns its name."""
    with _lock:
        load_plugins()
        registered = pm.register(plugin, name=name)
        if registered is None:
            raise ValueError(f"plugin {name or plugin!r} is blocked in the plugin manager")
        _sources.setdefault(registered, "registered at run time")
        _invalidate()
        return registered


def unregister_plugin(name: str) -> None:
    """Remove a plugin by name (ValueError if there is none)."""
    with _lock:
        load_plugins()
        if not pm.has_plugin(name):
            raise ValueError(f"no plugin named {name!r}; registered: {', '.join(sorted(plugin_names()))}")
        pm.unregister(name=name)
        _sources.pop(name, None)
        _invalidate()


def plugin_names() -> list[str]:
    load_plugins()
    return [name for name, _ in pm.list_name_plugin()]


def plugin_source(name: str) -> str:
    """``built-in``, the distribution and version an entry point came from, or ``registered at run time``."""
    return _sources.get(name, "unknown")


def _invalidate() -> None:
    global _registry
    _registry = None


def _callbacks(registry: Registry, plugin: str, staged: list[Callable[[], None]]) -> dict[str, Callable[..., None]]:
    """The ``register`` callbacks handed to one plugin's hooks; they validate now and commit only on success."""

    def counter(name: str, factory: Callable[[str | None], Any], origin: str | None = None) -> None:
        if not isinstance(name, str) or not name or ":" in name:
            raise ValueError(f"counter name must be a non-empty string without ':', got {name!r}")
        if not callable(factory):
            raise TypeError(f"counter {name!r}: factory must be callable, got {type(factory).__name__}")
        if origin is not None and not isinstance(origin, str):
            raise TypeError(f"counter {name!r}: origin must be a string or None, got {type(origin).__name__}")
        staged.append(lambda: _add_counter(registry, CounterInfo(name, factory, plugin, origin or "")))

    def model(spec: ModelSpec) -> None:
        if not isinstance(spec, ModelSpec):
            raise TypeError(f"register_models: expected a ctxwin ModelSpec, got {type(spec).__name__}")
        checked = dataclasses.replace(spec)  # validated again (its fields may have been changed after __init__)
        staged.append(lambda: _add_model(registry, checked, plugin))

    def strategy(name: str, factory: Callable[..., Any]) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"strategy name must be a non-empty string, got {name!r}")
        if not callable(factory):
            raise TypeError(f"strategy {name!r}: factory must be callable, got {type(factory).__name__}")
        staged.append(lambda: _add_strategy(registry, StrategyInfo(name, factory, plugin)))

    return {"register_counters": counter, "register_models": model, "register_strategies": strategy}


def _conflict(registry: Registry, plugin: str, stage: str, what: str, owner: str) -> None:
    _report(PluginError(plugin, stage, f"{what} is already registered by plugin {owner!r}; ignored"), registry.errors)


def _add_counter(registry: Registry, info: CounterInfo) -> None:
    if info.name in registry.counters:
        owner = registry.counters[info.name].plugin
        _conflict(registry, info.plugin, "register_counters", f"counter {info.name!r}", owner)
    else:
        registry.counters[info.name] = info


def _add_model(registry: Registry, spec: ModelSpec, plugin: str) -> None:
    taken = [n for n in (spec.name, *spec.aliases) if n.lower() in registry.model_names]
    if taken:
        owner = registry.models[registry.model_names[taken[0].lower()]][1]
        _conflict(registry, plugin, "register_models", f"model name {taken[0]!r}", owner)
        return
    registry.models[spec.name] = (spec, plugin)
    for name in (spec.name, *spec.aliases):
        registry.model_names[name.lower()] = spec.name


def _add_strategy(registry: Registry, info: StrategyInfo) -> None:
    if info.name in registry.strategies:
        _conflict(registry, info.plugin, "register_strategies", f"strategy {info.name!r}",
                  registry.strategies[info.name].plugin)
    else:
        registry.strategies[info.name] = info


def _run_hook(registry: Registry, hook_name: str, watch: CtrlCWatch) -> None:
    for impl in getattr(pm.hook, hook_name).get_hookimpls():
        staged: list[Callable[[], None]] = []
        register = _callbacks(registry, impl.plugin_name, staged)[hook_name]
        try:
            result = impl.function(**{arg: register for arg in impl.argnames})
            if result is not None:
                raise TypeError(f"returned {result!r:.200}; a hook must call register(...) and return None")
        except BaseException as exc:  # SystemExit or KeyboardInterrupt included, see CtrlCWatch
            if watch.fatal(exc):
                raise
            _report(PluginError(impl.plugin_name, hook_name, describe(exc)), registry.errors)
            continue
        for commit in staged:
            commit()


def _check_model_counters(registry: Registry) -> None:
    for name, (spec, plugin) in list(registry.models.items()):
        base = spec.counter.split(":", 1)[0]
        if base not in registry.counters:
            _report(PluginError(plugin, "register_models",
                                f"model {name!r} uses counter {spec.counter!r}, but no counter {base!r} is "
                                "registered; model ignored"), registry.errors)
            del registry.models[name]
            for key in [k for k, v in registry.model_names.items() if v == name]:
                del registry.model_names[key]


def get_registry() -> Registry:
    """The current registry, building it (and loading plugins) on first use."""
    global _registry, _building
    registry = _registry
    if registry is not None:
        return registry
    with _lock:
        if _building:  # only the building thread gets past the lock: a hook asked for what it is registering
            raise RuntimeError(
                "a plugin hook looked up counters, models or strategies while plugins are registering; "
                "do it later, e.g. inside the counter factory"
            )
        if _registry is None:
            load_plugins()
            fresh = Registry(errors=list(_load_errors))
            _building = True
            try:
                with CtrlCWatch() as watch:
                    for hook_name in ("register_counters", "register_models", "register_strategies"):
                        _run_hook(fresh, hook_name, watch)
            finally:
                _building = False
            _check_model_counters(fresh)
            _registry = fresh
        return _registry


def plugin_errors() -> list[PluginError]:
    """Every plugin failure so far (loading and registering), in order."""
    return list(get_registry().errors)
