"""The counter contract is in the types: every member the engine reads is declared on ``TokenCounter``, the built-in
counters implement all of them, a counter with only the four original members is wrapped once where it enters
(``as_token_counter``) and works through the trim engine, ``fit``, a session and the plugin registry, and no module
of ctxwin looks for a counter's members with ``getattr``/``hasattr``."""

from __future__ import annotations

import ast
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin._plugins import register_plugin, unregister_plugin
from ctxwin.counters import get_counter
from ctxwin.counters._base import (
    OPTIONAL_MEMBERS,
    REQUIRED_METHODS,
    BaseTokenCounter,
    CounterAdapter,
    TokenCounter,
    as_token_counter,
    declared_overhead,
)
from ctxwin.hookspecs import hookimpl
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import Planner
from ctxwin.trim import trim_messages

ROOT = Path(__file__).resolve().parents[2] / "ctxwin"
CORPUS = Path(__file__).resolve().parents[2] / "benchmarks"


class WordCounter:
    """A plugin author's counter written against the original protocol: four members, nothing else."""

    name = "words"

    def count_text(self, text: str) -> int:
        return len(text.split())

    def count_message(self, message: BaseMessage) -> int:
        return self.count_text(message.text) + 4

    def count_messages(self, messages: Sequence[BaseMessage], *, tools: Sequence[dict[str, Any]] | None = None) -> int:
        return sum(map(self.count_message, messages)) + 2 if messages else 0


def conversation() -> list[BaseMessage]:
    """Turns of text the tests did not write: lines of the repository's own docs, as alternating user and
    assistant messages after a system prompt."""
    lines = [line for line in (CORPUS / "README.md").read_text().splitlines() if len(line.split()) > 4][:40]
    assert len(lines) >= 12
    turns: list[BaseMessage] = [SystemMessage("You answer questions about benchmarks.")]
    for i, line in enumerate(lines):
        turns.append(HumanMessage(line, id=f"m{i}") if i % 2 == 0 else AIMessage(line, id=f"m{i}"))
    return turns


def test_the_protocol_declares_every_member_the_engine_reads() -> None:
    declared = {name for name in dir(TokenCounter) if not name.startswith("_")} | set(TokenCounter.__annotations__)
    assert {"name", *REQUIRED_METHODS, *OPTIONAL_MEMBERS} <= declared


@pytest.mark.parametrize("spec", ["approximate", *(pytest.param(spec, marks=pytest.mark.slow) for spec in (
    "approximate:safe", "tiktoken:o200k_base", "harmony"))])
def test_the_built_in_counters_implement_the_whole_contract(spec: str) -> None:
    counter = get_counter(spec)
    assert isinstance(counter, TokenCounter)
    assert as_token_counter(counter) is counter  # nothing to adapt


def test_a_four_member_counter_is_adapted_with_the_documented_defaults() -> None:
    words = WordCounter()
    assert not isinstance(words, TokenCounter)
    counter = as_token_counter(words)
    assert isinstance(counter, CounterAdapter) and isinstance(counter, TokenCounter)
    assert (counter.additive, counter.request_overhead, counter.estimating, counter.max_relative_error,
            counter.exact_sum) == (False, 0, False, 0.0, False)
    assert declared_overhead(counter) is None  # not additive: engines count whole candidate lists
    texts = ["one two", "three", ""]
    assert counter.count_texts(texts) == [words.count_text(t) for t in texts]
    messages = conversation()[:5]
    assert counter.count_message_batch(messages) == [words.count_message(m) for m in messages]
    assert counter.count_tools([]) == 0
    assert counter.count_tools([{"type": "function", "function": {"name": "f"}}]) == 0  # words ignores tools


def test_the_adapter_takes_the_members_a_counter_declares() -> None:
    class Declaring(WordCounter):
        additive = True
        request_overhead = 2
        estimating = True
        exact_sum = True

        def count_texts(self, texts: Sequence[str]) -> list[int]:
            return [len(t) for t in texts]  # visibly not count_text's

    counter = as_token_counter(Declaring())
    assert counter is not None
    assert declared_overhead(counter) == 2 and counter.estimating is True and counter.exact_sum is True
    assert counter.count_texts(["abc def"]) == [7]


@pytest.mark.parametrize("junk", [object(), len, "words", 3])
def test_what_is_not_a_counter_is_not_adapted(junk: Any) -> None:
    assert as_token_counter(junk) is None


