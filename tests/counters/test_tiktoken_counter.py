"""TiktokenCounter: OpenAI's published chat and tool framing, and parallel batch counting."""

from __future__ import annotations

import sysconfig
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters import get_counter
from ctxwin.counters._families.openai_tools import GPT4_TOOL_OVERHEADS, tool_definition_lines
from ctxwin.counters._families.tiktoken_counter import PARALLEL_MIN_CHARS, TiktokenCounter, load_encoding
from ctxwin.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, convert_to_messages

from .conftest import COOKBOOK_MESSAGES, WEATHER_MESSAGES, WEATHER_TOOLS


@pytest.fixture(scope="module")
def o200k() -> TiktokenCounter:
    return TiktokenCounter("o200k_base")


# Prompt tokens the OpenAI API reported for these requests, as published in the cookbook.
@pytest.mark.parametrize(("model", "expected"), [
    ("gpt-3.5-turbo", 129), ("gpt-4-0613", 129), ("gpt-4", 129), ("gpt-4o", 124), ("gpt-4o-mini", 124),
])
def test_cookbook_conversation(model: str, expected: int) -> None:
    assert get_counter(model).count_messages(convert_to_messages(COOKBOOK_MESSAGES)) == expected


@pytest.mark.parametrize(("model", "expected"), [
    ("gpt-3.5-turbo", 105), ("gpt-4", 105), ("gpt-4o", 101), ("gpt-4o-mini", 101),
])
def test_cookbook_tools(model: str, expected: int) -> None:
    counter = get_counter(model)
    assert counter.count_messages(convert_to_messages(WEATHER_MESSAGES), tools=WEATHER_TOOLS) == expected


def test_tool_definition_method_step_by_step() -> None:
    texts, fixed = tool_definition_lines(WEATHER_TOOLS, GPT4_TOOL_OVERHEADS)
    # one function (10), properties (3), two keys (3 + 3), an enum (-3) with two items (3 + 3), closing (12)
    assert fixed == 10 + 3 + 3 + 3 - 3 + 3 + 3 + 12
    assert texts == [
        "get_current_weather:Get the current weather in a given location",
        "location:string:The city and state, e.g. San Francisco, CA",
        "celsius", "fahrenheit",
        "unit:string:The unit of temperature to return",
    ]


def test_one_trailing_period_is_dropped() -> None:
    tool = {"name": "f", "description": "Does it..", "parameters": {"properties": {"x": {"type": "integer"}}}}
    texts, _ = tool_definition_lines([tool], GPT4_TOOL_OVERHEADS)
    assert texts == ["f:Does it.", "x:integer:"]


@pytest.mark.parametrize(("tools", "error", "match"), [
    (["get_weather"], TypeError, r"tools\[0\]: expected a dict"),
    ([{"type": "function", "function": {"description": "no name"}}], ValueError, r"tools\[0\].*'name'"),
    ([{"name": "f", "parameters": {"properties": ["x"]}}], ValueError, "must be an object"),
])
def test_bad_tool_definitions(o200k: TiktokenCounter, tools: list[Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        o200k.count_messages([HumanMessage("hi")], tools=tools)


def test_framing_per_message(o200k: TiktokenCounter) -> None:
    enc = load_encoding("o200k_base")
    plain = HumanMessage("how are you?")
    named = HumanMessage("how are you?", name="li_wei")
    assert o200k.count_message(plain) == 3 + len(enc.encode("user")) + len(enc.encode("how are you?"))
    assert o200k.count_message(named) == o200k.count_message(plain) + len(enc.encode("li_wei")) + 1
    assert o200k.count_messages([plain, named]) == o200k.count_message(plain) + o200k.count_message(named) + 3


def test_tool_calls_and_results_are_counted(o200k: TiktokenCounter) -> None:
    call = AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}])
    result = ToolMessage("sunny, 21 °C", tool_call_id="call_1")
    assert o200k.count_message(call) > o200k.count_message(AIMessage(""))
    assert o200k.count_message(result) > o200k.count_message(ToolMessage("sunny, 21 °C", tool_call_id=""))


def test_empty_request_costs_nothing(o200k: TiktokenCounter) -> None:
    assert o200k.count_messages([]) == 0
    assert o200k.count_messages([], tools=WEATHER_TOOLS) == 3 + o200k.count_tools(WEATHER_TOOLS)


def test_special_token_text_counts_as_text(o200k: TiktokenCounter) -> None:
    assert o200k.count_text("<|endoftext|>") == len(load_encoding("o200k_base").encode_ordinary("<|endoftext|>"))
    assert o200k.count_text("<|endoftext|>") > 1


MESSAGES = st.lists(
    st.builds(lambda kind, text, name: [HumanMessage, AIMessage, SystemMessage][kind](text, name=name),
              st.integers(0, 2), st.text(max_size=60), st.none() | st.from_regex(r"[a-z_]{1,8}", fullmatch=True)),
    max_size=8,
)


# Any characters, and lone surrogates (from JSON "\ud800" escapes), which the engines refuse.
WITH_SURROGATES = st.characters() | st.sampled_from("\ud800\udfff\ud83d")


@settings(max_examples=60, deadline=None)
@given(messages=MESSAGES)
def test_count_messages_is_sum_plus_request_overhead(o200k: TiktokenCounter, messages: list[Any]) -> None:
    per_message = o200k.count_message_batch(messages)
    assert per_message == [o200k.count_message(m) for m in messages]
    expected = sum(per_message) + 3 if messages else 0
    assert o200k.count_messages(messages) == expected


def _stdlib_texts() -> list[str]:
    files = sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))[:40]
    text = "".join(f.read_text(encoding="utf-8", errors="replace") for f in files)
    return [text[i:i + 300] for i in range(0, len(text), 300)]


def test_parallel_batches_count_exactly_as_a_loop(o200k: TiktokenCounter) -> None:
    texts = [*_stdlib_texts(), "", "中文测试，" * 500, "x" * 50000]
    assert sum(map(len, texts)) > 10 * PARALLEL_MIN_CHARS
    assert o200k.count_texts(texts) == [o200k.count_text(t) for t in texts]


@settings(max_examples=40, deadline=None)
@given(texts=st.lists(st.text(max_size=3000), max_size=30))
def test_count_texts_matches_count_text(o200k: TiktokenCounter, texts: list[str]) -> None:
    assert o200k.count_texts(texts) == [o200k.count_text(t) for t in texts]


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(st.text(alphabet=WITH_SURROGATES, max_size=60), max_size=8))
def test_counts_are_encode_ordinary_including_surrogates(o200k: TiktokenCounter, texts: list[str]) -> None:
    """count_text calls tiktoken's Rust encoder directly; text it refuses (lone surrogates) still counts as
    encode_ordinary repairs it, alone and inside a batch."""
    expected = [len(o200k.encoding.encode_ordinary(t)) for t in texts]
    assert [o200k.count_text(t) for t in texts] == expected
    assert o200k.count_texts(texts) == expected
