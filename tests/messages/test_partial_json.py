"""parse_partial_json: LangChain's results, in linear time."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.utils.json import parse_partial_json as langchain_parse_partial_json

from ctxwin.messages import AIMessageChunk, parse_partial_json, tool_call_chunk

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@st.composite
def partial_documents(draw: st.DrawFn) -> str:
    """A JSON document cut anywhere, sometimes with one character inserted (mismatched brackets, dangling
    escapes, stray quotes and separators)."""
    text = json.dumps(draw(json_values), indent=draw(st.sampled_from([None, 1])), ensure_ascii=draw(st.booleans()))
    text = text[: draw(st.integers(0, len(text)))]
    if text and draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(list('[]{}",:\\ x1e-\n\t'))) + text[at:]
    return text


def outcome(parse: Any, text: str, strict: bool) -> tuple[str, Any]:
    try:
        return "value", json.dumps(parse(text, strict=strict), sort_keys=True)  # NaN-safe comparison
    except json.JSONDecodeError:
        return "no JSON", None


@settings(max_examples=200, deadline=None)
@given(partial_documents(), st.booleans())
def test_same_result_as_langchain(text: str, strict: bool) -> None:
    assert outcome(parse_partial_json, text, strict) == outcome(langchain_parse_partial_json, text, strict)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": "b', {"a": "b"}),
        ('[{"a": 1}, {"b": ', [{"a": 1}, {}]),
        ('{"a": 1]', None),
        ('{"a": [1, 2.5e', {"a": [1, 2.5]}),
        ('{"a": tru', {}),
        ('{"a": "x\\', {"a": "x"}),  # a dangling backslash is dropped
        ('{"a": "line\nbreak', {"a": "line\nbreak"}),  # a raw newline inside a string is escaped
        ('{"a": "\\u12', {}),  # half an escape cannot be closed: the whole string goes
        ("[1] [", [1]),
        ('{"k": 1} x', {"k": 1}),
    ],
)
def test_repairs(text: str, expected: Any) -> None:
    assert parse_partial_json(text) == expected == langchain_parse_partial_json(text)


@pytest.mark.parametrize("text", ["", "x", "\ufeff{}", "   "])
def test_no_json_at_all_raises_json_error(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        parse_partial_json(text)


@pytest.mark.parametrize(
    "text",
    [
        "{" + "x" * 1_000_000,  # nothing parses: LangChain retries once per character
        '{"a": [' + "1, " * 60_000 + '"b": ',  # only a prefix far back parses
        '{"k": "' + "y" * 1_000_000 + "\\u1",  # the longest candidate ends inside a broken escape
    ],
)
def test_linear_time_on_megabytes(text: str) -> None:
    """The fuzzing finding: 48 KB of streamed arguments took 39 s (one json.loads per dropped character). These
    inputs are 20 times larger; a quadratic parse would take hours."""
    with contextlib.suppress(json.JSONDecodeError):
        parse_partial_json(text)


def test_streamed_tool_call_chunks_of_a_megabyte() -> None:
    args = '{"path": "a.txt", "lines": [' + "1, " * 200_000 + '"x'
    chunk = AIMessageChunk("", tool_call_chunks=[tool_call_chunk(name="read", args=args, id="c", index=0)])
    assert chunk.tool_calls[0]["args"] == {"path": "a.txt", "lines": [1] * 200_000 + ["x"]}