@pytest.mark.parametrize("max_tokens", [0, 15, 60, 200, 10_000])
def test_a_four_member_counter_trims_to_the_longest_suffix_that_fits(max_tokens: int) -> None:
    words = WordCounter()
    messages = conversation()[1:]
    kept = trim_messages(messages, max_tokens=max_tokens, token_counter=words, strategy="last")
    fitting = [k for k in range(len(messages) + 1) if words.count_messages(messages[len(messages) - k :]) <= max_tokens]
    assert kept == messages[len(messages) - max(fitting) :]


def test_a_four_member_counter_fits_a_plan_and_a_session() -> None:
    words = WordCounter()
    messages = conversation()
    total = words.count_messages(messages)
    plan = ctxwin.fit(messages, counter=words, context_window=total // 2 + 100, reserve_output=100)
    assert plan.fits and plan.counter == "words"
    assert words.count_messages(plan.messages) <= plan.budget.max_input_tokens < total

    planner = Planner(counter=words, context_window=total // 2 + 100, reserve_output=100)
    session = planner.session()
    for turn in messages:
        session.add_messages([turn])
        planned = session.plan()
        assert planned.fits
        assert words.count_messages(planned.messages) <= planned.budget.max_input_tokens


def test_a_plugin_counter_with_four_members_is_registered_and_checked() -> None:
    def register_counters(register: Any) -> None:
        register("words", lambda arg: WordCounter())

    name = register_plugin(types.SimpleNamespace(register_counters=hookimpl(register_counters)), name="words-plugin")
    try:
        counter = get_counter("words")
        assert isinstance(counter, TokenCounter) and declared_overhead(counter) is None
        messages = conversation()[1:]
        assert trim_messages(messages, max_tokens=60, token_counter="words") == trim_messages(
            messages, max_tokens=60, token_counter=WordCounter())
        tool = ToolMessage("x y z", tool_call_id="c1")
        assert counter.count_message_batch([tool]) == [WordCounter().count_message(tool)]
    finally:
        unregister_plugin(name)


def _probes(tree: ast.AST) -> Iterator[tuple[ast.Call, str | None]]:
    """Every ``getattr``/``hasattr`` call, with the function it is in."""
    def walk(node: ast.AST, function: str | None) -> Iterator[tuple[ast.Call, str | None]]:
        for child in ast.iter_child_nodes(node):
            inside = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id in (
                    "getattr", "hasattr"):
                yield child, function
            yield from walk(child, inside)
    yield from walk(tree, None)


# The functions that read a counter's members by name, by design: the adapter (once, where a counter enters, and
# the counter's own extras, which no engine reads), what checks a plugin's factory returned a counter, and the label
# errors give any counting object.
ALLOWED = {("counters/_base.py", "__init__"), ("counters/_base.py", "__getattr__"),
           ("counters/_base.py", "missing_members"), ("counters/_base.py", "counter_label")}


def test_no_module_probes_a_counter_for_a_member() -> None:
    members = {"name", *REQUIRED_METHODS, *OPTIONAL_MEMBERS}
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        where, text = str(path.relative_to(ROOT)), path.read_text()
        if "counter" not in text.lower() or "attr(" not in text:  # nothing to find: not parsed
            continue
        for call, function in _probes(ast.parse(text, str(path))):
            if len(call.args) < 2 or (where, function) in ALLOWED:
                continue
            target, attr = ast.unparse(call.args[0]), call.args[1]
            named = isinstance(attr, ast.Constant) and attr.value in members
            counterish = "counter" in target.lower()
            if counterish and (named or not isinstance(attr, ast.Constant)):
                found.append(f"{where}:{call.lineno} {ast.unparse(call)}")
    assert found == []


def test_the_scan_finds_a_probe() -> None:
    tree = ast.parse("def f(counter):\n    return getattr(counter, 'count_texts', None)\n")
    assert [function for _, function in _probes(tree)] == ["f"]


def test_base_token_counter_subclasses_need_count_text_only() -> None:
    class Chars(BaseTokenCounter):
        name = "chars"

        def count_text(self, text: str) -> int:
            return len(text)

    counter = Chars()
    assert as_token_counter(counter) is counter
    assert declared_overhead(counter) == counter.reply_priming


def test_an_adapted_counter_keeps_its_counts_across_trim_calls() -> None:
    class Additive(WordCounter):
        additive = True
        request_overhead = 2
        calls = 0

        def count_message(self, message: BaseMessage) -> int:
            self.calls += 1
            return super().count_message(message)

    counter = Additive()
    messages = conversation()[1:]
    first = trim_messages(messages, max_tokens=10_000, token_counter=counter)
    counted = counter.calls
    assert first == messages and counted >= len(messages)
    assert trim_messages(messages, max_tokens=10_000, token_counter=counter) == messages
    assert counter.calls == counted  # wrapped anew by the second call, counted by the first
