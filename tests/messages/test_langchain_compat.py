"""Differential checks against langchain_core: same inputs, same messages, same merges, same strings."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxwin.messages as ours

lc = pytest.importorskip("langchain_core.messages")
lc_utils = pytest.importorskip("langchain_core.messages.utils")
lc_base = pytest.importorskip("langchain_core.messages.base")

text = st.text(max_size=30)
ident = st.text(alphabet="abcdefgh123_", min_size=1, max_size=8)
json_object = st.dictionaries(text, st.none() | st.integers() | text | st.lists(st.integers(), max_size=3), max_size=3)


@st.composite
def openai_conversation(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": draw(text)}]
    for _ in range(draw(st.integers(1, 3))):
        out.append({"role": "user", "content": draw(text), **({"name": draw(ident)} if draw(st.booleans()) else {})})
        ids = draw(st.lists(ident, max_size=2, unique=True))
        calls = [
            {"id": i, "type": "function", "function": {"name": draw(ident), "arguments": json.dumps(draw(json_object))}}
            for i in ids
        ]
        out.append({"role": "assistant", "content": draw(text), **({"tool_calls": calls} if calls else {})})
        out.extend({"role": "tool", "tool_call_id": i, "content": draw(text)} for i in ids)
    return out


def _dump(messages: list[Any]) -> list[dict[str, Any]]:
    return [m.model_dump() for m in messages]


@settings(max_examples=100, deadline=None)
@given(openai_conversation())
def test_convert_to_messages_matches_langchain(conversation: list[dict[str, Any]]) -> None:
    mine = ours.convert_to_messages(conversation)
    theirs = lc_utils.convert_to_messages(conversation)
    assert _dump(mine) == _dump(theirs)
    # A switched import keeps equality assertions working: the same constructor calls give equal messages.
    assert ours.get_buffer_string(mine) == lc_utils.get_buffer_string(theirs)
    # Same dicts, except that ctxwin returns tool-call argument text exactly as received (LangChain re-dumps it).
    assert _normalised(ours.convert_to_openai_messages(mine)) == _normalised(
        lc_utils.convert_to_openai_messages(theirs)
    )


def _normalised(dicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for d in dicts:
        d = dict(d)
        if "tool_calls" in d:
            d["tool_calls"] = [
                {**c, "function": {**c["function"], "arguments": json.loads(c["function"]["arguments"])}}
                for c in d["tool_calls"]
            ]
        out.append(d)
    return out


def test_constructors_and_fields_match() -> None:
    pairs = [
        (ours.HumanMessage("hi", name="a", id="1"), lc.HumanMessage("hi", name="a", id="1")),
        (
            ours.SystemMessage(["x", {"type": "text", "text": "y"}]),
            lc.SystemMessage(["x", {"type": "text", "text": "y"}]),
        ),
        (
            ours.AIMessage("", tool_calls=[{"name": "f", "args": {"a": 1}, "id": "c"}]),
            lc.AIMessage("", tool_calls=[{"name": "f", "args": {"a": 1}, "id": "c"}]),
        ),
        (ours.ToolMessage(5, tool_call_id=1), lc.ToolMessage(5, tool_call_id=1)),
        (ours.ChatMessage("x", role="r"), lc.ChatMessage("x", role="r")),
        (ours.RemoveMessage(id="z"), lc.RemoveMessage(id="z")),
    ]
    for mine, theirs in pairs:
        assert mine.model_dump() == theirs.model_dump()
        assert mine.text == theirs.text
        assert mine.pretty_repr() == theirs.pretty_repr()


def _stream(module: Any) -> Any:
    chunks = [
        module.AIMessageChunk("", id="run-1", tool_call_chunks=[{"name": "f", "args": '{"a"', "id": "t", "index": 0}]),
        module.AIMessageChunk("Hel", tool_call_chunks=[{"name": None, "args": ": 1}", "id": None, "index": 0}]),
        module.AIMessageChunk(
            "lo",
            tool_call_chunks=[{"name": "g", "args": "{}", "id": "u", "index": 1}],
            usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
            response_metadata={"model_name": "m", "finish_reason": "tool_calls"},
            additional_kwargs={"k": "v"},
        ),
    ]
    merged = chunks[0] + chunks[1] + chunks[2]
    return merged, module.message_chunk_to_message(merged) if hasattr(module, "message_chunk_to_message") else None


def test_chunk_merging_matches_langchain() -> None:
    mine, mine_final = _stream(ours)
    theirs, _ = _stream(lc)
    theirs_final = lc_utils.message_chunk_to_message(theirs)
    assert mine.content == theirs.content
    assert mine.tool_calls == theirs.tool_calls
    assert mine.tool_call_chunks == theirs.tool_call_chunks
    assert mine.usage_metadata == theirs.usage_metadata
    assert mine.response_metadata == theirs.response_metadata
    assert mine.additional_kwargs == theirs.additional_kwargs
    assert mine_final.tool_calls == theirs_final.tool_calls and mine_final.content == theirs_final.content


def test_serialized_form_is_interchangeable() -> None:
    theirs = [
        lc.HumanMessage("a", id="1"),
        lc.AIMessage("b", tool_calls=[{"name": "f", "args": {}, "id": "c"}]),
        lc.ToolMessage("r", tool_call_id="c"),
    ]
    mine = ours.messages_from_dict(lc_base.messages_to_dict(theirs))
    assert _dump(mine) == _dump(theirs)
    assert _dump(lc_utils.messages_from_dict(ours.messages_to_dict(mine))) == _dump(theirs)
    assert ours.messages_to_dict(mine) == lc_base.messages_to_dict(theirs)
