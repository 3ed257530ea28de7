"""The plugin manager and registry: default plugins, explicit registration, and failures reported by name."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ctxwin.counters.base import BaseTokenCounter
from ctxwin.counters.models import ModelSpec
from ctxwin.hookspecs import hookimpl
from ctxwin.plugins import PluginWarning, plugin_errors, register_plugin, unregister_plugin
from ctxwin.registry import (
    get_counter,
    get_model,
    get_strategy_factory,
    list_counters,
    list_models,
    list_strategies,
)


class Chars(BaseTokenCounter):
    name = "chars"

    def count_text(self, text: str) -> int:
        return len(text)


def make_plugin(**hooks: Callable[..., Any]) -> types.SimpleNamespace:
    return types.SimpleNamespace(**{name: hookimpl(function) for name, function in hooks.items()})


@pytest.fixture
def registered() -> Iterator[Callable[..., str]]:
    names: list[str] = []

    def add(plugin: object, name: str) -> str:
        names.append(register_plugin(plugin, name=name))
        return name

    yield add
    for name in names:
        unregister_plugin(name)


def good_plugin() -> types.SimpleNamespace:
    def register_counters(register: Callable[..., None]) -> None:
        register("chars", lambda arg: Chars(), origin="len(text)")

    def register_models(register: Callable[[ModelSpec], None]) -> None:
        register(ModelSpec("tiny-1", 2_048, 256, "chars", aliases=("tiny",)))

    def register_strategies(register: Callable[..., None]) -> None:
        register("noop", lambda **options: "noop strategy")

    return make_plugin(register_counters=register_counters, register_models=register_models,
                       register_strategies=register_strategies)


def test_builtin_counters_and_models() -> None:
    assert get_counter("gpt-4o").count_text("hello world") == 2
    assert {"approximate", "tiktoken", "hf"} <= {c.name for c in list_counters()}
    assert {"gpt-4o", "deepseek-v3", "claude-3-5-sonnet"} <= {m.name for m in list_models()}
    assert get_counter("approximate:safe").name == "approximate:safe"


def test_counters_are_cached_per_spec() -> None:
    assert get_counter("gpt-4o") is get_counter("gpt-4o")
    assert get_counter("gpt-4o") is get_counter("tiktoken:o200k_base") is get_counter("gpt-4o-mini")


@pytest.mark.parametrize("spec", ["gpt4o", "tiktokn:o200k_base"])
def test_unknown_spec_lists_close_matches(spec: str) -> None:
    with pytest.raises(ValueError, match="did you mean"):
        get_counter(spec)


def test_non_string_spec() -> None:
    with pytest.raises(TypeError, match="counter spec must be a str"):
        get_counter(None)  # type: ignore[arg-type]


def test_register_and_unregister(registered: Callable[..., str]) -> None:
    registered(good_plugin(), "good")
    assert get_counter("chars").count_text("hello") == 5
    assert get_counter("tiny").count_messages([]) == 0
    assert get_model("tiny").name == "tiny-1"
    assert get_strategy_factory("noop")() == "noop strategy"
    assert "noop" in {s.name for s in list_strategies()}
    assert next(c for c in list_counters() if c.name == "chars").plugin == "good"
    unregister_plugin("good")
    with pytest.raises(ValueError, match="unknown counter or model 'chars'"):
        get_counter("chars")
    register_plugin(good_plugin(), name="good")  # so the fixture's cleanup finds it


def test_unregister_unknown_plugin() -> None:
    with pytest.raises(ValueError, match="no plugin named 'nope'"):
        unregister_plugin("nope")


def test_unknown_strategy() -> None:
    with pytest.raises(ValueError, match="unknown strategy 'trimm'"):
        get_strategy_factory("trimm")


def _raising(register: Callable[..., None]) -> None:
    register("half", lambda arg: Chars())
    raise RuntimeError("boom")


@pytest.mark.parametrize(("hooks", "stage", "message"), [
    ({"register_counters": _raising}, "register_counters", "RuntimeError: boom"),
    ({"register_counters": lambda register: ["junk"]}, "register_counters", "must call register"),
    ({"register_counters": lambda register: register("x", "not callable")}, "register_counters",
     "factory must be callable"),
    ({"register_counters": lambda register: register("a:b", lambda arg: Chars())}, "register_counters",
     "without ':'"),
    ({"register_models": lambda register: register({"name": "m"})}, "register_models", "expected a ctxwin ModelSpec"),
    ({"register_models": lambda register: register(ModelSpec("orphan", 10, 1, "nosuch"))}, "register_models",
     "no counter 'nosuch' is registered"),
    ({"register_counters": lambda register: register("tiktoken", lambda arg: Chars())}, "register_counters",
     "already registered by plugin 'ctxwin.default_plugins.counters'"),
    ({"register_models": lambda register: register(ModelSpec("dup", 10, 1, "approximate", ("gpt-4o",)))},
     "register_models", "model name 'gpt-4o' is already registered"),
])
def test_bad_plugin_is_reported_by_name_and_others_still_load(
    registered: Callable[..., str], hooks: dict[str, Callable[..., Any]], stage: str, message: str
) -> None:
    registered(good_plugin(), "good")
    registered(make_plugin(**hooks), "bad")
    with pytest.warns(PluginWarning, match="plugin 'bad' failed"):
        errors = [e for e in plugin_errors() if e.plugin == "bad"]
    assert [(e.stage, message in e.error) for e in errors] == [(stage, True)]
    assert get_counter("chars").count_text("abc") == 3  # the good plugin is unaffected
    assert get_counter("gpt-4o").count_text("hello world") == 2
    for name in ("half", "orphan", "dup"):
        with pytest.raises(ValueError):
            get_counter(name)


def test_factory_returning_junk_or_failing(registered: Callable[..., str]) -> None:
    def register_counters(register: Callable[..., None]) -> None:
        register("junk", lambda arg: object())
        register("crash", lambda arg: {}["missing"])

    registered(make_plugin(register_counters=register_counters), "factories")
    with pytest.raises(TypeError, match=r"counter 'junk' \(plugin 'factories'\) returned object, which is not a"):
        get_counter("junk")
    with pytest.raises(RuntimeError, match=r"counter 'crash' \(plugin 'factories'\) failed to build"):
        get_counter("crash")


def test_factory_argument_is_the_text_after_the_colon(registered: Callable[..., str]) -> None:
    seen: list[str | None] = []

    def register_counters(register: Callable[..., None]) -> None:
        register("echo", lambda arg: seen.append(arg) or Chars())

    registered(make_plugin(register_counters=register_counters), "echo")
    get_counter("echo")
    get_counter("echo:a:b")
    assert seen == [None, "a:b"]


def test_builtin_strategies_are_registered() -> None:
    assert {"filter", "truncate_tool_output", "summarize", "trim"} <= {s.name for s in list_strategies()}
    for info in list_strategies():
        if info.plugin == "ctxwin.default_plugins.strategies":
            assert info.factory().name == info.name
