"""The plugin manager and registry: default plugins, explicit registration, and failures reported by name."""

from __future__ import annotations

import dataclasses
import signal
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import pytest

from ctxwin._plugins import plugin_errors, register_plugin, unregister_plugin
from ctxwin.counters import get_counter, get_model, list_counters, list_models
from ctxwin.counters._base import BaseTokenCounter
from ctxwin.counters._models import ModelSpec
from ctxwin.hookspecs import hookimpl
from ctxwin.messages import HumanMessage
from ctxwin.planner import fit
from ctxwin.strategies import Summarize, get_strategy, get_strategy_factory, list_strategies


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
    assert get_counter("gpt-4o") is get_counter("tiktoken:o200k_base") is get_counter("gpt-4.1")
    # gpt-4o-mini charges images far more per tile: the same encoding, another counter
    assert get_counter("gpt-4o-mini") is get_counter("tiktoken:o200k_base,images=gpt-4o-mini")
    assert get_counter("gpt-4o-mini") is not get_counter("gpt-4o")


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


def _raise(exc: BaseException) -> Callable[..., NoReturn]:
    def hook(register: Callable[..., None]) -> NoReturn:
        register("half", lambda arg: Chars())
        raise exc

    return hook


def _mutated_spec() -> ModelSpec:
    spec = ModelSpec("mutant", 10, 1, "approximate", aliases=("m",))
    object.__setattr__(spec, "aliases", (None,))  # frozen, but not beyond reach: checked again on register
    return spec


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
     "already registered by plugin 'ctxwin.counters._families.plugin'"),
    ({"register_models": lambda register: register(ModelSpec("dup", 10, 1, "approximate", ("gpt-4o",)))},
     "register_models", "model name 'gpt-4o' is already registered"),
    # issue 19: nothing a hook raises ends the host, and garbage is refused by name
    ({"register_counters": _raise(SystemExit(3))}, "register_counters", "SystemExit: 3"),
    ({"register_counters": _raise(KeyboardInterrupt())}, "register_counters", "KeyboardInterrupt"),
    ({"register_strategies": _raise(GeneratorExit("odd"))}, "register_strategies", "GeneratorExit: odd"),
    ({"register_counters": lambda register: register(123, lambda arg: Chars())}, "register_counters",
     "counter name must be a non-empty string"),
    ({"register_counters": lambda register: register("c", lambda arg: Chars(), origin=5)}, "register_counters",
     "origin must be a string"),
    ({"register_counters": lambda register: register()}, "register_counters", "TypeError"),
    ({"register_strategies": lambda register: register(None, lambda **o: None)}, "register_strategies",
     "strategy name must be a non-empty string"),
    ({"register_models": lambda register: register(_mutated_spec())}, "register_models",
     "aliases must be a tuple of non-empty strings"),
    ({"register_models": lambda register: register(types.SimpleNamespace(**dataclasses.asdict(
        ModelSpec("lookalike", 10, 1, "approximate"))))}, "register_models", "expected a ctxwin ModelSpec"),
    ({"register_counters": lambda register: get_counter("gpt-4o")}, "register_counters",
     "looked up counters, models or strategies while plugins are registering"),
])
def test_bad_plugin_is_reported_by_name_and_others_still_load(
    registered: Callable[..., str], hooks: dict[str, Callable[..., Any]], stage: str, message: str
) -> None:
    registered(good_plugin(), "good")
    registered(make_plugin(**hooks), "bad")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reported through plugin_errors() only: no warning noise
        errors = [e for e in plugin_errors() if e.plugin == "bad"]
    assert [(e.stage, message in e.error) for e in errors] == [(stage, True)], errors
    assert str(errors[0]).startswith(f"plugin 'bad' failed in {stage}: ")
    assert get_counter("chars").count_text("abc") == 3  # the good plugin is unaffected
    assert get_counter("gpt-4o").count_text("hello world") == 2
    for name in ("half", "orphan", "dup", "mutant", "lookalike", "c"):
        with pytest.raises(ValueError, match="plugins that failed: 'bad'"):
            get_counter(name)


def _factory_raising(exc: BaseException) -> Callable[[str | None], NoReturn]:
    def factory(arg: str | None) -> NoReturn:
        raise exc

    return factory


