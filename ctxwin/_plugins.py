"""The plugin layer, shaped like simonw/llm's ``plugins`` module: the pluggy manager, plugin loading, and collecting
what a hook registers. A failing plugin is reported by name in ``plugin_errors()`` and never ends the host
(docs/architecture.md, "Plugins").
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import os
import signal
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from opcode import opmap
from typing import Any, Generic, TypeVar

import pluggy

from ctxwin import hookspecs
from ctxwin._errors import CtxwinError, InvalidInputError, InvalidTypeError

ENTRY_POINT_GROUP = "ctxwin"
LOAD_PLUGINS_ENV = "CTXWIN_LOAD_PLUGINS"
DEFAULT_PLUGINS: tuple[str, ...] = (
    "ctxwin.counters._approximate.plugin", "ctxwin.counters._families.plugin", "ctxwin.counters._api.plugin",
    "ctxwin.counters._models_plugin", "ctxwin.strategies._builtin_plugin",
)

pm = pluggy.PluginManager("ctxwin")
pm.add_hookspecs(hookspecs)

T = TypeVar("T")


@dataclass(frozen=True)
class PluginError:
    """What went wrong with one plugin: its name, the stage (``load`` or a hook name) and the error text."""

    plugin: str
    stage: str
    error: str

    def __str__(self) -> str:
        return f"plugin {self.plugin!r} failed in {self.stage}: {self.error}"


class PluginReentryError(CtxwinError, RuntimeError):
    """A hook looked up what its own hook registers while that hook runs (it would recurse)."""

    def __init__(self, hook_name: str) -> None:
        super().__init__(
            f"a plugin hook looked up counters, models or strategies while plugins are registering ({hook_name}); "
            "do it later, e.g. inside the counter factory"
        )
        self.hook_name = hook_name


_RAISE = opmap["RAISE_VARARGS"]


def interrupts(exc: BaseException) -> bool:
    """Whether ``exc``, raised while plugin code ran, is the user's Ctrl-C (or a SIGTERM the process turned into an
    exception), which must go on interrupting.

    Python raises the KeyboardInterrupt of a SIGINT where it checks for signals (inside a blocking call, at a loop's
    jump or a call), or inside the SIGINT handler the process installed: never at a ``raise`` statement of the code
    that was running. An exception raised inside a handler the process installed for SIGINT or SIGTERM (the
    ``ctxwin`` command's raises on SIGTERM) interrupts; a KeyboardInterrupt whose innermost frame is stopped at a
    ``raise`` outside those handlers is the plugin's own, reported like any error. Only the traceback is read; the
    process's handlers stay as they are.
    """
    if exc.__traceback__ is None:
        return False
    handlers = {getattr(signal.getsignal(signum), "__code__", None) for signum in (signal.SIGINT, signal.SIGTERM)}
    handlers.discard(None)
    tb = exc.__traceback__
    while True:
        if tb.tb_frame.f_code in handlers:
            return True
        if tb.tb_next is None:
            break
        tb = tb.tb_next
    return isinstance(exc, KeyboardInterrupt) and tb.tb_frame.f_code.co_code[tb.tb_lasti] != _RAISE


def describe(exc: BaseException) -> str:
    """An exception as one line of a PluginError: ``RuntimeError: boom``."""
    return f"{type(exc).__name__}: {exc}"


_lock = threading.RLock()  # reentrant: a hook may look up another hook's registrations while its own is collected
_loaded = False
_generation = 0  # bumped whenever the set of plugins changes; what was collected before is stale
_load_errors: list[PluginError] = []
_sources: dict[str, str] = {}  # plugin name -> "built-in" or "<distribution> <version>"
_collecting: set[str] = set()  # the hooks being collected (only by the thread holding _lock)
_declared: list[Registrations[Any] | SharedNames] = []  # so plugin_errors() can run every hook and check


def _normalize(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _load_entry_points() -> None:
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
        except BaseException as exc:  # SystemExit or KeyboardInterrupt at import included, see interrupts
            if interrupts(exc):
                raise
            _load_errors.append(PluginError(entry_point.name, "load", describe(exc)))
    for missing in sorted((wanted or set()) - matched):
        _load_errors.append(PluginError(missing, "load", f"named in {LOAD_PLUGINS_ENV} but not installed"))


def load_plugins() -> None:
    """Register the default plugins and the selected entry points; only the first call does anything."""
    global _loaded
    with _lock:
        if _loaded:
            return
        _loaded = True
        for module_name in DEFAULT_PLUGINS:
            if pm.has_plugin(module_name):
                continue
            try:  # a default plugin is a plugin like any other: its failure is reported, the rest still load
                pm.register(importlib.import_module(module_name), name=module_name)
                _sources[module_name] = "built-in"
            except Exception as exc:
                _load_errors.append(PluginError(module_name, "load", describe(exc)))
        _load_entry_points()


def _plugins_changed() -> None:
    global _generation
    _generation += 1


def register_plugin(plugin: object, name: str | None = None) -> str:
    """Register a plugin (module or object with hookimpls) explicitly; returns its name."""
    with _lock:
        load_plugins()
        registered = pm.register(plugin, name=name)
        if registered is None:
            raise InvalidInputError(f"plugin {name or plugin!r} is blocked in the plugin manager")
        _sources.setdefault(registered, "registered at run time")
        _plugins_changed()
        return registered


def unregister_plugin(name: str) -> None:
    """Remove a plugin by name (ValueError if there is none)."""
    with _lock:
        load_plugins()
        if not pm.has_plugin(name):
            raise InvalidInputError(f"no plugin named {name!r}; registered: {', '.join(sorted(plugin_names()))}")
        pm.unregister(name=name)
        _sources.pop(name, None)
        _plugins_changed()


def plugin_names() -> list[str]:
    load_plugins()
    return [name for name, _ in pm.list_name_plugin()]


def plugin_source(name: str) -> str:
    """``built-in``, the distribution and version an entry point came from, or ``registered at run time``."""
    return _sources.get(name, "unknown")


def _precedence() -> Callable[[str], tuple[bool, int]]:
    """Which plugin keeps a name two register: the built-in plugins, then the others in the order they were
    registered (pluggy's tryfirst/trylast order the calls of a hook, never who owns a name)."""
    order = {name: index for index, name in enumerate(plugin_names())}
    return lambda plugin: (_sources.get(plugin) != "built-in", order.get(plugin, len(order)))


class Registrations(Generic[T]):
    """What one hook registers, by name, collected from every plugin and cached until the set of plugins changes.

    Each hook implementation is called on its own with a ``register`` callback that passes its arguments, after the
    plugin's name, to ``validate``, which returns the names the registration takes and the value stored under them
    (or raises). A plugin whose hook raises, returns something, or registers something ``validate`` refuses loses
    all its registrations from this hook; a name already taken by an earlier plugin is refused on its own. Either
    way a ``PluginError`` names the plugin. Plugins are asked in order of precedence (``_precedence``: built-in
    first, then by registration), so a name's first registration keeps it. ``what`` names the kind of thing in
    those errors (``"counter"``).
    """

    def __init__(self, hook_name: str, validate: Callable[..., tuple[Iterable[str], T]], what: str) -> None:
        if not hasattr(pm.hook, hook_name):
            raise InvalidInputError(f"no hook named {hook_name!r} in ctxwin.hookspecs")
        self.hook_name, self.validate, self.what = hook_name, validate, what
        self._collected: _Collected[T] | None = None
        _declared.append(self)

    def by_name(self) -> Mapping[str, T]:
        """Every registered name and its value, plugins loaded and the hook run on first use."""
        return self._current().by_name

    def owners(self) -> Mapping[str, str]:
        """The plugin that registered each name."""
        return self._current().owners

    def errors(self) -> list[PluginError]:
        return self._current().errors

    def _current(self) -> _Collected[T]:
        collected = self._collected
        if collected is not None and collected.generation == _generation:
            return collected
        with _lock:
            if self.hook_name in _collecting:  # only the collecting thread gets past the lock: a hook recursed
                raise PluginReentryError(self.hook_name)
            load_plugins()
            if self._collected is None or self._collected.generation != _generation:
                generation = _generation
                _collecting.add(self.hook_name)
                try:
                    self._collected = _Collected(generation, *self._collect())
                finally:
                    _collecting.discard(self.hook_name)
            return self._collected

    def _register_callback(self, plugin: str, staged: list[tuple[tuple[str, ...], T]]) -> Callable[..., None]:
        """The ``register`` handed to one plugin's hook: validates now, kept only if the whole hook succeeds."""

        def register(*args: Any, **kwargs: Any) -> None:
            names, value = self.validate(plugin, *args, **kwargs)
            staged.append((tuple(names), value))

        return register

    def _collect(self) -> tuple[dict[str, T], dict[str, str], list[PluginError]]:
        by_name: dict[str, T] = {}
        owners: dict[str, str] = {}
        errors: list[PluginError] = []
        precedence = _precedence()
        impls = sorted(getattr(pm.hook, self.hook_name).get_hookimpls(), key=lambda impl: precedence(impl.plugin_name))
        for impl in impls:
            plugin = impl.plugin_name
            staged: list[tuple[tuple[str, ...], T]] = []
            register = self._register_callback(plugin, staged)
            try:
                result = impl.function(**{arg: register for arg in impl.argnames})
                if result is not None:
                    raise InvalidTypeError(f"returned {result!r:.200}; a hook must call register(...) and return None")
            except PluginReentryError as exc:
                if exc.hook_name != self.hook_name:  # raised by another hook's collection, not this plugin's
                    raise
                errors.append(PluginError(plugin, self.hook_name, describe(exc)))
                continue
            except BaseException as exc:  # SystemExit or KeyboardInterrupt included, see interrupts
                if interrupts(exc):
                    raise
                errors.append(PluginError(plugin, self.hook_name, describe(exc)))
                continue
            for names, value in staged:
                taken = next((name for name in names if name in owners), None)
                if taken is not None:
                    errors.append(PluginError(plugin, self.hook_name, f"{self.what} {taken!r} is already "
                                              f"registered by plugin {owners[taken]!r}; ignored"))
                    continue
                for name in names:
                    by_name[name], owners[name] = value, plugin
        return by_name, owners, errors


@dataclass(frozen=True)
class _Collected(Generic[T]):
    """What ``Registrations`` collected for one generation of the plugins."""

    generation: int
    by_name: dict[str, T]
    owners: dict[str, str]
    errors: list[PluginError]


class SharedNames:
    """Two hooks whose names are one namespace (counter and model names: ``--counter X`` and ``--model X`` must
    never give two counts): a name both register is kept by the plugin of precedence (``_precedence``: built-in
    first, then by registration) and refused to the other, whose ``PluginError`` says so (``plugin_errors()``).
    ``key`` is how the second hook's names compare with the first's (model names are matched case-insensitively);
    ``agree(first's value, second's value)`` says when the two are one thing (a model named after its own counter),
    which both keep.
    """

    def __init__(self, first: Registrations[Any], second: Registrations[Any], key: Callable[[str], str],
                 agree: Callable[[Any, Any], bool]) -> None:
        self.first, self.second, self.key, self.agree = first, second, key, agree
        self._checked: tuple[int, tuple[dict[str, Any], dict[str, Any]], list[PluginError]] | None = None
        _declared.append(self)

    def by_name(self) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
        """Each hook's ``by_name`` without the names refused to it. While the second hook's plugins register (a
        models hook may look up a counter), the first's names as they are: nothing is refused before both are in."""
        checked = self._checked
        if checked is not None and checked[0] == _generation:
            return checked[1]
        with _lock:  # the collecting thread holds it; any other waits for the collection to end
            if self.second.hook_name in _collecting:
                return self.first.by_name(), {}
            return self._current()[1]

    def errors(self) -> list[PluginError]:
        return self._current()[2]

    def _current(self) -> tuple[int, tuple[dict[str, Any], dict[str, Any]], list[PluginError]]:
        checked = self._checked
        if checked is not None and checked[0] == _generation:
            return checked
        with _lock:
            generation = _generation
            hooks = (self.first, self.second)
            kept = (dict(self.first.by_name()), dict(self.second.by_name()))
            firsts, seconds = self.first.owners(), self.second.owners()
            precedence = _precedence()
            errors: list[PluginError] = []
            for name, owner in firsts.items():
                other = seconds.get(self.key(name))
                if other is None or self.agree(self.first.by_name()[name], self.second.by_name()[self.key(name)]):
                    continue
                loser = int(precedence(owner) < precedence(other))  # 1: the second hook's registration loses
                names, owners = (name, self.key(name)), (owner, other)
                kept[loser].pop(names[loser], None)
                errors.append(PluginError(owners[loser], hooks[loser].hook_name,
                                          f"{hooks[loser].what} {names[loser]!r} is already a "
                                          f"{hooks[1 - loser].what} of plugin {owners[1 - loser]!r}; ignored (one "
                                          "name, one count)"))
            self._checked = (generation, kept, errors)
            return self._checked


def unknown_name(kind: str, name: str, known: Iterable[str], listed_by: str, *, match: str | None = None) -> ValueError:
    """The error for a name no plugin registered: up to three close matches (to ``match``, a normalized form of the
    name, when given), the commands that list what exists, and the plugins that failed (what they would have
    registered is missing)."""
    close = difflib.get_close_matches(match or name, sorted(set(known)), n=3, cutoff=0.5)
    hint = f"; did you mean: {', '.join(close)}?" if close else ""
    failed = sorted({error.plugin for error in plugin_errors()})
    note = f"; plugins that failed: {', '.join(map(repr, failed))}" if failed else ""
    return InvalidInputError(f"unknown {kind} {name!r}{hint} ({listed_by} what exists{note})")


def plugin_errors() -> list[PluginError]:
    """Every plugin failure (loading, then each hook's registrations, which this runs if they have not run yet)."""
    load_plugins()
    errors = list(_load_errors)
    for registrations in list(_declared):
        errors.extend(registrations.errors())
    return errors
