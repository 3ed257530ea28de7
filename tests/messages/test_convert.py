"""convert_to_messages / convert_to_openai_messages / serialization, including every malformed shape."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxwin.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
    convert_to_openai_messages,
    get_buffer_string,
    message_to_dict,
    messages_from_dict,
    messages_to_dict,
)


def test_every_input_shape() -> None:
    messages = convert_to_messages(
        [
            "plain string",
            ("system", "be brief"),
            ["assistant", "ok"],
            {"role": "developer", "content": "dev rules"},
            {"role": "user", "content": "hi", "name": "ann", "id": "u1"},
            {"type": "human", "content": "typed"},
            HumanMessage("already a message"),
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c", "content": "result"},
            {"role": "function", "name": "legacy", "content": "out"},
            {"role": "remove", "id": "u1", "content": ""},
        ]
    )
    assert messages[0] == HumanMessage("plain string")
    assert messages[1] == SystemMessage("be brief")
    assert messages[2] == AIMessage("ok")
    assert messages[3].additional_kwargs == {"__openai_role__": "developer"}
    assert messages[4] == HumanMessage("hi", name="ann", id="u1")
    assert messages[5] == HumanMessage("typed")
    assert messages[7].tool_calls == [{"name": "f", "args": {}, "id": "c", "type": "tool_call"}]  # type: ignore[attr-defined]
    assert messages[8] == ToolMessage("result", tool_call_id="c")
    assert messages[9] == ChatMessage("out", role="function", name="legacy")
    assert messages[10] == RemoveMessage(id="u1")


def test_messages_are_returned_not_copied() -> None:
    message = HumanMessage("x")
    assert convert_to_messages([message])[0] is message


def test_a_list_of_messages_comes_back_as_a_new_list_of_the_same_objects() -> None:
    messages: list[BaseMessage] = [HumanMessage("x"), AIMessage("y")]
    converted = convert_to_messages(messages)
    assert converted is not messages  # the caller's list is never shared, so never mutated through the result
    assert all(a is b for a, b in zip(converted, messages, strict=True))
    converted.append(HumanMessage("z"))
    assert len(messages) == 2


def test_single_items_are_wrapped() -> None:
    assert convert_to_messages("hi") == [HumanMessage("hi")]
    assert convert_to_messages({"role": "user", "content": "hi"}) == [HumanMessage("hi")]


def test_unknown_keys_go_to_additional_kwargs() -> None:
    [message] = convert_to_messages([{"role": "assistant", "content": "x", "refusal": None, "audio": {"id": "a"}}])
    assert message.additional_kwargs == {"refusal": None, "audio": {"id": "a"}}
    assert convert_to_openai_messages([message]) == [
        {"role": "assistant", "content": "x", "refusal": None, "audio": {"id": "a"}}
    ]


def test_anthropic_blocks() -> None:
    messages = convert_to_messages(
        [
            {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "checking"},
                    {"type": "tool_use", "id": "tu1", "name": "weather", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "tu2", "name": "time", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "tu1", "content": "sunny"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "tu2",
                        "content": [{"type": "text", "text": "noon"}],
                        "is_error": True,
                    },
                    {"type": "text", "text": "thanks"},
                ],
            },
        ]
    )
    assert [type(m).__name__ for m in messages] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "ToolMessage",
        "HumanMessage",
    ]
    ai = messages[1]
    assert isinstance(ai, AIMessage)
    assert ai.content == [{"type": "text", "text": "checking"}]
    assert [c["id"] for c in ai.tool_calls] == ["tu1", "tu2"]
    assert messages[2] == ToolMessage("sunny", tool_call_id="tu1")
    assert messages[3] == ToolMessage([{"type": "text", "text": "noon"}], tool_call_id="tu2", status="error")
    assert messages[4] == HumanMessage([{"type": "text", "text": "thanks"}])


class LangChainLikeMessage:
    """A stand-in with LangChain's duck-typed surface (model_dump + type + content), without importing langchain."""

    def __init__(self, **fields: Any) -> None:
        self._fields = fields
        self.type = fields["type"]
        self.content = fields["content"]

    def model_dump(self) -> dict[str, Any]:
        return dict(self._fields)


class AIMessageLike(LangChainLikeMessage):
    pass


def test_duck_typed_langchain_objects() -> None:
    obj = AIMessageLike(
        type="ai", content="hi", tool_calls=[{"name": "f", "args": {}, "id": "1", "type": "tool_call"}], id="m"
    )
    [message] = convert_to_messages([obj])
    assert message == AIMessage("hi", tool_calls=[{"name": "f", "args": {}, "id": "1"}], id="m")