@pytest.mark.parametrize(
    ("factory", "error", "match"),
    [
        (lambda arg: object(), TypeError, "returned object, which is not a TokenCounter"),
        (lambda arg: None, TypeError, "returned NoneType, which is not a TokenCounter"),
        (lambda arg: "words", TypeError, r"returned str, .*\(missing: count_text, count_message, count_messages\)"),
        (lambda arg: {}["missing"], RuntimeError, "failed to build: KeyError: 'missing'"),
        (_factory_raising(SystemExit(2)), RuntimeError, "failed to build: SystemExit: 2"),
        (_factory_raising(KeyboardInterrupt()), RuntimeError, "failed to build: KeyboardInterrupt"),
        (_factory_raising(ValueError("no such size")), ValueError, ": no such size"),
        (_factory_raising(TypeError("bad arg")), TypeError, ": bad arg"),
    ],
)
def test_factory_returning_junk_or_failing_names_the_spec_and_plugin(
    registered: Callable[..., str], factory: Callable[[str | None], Any], error: type[Exception], match: str
) -> None:
    registered(make_plugin(register_counters=lambda register: register("junk", factory)), "factories")
    with pytest.raises(error, match=r"^counter 'junk:x' \(plugin 'factories'\)" + f".*{match}"):
        get_counter("junk:x")


def test_builtin_factory_errors_name_the_spec_only() -> None:
    with pytest.raises(ValueError, match=r"^counter 'tiktoken:nope': unknown tiktoken encoding 'nope'"):
        get_counter("tiktoken:nope")


def test_factory_argument_is_the_text_after_the_colon(registered: Callable[..., str]) -> None:
    seen: list[str | None] = []

    def register_counters(register: Callable[..., None]) -> None:
        register("echo", lambda arg: seen.append(arg) or Chars())

    registered(make_plugin(register_counters=register_counters), "echo")
    get_counter("echo")
    get_counter("echo:a:b")
    assert seen == [None, "a:b"]


def test_get_strategy_builds_one_with_its_options() -> None:
    built = get_strategy("summarize", keep_last_messages=2, max_summary_tokens=64)
    assert isinstance(built, Summarize) and (built.keep_last_messages, built.max_summary_tokens) == (2, 64)
    assert get_strategy("trim").name == "trim"
    assert get_strategy("summarize") is not get_strategy("summarize")  # a new one each time: strategies hold options
    with pytest.raises(TypeError, match=r"^strategy 'trim': .*keep_last"):
        get_strategy("trim", keep_last=3)
    with pytest.raises(ValueError, match="unknown strategy 'sumarize'; did you mean: summarize"):
        get_strategy("sumarize")


def test_a_models_hook_may_look_up_counters(registered: Callable[..., str]) -> None:
    """Models are checked against the counters, so the counters are collected first: a models hook may use them."""
    def register_models(register: Callable[[ModelSpec], None]) -> None:
        register(ModelSpec("sized-1", get_counter("approximate").count_text("a b c") * 100, 10, "approximate"))

    registered(make_plugin(register_models=register_models), "sized")
    assert get_model("sized-1").context_window > 0
    assert [e for e in plugin_errors() if e.plugin == "sized"] == []


def test_a_counters_hook_looking_up_models_is_its_own_error_not_the_models_plugins(
    registered: Callable[..., str]
) -> None:
    """Looking a model up needs the counters, which this hook is registering: the error is this plugin's alone."""
    registered(make_plugin(register_counters=lambda register: get_model("gpt-4o")), "eager")
    errors = plugin_errors()
    assert [(e.plugin, e.stage) for e in errors] == [("eager", "register_counters")], errors
    assert "looked up counters, models or strategies while plugins are registering" in errors[0].error
    assert get_model("gpt-4o").name == "gpt-4o"


def test_a_model_named_like_its_counter_spec_resolves_once(registered: Callable[..., str]) -> None:
    """A model whose name is its own counter spec was looked up again as a model, without end."""
    def register_models(register: Callable[[ModelSpec], None]) -> None:
        register(ModelSpec("approximate:safe", 1_000, 10, "approximate:safe"))

    registered(make_plugin(register_models=register_models), "selfnamed")
    assert get_counter("approximate:safe").name == "approximate:safe"
    assert get_model("approximate:safe").context_window == 1_000


def test_counters_are_built_again_when_the_plugins_change(registered: Callable[..., str]) -> None:
    registered(good_plugin(), "good")
    first = get_counter("tiny")
    assert get_counter("chars") is first  # the model and its counter share one instance
    unregister_plugin("good")
    register_plugin(good_plugin(), name="good")
    assert get_counter("chars") is not first and get_counter("chars") is get_counter("tiny")


