"""Round-trip properties on generated conversations with tool calls, names, ids and list content."""

from __future__ import annotations

import json
import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.messages import (
    AIMessage,
    AIMessageChunk,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
    convert_to_openai_messages,
    messages_from_dict,
    messages_to_dict,
)

text = st.text(max_size=40)
ident = st.text(alphabet=string.ascii_letters + string.digits + "_-", min_size=1, max_size=12)
json_scalar = (
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=False, allow_infinity=False) | text
)
json_value = st.recursive(
    json_scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3), max_leaves=8
)
json_object = st.dictionaries(text, json_value, max_size=4)

text_part = st.builds(lambda t: {"type": "text", "text": t}, text)
image_part = st.builds(
    lambda u, d: {
        "type": "image_url",
        "image_url": {"url": f"https://example.com/{u}.png", **({"detail": d} if d else {})},
    },
    ident,
    st.sampled_from([None, "low", "high", "auto"]),
)
content = text | st.lists(text_part | image_part, min_size=1, max_size=3)


@st.composite
def arguments(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(["{broken", "", "[1]", "nul"]))
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (",  ", ":")]))
    return json.dumps(draw(json_object), separators=separators, ensure_ascii=draw(st.booleans()))


@st.composite
def openai_conversation(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if draw(st.booleans()):
        out.append({"role": draw(st.sampled_from(["system", "developer"])), "content": draw(text)})
    for _ in range(draw(st.integers(0, 4))):
        user: dict[str, Any] = {"role": "user", "content": draw(content)}
        if draw(st.booleans()):
            user["name"] = draw(ident)
        out.append(user)
        call_ids = draw(st.lists(ident, max_size=3, unique=True))
        assistant: dict[str, Any] = {
            "role": "assistant",
            "content": draw(text) if not call_ids else draw(st.just("") | text),
        }
        if call_ids:
            assistant["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": draw(ident), "arguments": draw(arguments())}}
                for cid in call_ids
            ]
        out.append(assistant)
        for cid in call_ids:
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": cid,
                    "content": draw(text | st.lists(text_part, min_size=1, max_size=2)),
                }
            )
    return out


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(openai_conversation())
def test_openai_dicts_round_trip(conversation: list[dict[str, Any]]) -> None:
    assert convert_to_openai_messages(convert_to_messages(conversation)) == conversation


tool_call = st.builds(
    lambda n, a, i: {"name": n, "args": a, "id": i, "type": "tool_call"}, ident, json_object, ident | st.none()
)
invalid_call = st.builds(
    lambda n, a, i, e: {"name": n, "args": a, "id": i, "error": e, "type": "invalid_tool_call"},
    ident | st.none(),
    text | st.none(),
    ident | st.none(),
    text | st.none(),
)
usage = st.builds(
    lambda i, o: {"input_tokens": i, "output_tokens": o, "total_tokens": i + o},
    st.integers(0, 10**6),
    st.integers(0, 10**6),
)
common = {
    "id": ident | st.none(),
    "name": ident | st.none(),
    "additional_kwargs": json_object,
    "response_metadata": json_object,
}
list_content = st.lists(text | text_part | image_part, max_size=3)
message_content = text | list_content

any_message = st.one_of(
    st.builds(HumanMessage, message_content, **common),
    st.builds(SystemMessage, message_content, **common),
    st.builds(ChatMessage, message_content, role=ident, **common),
    st.builds(
        AIMessage,
        message_content,
        tool_calls=st.lists(tool_call, max_size=2),
        invalid_tool_calls=st.lists(invalid_call, max_size=2),
        usage_metadata=usage | st.none(),
        **common,
    ),
    st.builds(AIMessageChunk, message_content, tool_calls=st.lists(tool_call, max_size=2), **common),
    st.builds(
        ToolMessage,
        message_content,
        tool_call_id=ident,
        artifact=json_value,
        status=st.sampled_from(["success", "error"]),
        **common,
    ),
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(any_message, max_size=6))
def test_messages_round_trip_through_json(messages: list[Any]) -> None:
    restored = messages_from_dict(json.loads(json.dumps(messages_to_dict(messages))))
    assert restored == messages
    assert [type(m) for m in restored] == [type(m) for m in messages]
