"""No plugin takes a name over (issue 32): built-in names and first registrations win whatever pluggy's
tryfirst/trylast say, a counter and a model never share a name, and every refused taker is named in
``plugin_errors()`` and ``ctxwin counters``."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxwin._plugins import PluginError, plugin_errors, register_plugin, unregister_plugin
from ctxwin.counters import get_counter, get_model, list_counters
from ctxwin.counters._approximate.counter import ApproximateCounter
from ctxwin.counters._base import BaseTokenCounter
from ctxwin.counters._models import ModelSpec
from ctxwin.hookspecs import hookimpl
from ctxwin.messages import HumanMessage
from ctxwin.planner import fit

TEXT = "The quick brown fox jumps over the lazy dog, twice: the quick brown fox jumps over the lazy dog."


class Thousand(BaseTokenCounter):
    """A counter no real tokenizer agrees with: every text is 1,000 tokens."""

    name = "thousand"

    def count_text(self, text: str) -> int:
        return 1_000


def counters_plugin(name: str, order: str | None = None) -> types.SimpleNamespace:
    def register_counters(register: Callable[..., None]) -> None:
        register(name, lambda arg: Thousand())

    marker = hookimpl(**({order: True} if order else {}))
    return types.SimpleNamespace(register_counters=marker(register_counters))


def models_plugin(*specs: ModelSpec, order: str | None = None) -> types.SimpleNamespace:
    def register_models(register: Callable[[ModelSpec], None]) -> None:
        for spec in specs:
            register(spec)

    marker = hookimpl(**({order: True} if order else {}))
    return types.SimpleNamespace(register_models=marker(register_models))


@pytest.fixture
def registered() -> Iterator[Callable[[object, str], None]]:
    names: list[str] = []

    def add(plugin: object, name: str) -> None:
        names.append(register_plugin(plugin, name=name))

    yield add
    for name in dict.fromkeys(names):  # a test may register one again
        unregister_plugin(name)


def errors_of(plugin: str) -> list[PluginError]:
    return [error for error in plugin_errors() if error.plugin == plugin]


@pytest.mark.parametrize("order", [None, "tryfirst", "trylast"])
def test_a_builtin_counter_name_cannot_be_taken(registered: Any, order: str | None) -> None:
    registered(counters_plugin("approximate", order), "taker")
    assert get_counter("approximate").count_text(TEXT) == ApproximateCounter().count_text(TEXT) < 1_000
    assert {info.plugin for info in list_counters() if info.name == "approximate"} == {
        "ctxwin.counters._approximate.plugin"}
    [error] = errors_of("taker")
    assert error.stage == "register_counters"
    assert "counter 'approximate' is already registered by plugin 'ctxwin.counters._approximate.plugin'" in error.error
    assert not [e for e in plugin_errors() if e.plugin.startswith("ctxwin.")], plugin_errors()


@pytest.mark.parametrize("order", [None, "tryfirst", "trylast"])
def test_the_first_registration_of_a_name_wins(registered: Any, order: str | None) -> None:
    class Seven(Thousand):
        def count_text(self, text: str) -> int:
            return 7

    first = types.SimpleNamespace(register_counters=hookimpl(lambda register: register("shared", lambda a: Seven())))
    registered(first, "first")
    registered(counters_plugin("shared", order), "second")
    assert get_counter("shared").count_text("x") == 7
    assert [e.stage for e in errors_of("second")] == ["register_counters"]
    assert "already registered by plugin 'first'" in errors_of("second")[0].error
    assert errors_of("first") == []


@pytest.mark.parametrize("name", ["gpt-4o", "GPT-4o", "claude-sonnet-4-5"])
@pytest.mark.parametrize("order", [None, "tryfirst", "trylast"])
def test_a_plugin_counter_named_like_a_builtin_model_is_refused(registered: Any, name: str, order: str | None) -> None:
    registered(counters_plugin(name, order), "shadow")
    model = get_model(name)
    counter = get_counter(name)
    assert counter is get_counter(model.counter)  # the model's counter, never the plugin's
    assert counter.count_text(TEXT) < 1_000
    messages = [HumanMessage(TEXT)]
    by_model = fit(messages, model=name, reserve_output=10).tokens_before
    by_counter = fit(messages, None, counter=name, context_window=model.context_window, reserve_output=10).tokens_before
    assert by_model == by_counter
    assert name not in {info.name for info in list_counters()}
    [error] = errors_of("shadow")
    assert error.stage == "register_counters"
    assert f"counter {name!r} is already a model name of plugin 'ctxwin.counters._models_plugin'" in error.error


def test_a_plugin_model_named_like_a_builtin_counter_is_refused(registered: Any) -> None:
    registered(models_plugin(ModelSpec("approximate", 1_000, 10, "tiktoken:cl100k_base"), order="tryfirst"), "shadow")
    assert get_counter("approximate").count_text(TEXT) == ApproximateCounter().count_text(TEXT)
    with pytest.raises(ValueError, match="unknown model 'approximate'"):
        get_model("approximate")
    [error] = errors_of("shadow")
    assert error.stage == "register_models"
    owner = "ctxwin.counters._approximate.plugin"
    assert f"model name 'approximate' is already a counter of plugin '{owner}'" in error.error


def test_between_plugins_the_first_registered_keeps_the_name(registered: Any) -> None:
    registered(counters_plugin("acme"), "counters-first")
    registered(models_plugin(ModelSpec("acme", 8_000, 100, "approximate"), order="tryfirst"), "models-second")
    assert get_counter("acme").count_text("x") == 1_000
    with pytest.raises(ValueError, match="unknown model 'acme'"):
        get_model("acme")
    assert "model name 'acme' is already a counter of plugin 'counters-first'" in errors_of("models-second")[0].error
    unregister_plugin("counters-first")
    registered(counters_plugin("acme"), "counters-first")  # now registered after the model
    assert get_counter("acme").count_text(TEXT) == ApproximateCounter().count_text(TEXT)  # the model's counter
    assert get_model("acme").context_window == 8_000
    assert "counter 'acme' is already a model name of plugin 'models-second'" in errors_of("counters-first")[0].error


def test_a_model_named_after_its_own_counter_keeps_both(registered: Any) -> None:
    plugin = types.SimpleNamespace(
        register_counters=hookimpl(lambda register: register("acme-7b", lambda arg: Thousand())),
        register_models=hookimpl(lambda register: register(ModelSpec("acme-7b", 8_000, 100, "acme-7b"))),
    )
    registered(plugin, "acme")
    assert get_counter("acme-7b").count_text("x") == 1_000
    assert get_model("acme-7b").counter == "acme-7b"
    assert errors_of("acme") == []


_CLI = """
import sys, types
from ctxwin.cli._main import main
from ctxwin.counters._base import BaseTokenCounter
from ctxwin.hookspecs import hookimpl
from ctxwin._plugins import register_plugin
class Thousand(BaseTokenCounter):
    name = "thousand"
    def count_text(self, text):
        return 1000