def test_builtin_strategies_are_registered() -> None:
    assert {"filter", "truncate_tool_output", "summarize", "trim"} <= {s.name for s in list_strategies()}
    for info in list_strategies():
        if info.plugin == "ctxwin.strategies._builtin_plugin":
            assert info.factory().name == info.name


class DuckCounter:
    """A plugin counter that only looks like one (no BaseTokenCounter), returning whatever it is told to."""

    name = "duck"

    def __init__(self, value: object) -> None:
        self.value = value

    def count_text(self, text: str) -> object:
        return self.value

    def count_message(self, message: object) -> object:
        return self.value

    def count_messages(self, messages: object, *, tools: object = None) -> object:
        return self.value

    def count_texts(self, texts: list[str]) -> list[object]:
        return [self.value for _ in texts]


@pytest.mark.parametrize(("value", "error"), [(-3, ValueError), (None, TypeError), ("12", TypeError),
                                              (float("nan"), ValueError), (True, TypeError)])
def test_a_plugin_counters_bad_count_names_the_plugin_wherever_it_is_used(
    registered: Callable[..., str], value: object, error: type[Exception]
) -> None:
    """Issue 19: a counter returning None, a string or a negative number gave errors that did not name the plugin,
    and `ctxwin count` printed a negative total."""
    def register_counters(register: Callable[..., None]) -> None:
        register("duck", lambda arg: DuckCounter(value))

    registered(make_plugin(register_counters=register_counters), "ducks")
    counter = get_counter("duck")
    calls: list[Callable[[], object]] = [
        lambda: counter.count_text("hello"),
        lambda: counter.count_message(HumanMessage("hello")),
        lambda: counter.count_messages([HumanMessage("hello")]),
        lambda: counter.count_texts(["hello"]),  # type: ignore[attr-defined]
        lambda: fit([HumanMessage("hello")], counter="duck", context_window=1_000, reserve_output=10),
    ]
    for call in calls:
        with pytest.raises(error, match=r"token counter 'duck' \(plugin 'ducks'\) returned"):
            call()


def test_a_plugin_counter_with_good_counts_is_used_as_it_is(registered: Callable[..., str]) -> None:
    def register_counters(register: Callable[..., None]) -> None:
        register("duck", lambda arg: DuckCounter(7))

    registered(make_plugin(register_counters=register_counters), "ducks")
    counter = get_counter("duck")
    assert counter.name == "duck" and counter.count_messages([HumanMessage("a")]) == 7
    assert counter.count_texts(["a", "b"]) == [7, 7]  # type: ignore[attr-defined]
    assert get_counter("duck") is counter


def test_building_a_counter_leaves_the_process_signal_handlers_alone(registered: Callable[..., str]) -> None:
    """No process-wide SIGINT handler swap around plugin code: the factory sees the handler the process installed."""
    seen: list[object] = []

    def factory(arg: str | None) -> Chars:
        seen.append(signal.getsignal(signal.SIGINT))
        return Chars()

    registered(make_plugin(register_counters=lambda register: register("seen", factory)), "seeing")
    before = signal.getsignal(signal.SIGINT)
    get_counter("seen")
    assert seen == [before] and signal.getsignal(signal.SIGINT) is before


def test_a_ctrl_c_while_a_factory_runs_still_interrupts(registered: Callable[..., str]) -> None:
    """The SIGINT handler the process installed raises KeyboardInterrupt: that one goes on interrupting, while a
    factory's own ``raise KeyboardInterrupt`` is reported (test_factory_returning_junk_or_failing_names_...)."""
    def on_sigint(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    def factory(arg: str | None) -> Chars:
        signal.raise_signal(signal.SIGINT)  # the user's Ctrl-C, while plugin code runs
        return Chars()

    registered(make_plugin(register_counters=lambda register: register("pressed", factory)), "pressing")
    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        with pytest.raises(KeyboardInterrupt):
            get_counter("pressed")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert signal.getsignal(signal.SIGINT) is previous


def test_an_origin_may_be_a_function_called_when_listed(registered: Callable[..., str]) -> None:
    asked: list[str] = []

    def origin() -> str:
        asked.append("origin")
        return "counted by hand"

    def register_counters(register: Callable[..., None]) -> None:
        register("lazy", lambda arg: Chars(), origin=origin)
        register("failing", lambda arg: Chars(), origin=lambda: {}["data"])

    registered(make_plugin(register_counters=register_counters), "lazy-origins")
    get_counter("lazy")
    assert asked == []  # registering and building do not ask
    origins = {info.name: info.origin for info in list_counters()}
    assert origins["lazy"] == "counted by hand" and origins["failing"] == "unavailable: KeyError: 'data'"