def test_real_langchain_objects_convert_both_ways() -> None:
    lc = pytest.importorskip("langchain_core.messages")
    originals = [
        lc.SystemMessage("sys"),
        lc.HumanMessage("hi", name="ann", id="h1"),
        lc.AIMessage(
            "",
            tool_calls=[{"name": "f", "args": {"a": 1}, "id": "c1"}],
            usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        ),
        lc.ToolMessage("out", tool_call_id="c1", artifact={"raw": 1}),
        lc.ChatMessage("x", role="critic"),
        lc.AIMessageChunk("part", tool_call_chunks=[{"name": "g", "args": '{"b": 2}', "id": "c2", "index": 0}]),
    ]
    ours = convert_to_messages(originals)
    assert [m.type for m in ours] == [m.type for m in originals]
    for mine, theirs in zip(ours, originals, strict=True):
        assert mine.content == theirs.content and mine.id == theirs.id and mine.name == theirs.name
    assert ours[2].tool_calls == originals[2].tool_calls  # type: ignore[attr-defined]
    assert ours[5].tool_calls == originals[5].tool_calls  # type: ignore[attr-defined]
    assert ours[3].artifact == {"raw": 1}  # type: ignore[attr-defined]
    # And back: LangChain reads ctxwin's serialized form.
    back = lc.messages_from_dict(messages_to_dict(ours))
    assert [m.model_dump() for m in back] == [m.model_dump() for m in originals]


def test_openai_round_trip_keeps_argument_text_and_invalid_calls() -> None:
    conversation: list[dict[str, Any]] = [
        {"role": "developer", "content": "rules"},
        {
            "role": "user",
            "name": "ann",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
            ],
        },
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x":1,  "y":[1,2]}'}},
                {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{broken"}},
                {"id": "c", "type": "function", "function": {"name": "h", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "err"}]},
    ]
    messages = convert_to_messages(conversation)
    assert convert_to_openai_messages(messages) == conversation


def test_openai_output_after_edits_uses_current_arguments() -> None:
    [message] = convert_to_messages(
        [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x":1}'}}],
            }
        ]
    )
    assert isinstance(message, AIMessage)
    edited = message.model_copy(
        update={"tool_calls": [{"name": "f", "args": {"x": 2}, "id": "a", "type": "tool_call"}]}
    )
    out = convert_to_openai_messages(edited)
    assert json.loads(out["tool_calls"][0]["function"]["arguments"]) == {"x": 2}


def test_openai_output_formats() -> None:
    assert convert_to_openai_messages(HumanMessage("hi"), text_format="block") == {
        "role": "user",
        "content": [{"type": "text", "text": "hi"}],
    }
    assert convert_to_openai_messages(HumanMessage("hi", id="1"), include_id=True)["id"] == "1"
    image = HumanMessage([{"type": "image", "base64": "AAAA", "mime_type": "image/png"}])
    assert convert_to_openai_messages(image)["content"] == [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    ]
    reasoning = AIMessage([{"type": "reasoning", "reasoning": "hidden"}, {"type": "text", "text": "shown"}])
    assert convert_to_openai_messages(reasoning)["content"] == [{"type": "text", "text": "shown"}]
    with pytest.raises(ValueError, match="text_format"):
        convert_to_openai_messages([HumanMessage("x")], text_format="html")  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="RemoveMessage"):
        convert_to_openai_messages([RemoveMessage(id="1")])


def test_buffer_string() -> None:
    messages = [
        SystemMessage("s"),
        HumanMessage("h"),
        AIMessage("a", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "1"}]),
        ToolMessage("t", tool_call_id="1"),
        ChatMessage("c", role="critic"),
    ]
    text = get_buffer_string(messages)
    lines = text.split("\n")
    assert lines[0] == "System: s" and lines[1] == "Human: h"
    assert lines[2].startswith("AI: a[") and "'name': 'f'" in lines[2]
    assert lines[3:] == ["Tool: t", "critic: c"]
    xml = get_buffer_string(messages, format="xml")
    assert (
        '<tool_call id="1" name="f">{&quot;x&quot;: 1}</tool_call>' in xml
        or '<tool_call id="1" name="f">{"x": 1}</tool_call>' in xml
    )
    with pytest.raises(ValueError, match="format"):
        get_buffer_string(messages, format="json")  # type: ignore[arg-type]


