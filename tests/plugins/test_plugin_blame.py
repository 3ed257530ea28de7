"""A plugin's bad counts and failures are blamed on it by name (issue 32): a ``BaseTokenCounter`` subclass whose
``count_text`` returns a non-count or raises, and a factory raising ``OSError``, wherever the counter is used."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxwin._plugins import register_plugin, unregister_plugin
from ctxwin.counters import get_counter
from ctxwin.counters._base import MAX_COUNT, BaseTokenCounter
from ctxwin.counters._errors import PluginCounterError
from ctxwin.hookspecs import hookimpl
from ctxwin.messages import AIMessage, HumanMessage
from ctxwin.planner import fit
from ctxwin.trim import trim_messages


class Returns(BaseTokenCounter):
    """A subclass of ctxwin's own base, whose ``count_text`` returns ``value`` (or raises it)."""

    name = "returns"

    def __init__(self, value: object) -> None:
        self.value = value

    def count_text(self, text: str) -> int:
        if isinstance(self.value, BaseException):
            raise self.value
        return self.value  # type: ignore[return-value]


@pytest.fixture
def plugin() -> Iterator[Callable[[Callable[[str | None], Any]], None]]:
    names: list[str] = []

    def register(factory: Callable[[str | None], Any]) -> None:
        hooks = types.SimpleNamespace(register_counters=hookimpl(lambda register: register("returns", factory)))
        names.append(register_plugin(hooks, name="acme-counters"))

    yield register
    for name in names:
        unregister_plugin(name)


def _uses(counter: Any) -> list[Callable[[], object]]:
    messages = [HumanMessage("hello there"), AIMessage("hi", name="bot")]
    return [
        lambda: counter.count_text("hello"),
        lambda: counter.count_message(HumanMessage("hello")),
        lambda: counter.count_messages(messages),
        lambda: counter.count_texts(["a", "b"]),
        lambda: counter.count_message_batch(messages),
        lambda: fit(messages, counter="returns", context_window=1_000, reserve_output=10),
        lambda: trim_messages(messages, max_tokens=100, token_counter="returns"),
    ]


@pytest.mark.parametrize(("value", "error"), [
    (-1, ValueError), (float("nan"), ValueError), (None, TypeError), ("5", TypeError), (True, TypeError),
    (10**400, ValueError), (MAX_COUNT + 1, ValueError), (float("inf"), ValueError),
])
def test_a_base_counter_plugins_bad_count_names_the_plugin(plugin: Any, value: object, error: type) -> None:
    plugin(lambda arg: Returns(value))
    counter = get_counter("returns")
    for use in _uses(counter):
        with pytest.raises(error, match=r"token counter 'returns' \(plugin 'acme-counters'\) returned"):
            use()


def test_the_largest_count_is_accepted(plugin: Any) -> None:
    plugin(lambda arg: Returns(MAX_COUNT))
    assert get_counter("returns").count_text("x") == MAX_COUNT


@pytest.mark.parametrize("exc", [RuntimeError("model not loaded"), OSError(5, "Input/output error"),
                                 KeyError("vocab"), UnicodeError("bad text")])
def test_a_counter_plugin_raising_is_its_error(plugin: Any, exc: Exception) -> None:
    plugin(lambda arg: Returns(exc))
    counter = get_counter("returns")
    for use in _uses(counter):
        with pytest.raises(PluginCounterError, match=r"^token counter 'returns' \(plugin 'acme-counters'\) failed on "
                                                     rf".*: {type(exc).__name__}: ") as caught:
            use()
        assert caught.value.__cause__ is exc


def _factory_raising_oserror(arg: str | None) -> BaseTokenCounter:
    raise OSError(2, "No such file or directory", "/opt/acme/vocab.bin")


def test_a_factory_raising_oserror_is_the_plugins_error(plugin: Any) -> None:
    plugin(_factory_raising_oserror)
    with pytest.raises(PluginCounterError, match=r"^counter 'returns' \(plugin 'acme-counters'\) failed to build: "
                                                 r"FileNotFoundError: .*/opt/acme/vocab.bin"):
        get_counter("returns")


_CLI = """
import sys, types
from ctxwin.cli._main import main
from ctxwin.hookspecs import hookimpl
from ctxwin._plugins import register_plugin
def factory(arg):
    {body}
register_plugin(types.SimpleNamespace(register_counters=hookimpl(lambda register: register("returns", factory))),
                name="acme-counters")
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
@pytest.mark.parametrize(("body", "message"), [
    ("raise OSError(2, 'No such file or directory', '/opt/acme/vocab.bin')",
     "counter 'returns' (plugin 'acme-counters') failed to build: FileNotFoundError"),
    ("from tests_returns import Returns; return Returns(RuntimeError('model not loaded'))",
     "token counter 'returns' (plugin 'acme-counters') failed on "),
])
def test_the_cli_blames_the_plugin_not_ctxwin(tmp_path: Path, body: str, message: str) -> None:
    (tmp_path / "tests_returns.py").write_text(
        "from ctxwin.counters._base import BaseTokenCounter\n"
        "class Returns(BaseTokenCounter):\n"
        "    name = 'returns'\n"
        "    def __init__(self, value): self.value = value\n"
        "    def count_text(self, text): raise self.value\n", encoding="utf-8")
    conversation = tmp_path / "chat.json"
    conversation.write_text(json.dumps([{"role": "user", "content": "hello"}]), encoding="utf-8")
    script = _CLI.format(body=body)
    done = subprocess.run([sys.executable, "-c", script, "count", str(conversation), "--counter", "returns"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={"PYTHONPATH": f"{tmp_path}:{Path(__file__).parents[2]}", "CTXWIN_LOAD_PLUGINS": "",
                               "PATH": "/usr/bin:/bin"})
    assert done.returncode == 1, done.stderr
    assert message in done.stderr and "ctxwin bug" not in done.stderr, done.stderr