@hookimpl(trylast=True)
def register_counters(register):
    register("approximate", lambda arg: Thousand())
    register("gpt-4o", lambda arg: Thousand())
register_plugin(types.SimpleNamespace(register_counters=register_counters), name="taker")
sys.exit(main(sys.argv[1:]))
"""


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _CLI, *argv], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(Path(__file__).parents[2]), "CTXWIN_LOAD_PLUGINS": "",
                               "PATH": "/usr/bin:/bin"})


@pytest.mark.slow
def test_ctxwin_counters_names_the_refused_taker() -> None:
    done = _cli("counters", "--json")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert {row["name"]: row["plugin"] for row in listing["counters"]}["approximate"] == \
        "ctxwin.counters._approximate.plugin"
    assert "gpt-4o" not in {row["name"] for row in listing["counters"]}
    refused = [problem["error"] for problem in listing["plugin_errors"] if problem["plugin"] == "taker"]
    assert len(refused) == 2
    assert "counter 'approximate' is already registered by plugin 'ctxwin.counters._approximate.plugin'" in refused[0]
    assert "counter 'gpt-4o' is already a model name of plugin 'ctxwin.counters._models_plugin'" in refused[1]
    assert not [p for p in listing["plugin_errors"] if p["plugin"] != "taker"]
    table = _cli("counters").stdout
    assert "plugin error: taker (register_counters): counter 'approximate' is already registered" in table
    assert "plugin error: taker (register_counters): counter 'gpt-4o' is already a model name" in table


@pytest.mark.slow
def test_counter_and_model_flags_give_one_count(tmp_path: Path) -> None:
    conversation = tmp_path / "chat.json"
    conversation.write_text(json.dumps([{"role": "user", "content": TEXT}]), encoding="utf-8")
    by_counter = _cli("count", str(conversation), "--counter", "gpt-4o", "--json")
    by_model = _cli("count", str(conversation), "--model", "gpt-4o", "--json")
    assert by_counter.returncode == by_model.returncode == 0, (by_counter.stderr, by_model.stderr)
    totals = [json.loads(done.stdout)["conversations"][0]["total"] for done in (by_counter, by_model)]
    assert totals[0] == totals[1] < 1_000
    assert "taker" in by_counter.stderr  # the refused plugin is warned about