def test_serialization_round_trip_and_allow_list() -> None:
    messages = [
        AIMessage(
            "x",
            tool_calls=[{"name": "f", "args": {}, "id": "1"}],
            usage_metadata={"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
        ),
        ToolMessage("y", tool_call_id="1", artifact={"k": [1]}, status="error"),
    ]
    assert messages_from_dict(json.loads(json.dumps(messages_to_dict(messages)))) == messages
    assert message_to_dict(messages[1])["type"] == "tool"
    with pytest.raises(ValueError, match=r"messages\[0\].*unexpected message type"):
        messages_from_dict([{"type": "os.system", "data": {"content": "rm -rf /"}}])
    with pytest.raises(ValueError, match=r"messages\[0\]"):
        messages_from_dict([{"type": "langchain_core.messages.HumanMessage", "data": {"content": "x"}}])
    with pytest.raises(ValueError, match=r"messages\[1\].*content"):
        messages_from_dict([message_to_dict(HumanMessage("ok")), {"type": "human", "data": {"content": 5}}])
    with pytest.raises(TypeError, match=r"messages\[0\]"):
        messages_from_dict(["not a dict"])  # type: ignore[list-item]


BAD_ITEMS: list[tuple[Any, type[Exception], str]] = [
    ({"content": "no role"}, ValueError, r"and 'content' keys: it has no 'role' \(keys \['content'\]\)"),
    ({"role": "user"}, ValueError, r"keys: this 'user' message has no 'content' \(keys \['role'\]\)$"),
    ({}, ValueError, r"keys: it has no 'role' \(no keys\)$"),
    ({"role": "assistant", "name": "a"}, ValueError, r"\(or 'tool_calls'\): this 'assistant' message has no 'content'"),
    ({"role": "wizard", "content": "x"}, ValueError, "unexpected message type: 'wizard'"),
    ({"role": 3, "content": "x"}, TypeError, "'role' must be a string"),
    ({"role": "user", "content": 42}, TypeError, "content must be a string"),
    ({"role": "user", "content": {"nested": {"deep": [1, {"x": None}]}}}, TypeError, "content must be a string"),
    ({"role": "user", "content": [[["deep"]]]}, TypeError, r"content\[0\] must be a string or a content block"),
    ({"role": "user", "content": [{"text": "no type"}]}, ValueError, r"content\[0\] must be a content block"),
    ({"role": "user", "content": "x", "name": 5}, ValueError, "name"),
    ({"role": "assistant", "content": "", "tool_calls": "nope"}, TypeError, "'tool_calls' must be a list"),
    ({"role": "assistant", "content": "", "tool_calls": [7]}, TypeError, r"tool_calls\[0\] must be a dict"),
    ({"role": "assistant", "content": "", "tool_calls": [{"id": "x"}]}, ValueError, r"tool_calls\[0\] needs"),
    (
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "str"}]},
        ValueError,
        "tool_use",
    ),
    ({"role": "tool", "content": "orphan"}, ValueError, "tool_call_id"),
    ({"role": "user", "content": [{"type": "tool_result", "content": "x"}]}, ValueError, "tool_use_id"),
    (12345, TypeError, "cannot convert int"),
    (None, TypeError, "cannot convert NoneType"),
    (("user",), TypeError, r"\(role, content\) pair"),
    ((1, "x"), TypeError, r"\(role, content\) pair"),
    # Found by fuzzing: these raised Python internals without the index.
    ({"type": {"a": 1}, "data": {}}, TypeError, "'role' must be a string, got dict"),  # was: unhashable type
    (("remove", ""), ValueError, "a remove message needs the 'id'"),  # was: __init__() missing 'id'
    ({"type": "remove", "data": {"content": ""}}, ValueError, "a remove message needs the 'id'"),
    ({"role": "developer", "content": "x", "additional_kwargs": None}, TypeError, "'additional_kwargs' must be a"),
    ({"role": "user", "content": "x", "x": 1, "additional_kwargs": [1]}, TypeError, "'additional_kwargs' must be"),
]


@pytest.mark.parametrize(("item", "kind", "pattern"), BAD_ITEMS)
def test_malformed_items_name_their_index(item: Any, kind: type[Exception], pattern: str) -> None:
    with pytest.raises(kind, match=r"^messages\[2\]: .*" + pattern):
        convert_to_messages(["ok", {"role": "user", "content": "fine"}, item])


def test_openai_conversion_names_the_message_without_a_form() -> None:
    with pytest.raises(ValueError, match=r"^messages\[1\]: RemoveMessage is an instruction"):
        convert_to_openai_messages([HumanMessage("hi"), RemoveMessage("m1")])


def test_broken_tool_call_json_is_not_an_exception() -> None:
    [message] = convert_to_messages(
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": "{,"}}],
            }
        ]
    )
    assert isinstance(message, AIMessage)
    assert message.tool_calls == [] and message.invalid_tool_calls[0]["args"] == "{,"


def test_inputs_are_not_mutated() -> None:
    raw = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        }
    ]
    snapshot = json.dumps(raw)
    convert_to_messages(raw)
    assert json.dumps(raw) == snapshot
