"""Fuzzing the histories: random add/clear/reopen sequences of random messages, checked against a plain list.

Messages carry lone surrogates, odd dict keys (ints, None, floats, booleans), nesting up to 100 levels and tool calls
whose ids collide, so results are sometimes orphans. After every step: each store reads back exactly what the list
holds (a batch JSON cannot store unchanged is refused whole, with a ValueError, and nothing of it is kept), and a
WindowedHistory over the store opens on a start_on message and holds no tool result without its call.

``CTXWIN_FUZZ_EXAMPLES=2000 pytest tests/history/test_fuzz.py`` is the longer run to do before a release; the
default keeps these tests to a few seconds.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxwin.history._base import BaseChatMessageHistory
from ctxwin.history._jsonl import FileChatMessageHistory
from ctxwin.history._memory import InMemoryChatMessageHistory
from ctxwin.history._sqlite import SQLiteChatMessageHistory
from ctxwin.history._windowed import WindowedHistory
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

EXAMPLES = int(os.environ.get("CTXWIN_FUZZ_EXAMPLES") or 40)
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

text = st.lists(
    st.one_of(st.text(max_size=6), st.sampled_from(["\ud800", "\udfff", "\ud83d\ude00", "é世", "\x00", "\n"])),
    max_size=4,
).map("".join)
odd_key = st.one_of(st.integers(-3, 3), st.none(), st.booleans(), st.sampled_from([0.5, -1.0]))
key = st.one_of(text, text, text, odd_key)
scalar = st.one_of(st.none(), st.booleans(), st.integers(-(2**64), 2**64), st.floats(allow_nan=False,
                   allow_infinity=False), text)


def nested(levels: int) -> Any:
    value: Any = "deep"
    for level in range(levels):
        value = {"k": value} if level % 2 else [value]
    return value


json_like = st.one_of(
    st.recursive(scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(key, inner, max_size=3),
                 max_leaves=12),
    st.integers(0, 97).map(nested),  # inside tool-call args (tool_calls[i]['args'] is level 3): at most 100
)
string_keyed = st.dictionaries(text, json_like, max_size=2)
call_id = st.sampled_from(["c1", "c2", "c3"])


@st.composite
def message(draw: st.DrawFn) -> BaseMessage:
    kind = draw(st.sampled_from(["human", "ai", "tool_call", "tool", "system"]))
    content = draw(text)
    extra = {"additional_kwargs": draw(string_keyed)}
    if kind == "human":
        return HumanMessage(content, id=draw(st.none() | text), **extra)
    if kind == "ai":
        return AIMessage(content, response_metadata=draw(string_keyed), **extra)
    if kind == "tool_call":
        calls = draw(st.lists(st.fixed_dictionaries({"name": text, "args": string_keyed, "id": call_id}), max_size=2))
        return AIMessage(content, tool_calls=calls, **extra)
    if kind == "tool":
        return ToolMessage(content, tool_call_id=draw(call_id), artifact=draw(json_like), **extra)
    return SystemMessage(content, **extra)


operation = st.one_of(
    st.tuples(st.just("add"), st.lists(message(), max_size=4)),
    st.tuples(st.just("clear"), st.just([])),
    st.tuples(st.just("reopen"), st.just([])),
)


def json_safe(value: Any) -> bool:
    """The test's own oracle: every dict key is a string, and no string holds a surrogate pair (two code points)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and json_safe(k) and json_safe(v) for k, v in value.items())
    if isinstance(value, list):
        return all(json_safe(v) for v in value)
    return not isinstance(value, str) or re.search("[\ud800-\udbff][\udc00-\udfff]", value) is None


def storable(message: BaseMessage) -> bool:
    return json_safe(message.model_dump())


def open_store(kind: str, directory: Path) -> BaseChatMessageHistory:
    if kind == "jsonl":
        return FileChatMessageHistory(directory / "chat.jsonl")
    return SQLiteChatMessageHistory(directory / "chat.db", "fuzz", synchronous="NORMAL")


def characters(messages: list[BaseMessage]) -> int:
    """A token counter for the budget window that any text can go through: one token per character of content."""
    return sum(len(m.text) + 1 for m in messages)


def check_window(store: BaseChatMessageHistory, limit: int, start_on: str | tuple[str, ...] | None) -> None:
    by_count = WindowedHistory(store, max_messages=limit, start_on=start_on).messages
    assert len(by_count) <= limit
    check_window_shape(by_count, start_on)
    by_tokens = WindowedHistory(store, max_tokens=4 * limit, counter=characters, start_on=start_on).messages
    assert characters(by_tokens) <= 4 * limit or (len(by_tokens) == 1 and isinstance(by_tokens[0], SystemMessage))
    check_window_shape(by_tokens, start_on)


def check_window_shape(window: list[BaseMessage], start_on: str | tuple[str, ...] | None) -> None:
    body = window[1:] if window and isinstance(window[0], SystemMessage) else window
    allowed = (start_on,) if isinstance(start_on, str) else start_on
    assert not body or allowed is None or body[0].type in allowed
    calls: set[str] = set()
    for item in body:
        if isinstance(item, AIMessage):
            calls.update(call["id"] for call in item.tool_calls)
        assert not isinstance(item, ToolMessage) or item.tool_call_id in calls, "orphan tool result"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["memory", "jsonl", "sqlite"])
@FUZZ
@given(
    operations=st.lists(operation, min_size=1, max_size=6),
    limit=st.integers(1, 8),
    start_on=st.sampled_from(["human", ("human", "ai"), None]),
)
def test_reading_back_equals_what_was_added(
    kind: str, operations: list[tuple[str, list[BaseMessage]]], limit: int, start_on: str | tuple[str, ...] | None
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        store = InMemoryChatMessageHistory() if kind == "memory" else open_store(kind, directory)
        expected: list[BaseMessage] = []
        try:
            for op, batch in operations:
                if op == "add":
                    if kind == "memory" or all(storable(m) for m in batch):
                        store.add_messages(batch)
                        expected += batch
                    else:
                        with pytest.raises(ValueError, match=r"^messages\[\d+\]: .*(has the key|surrogates)"):
                            store.add_messages(batch)
                elif op == "clear":
                    store.clear()
                    expected = []
                elif kind != "memory":
                    if isinstance(store, SQLiteChatMessageHistory):
                        store.close()
                    store = open_store(kind, directory)
                assert store.messages == expected
                check_window(store, limit, start_on)
        finally:
            if isinstance(store, SQLiteChatMessageHistory):
                store.close()
