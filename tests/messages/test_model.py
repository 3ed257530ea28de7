"""The message classes: construction, equality, copies, text, content blocks, chunk merging."""

from __future__ import annotations

import uuid

import pytest
from pydantic import ValidationError

from ctxwin.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    ChatMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    ToolMessageChunk,
    create_image_block,
    create_text_block,
    default_tool_chunk_parser,
    default_tool_parser,
    message_chunk_to_message,
    parse_partial_json,
)


def test_positional_content_and_defaults() -> None:
    message = HumanMessage("hi")
    assert message.content == "hi"
    assert message.type == "human"
    assert message.additional_kwargs == {} and message.response_metadata == {}
    assert message.id is None and message.name is None
    assert isinstance(message, BaseMessage)


def test_equality_is_by_value_and_type() -> None:
    assert HumanMessage("hi", id="1") == HumanMessage(content="hi", id="1")
    assert HumanMessage("hi") != HumanMessage("hi", name="x")
    assert HumanMessage("hi") != SystemMessage("hi")
    assert HumanMessage("hi") != HumanMessageChunk("hi")


def test_model_copy_is_independent() -> None:
    original = AIMessage("a", additional_kwargs={"k": [1]}, tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c"}])
    copy = original.model_copy(update={"content": "b"}, deep=True)
    copy.additional_kwargs["k"].append(2)
    assert original.content == "a" and original.additional_kwargs == {"k": [1]}
    assert copy.content == "b" and copy.tool_calls == original.tool_calls


def test_id_is_coerced_to_str() -> None:
    value = uuid.uuid4()
    assert HumanMessage("x", id=value).id == str(value)
    assert HumanMessage("x", id=7).id == "7"


def test_text_property_is_also_callable() -> None:
    message = HumanMessage(["a", {"type": "text", "text": "b"}, {"type": "image_url", "image_url": {"url": "u"}}])
    assert message.text == "ab"
    assert message.text() == "ab"


def test_wrong_content_type_is_a_validation_error() -> None:
    with pytest.raises(ValidationError):
        HumanMessage(5)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        HumanMessage([1, 2])  # type: ignore[list-item]


def test_ai_message_normalises_tool_calls_and_parses_raw_openai_calls() -> None:
    message = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "1"}])
    assert message.tool_calls == [{"name": "f", "args": {}, "id": "1", "type": "tool_call"}]
    raw = [
        {"id": "a", "type": "function", "function": {"name": "ok", "arguments": '{"x": 1}'}},
        {"id": "b", "type": "function", "function": {"name": "bad", "arguments": "{not json"}},
    ]
    parsed = AIMessage("", additional_kwargs={"tool_calls": raw})
    assert parsed.tool_calls == [{"name": "ok", "args": {"x": 1}, "id": "a", "type": "tool_call"}]
    assert [c["name"] for c in parsed.invalid_tool_calls] == ["bad"]
    assert parsed.invalid_tool_calls[0]["args"] == "{not json"


@pytest.mark.parametrize(
    "arguments",
    ["{oops", "[1, 2]", "3", '"text"', "{'single': 'quotes'}", "\x00", "{" * 100_000],
)
def test_default_tool_parser_never_raises(arguments: str) -> None:
    valid, invalid = default_tool_parser([{"id": "x", "function": {"name": "f", "arguments": arguments}}])
    assert valid == []
    assert invalid[0]["args"] == arguments and invalid[0]["error"]


def test_default_tool_parser_handles_junk_entries() -> None:
    valid, invalid = default_tool_parser([None, 3, {"no": "function"}])  # type: ignore[list-item]
    assert valid == [] and len(invalid) == 3


def test_tool_message_coerces_content_and_id() -> None:
    message = ToolMessage({"a": 1}, tool_call_id=5)  # type: ignore[arg-type]
    assert message.content == "{'a': 1}" and message.tool_call_id == "5"
    assert ToolMessage(["x", 2], tool_call_id="t").content == ["x", "2"]  # type: ignore[list-item]
    with pytest.raises(ValidationError):
        ToolMessage("x")  # no tool_call_id


def test_remove_message_rejects_content() -> None:
    assert RemoveMessage(id="m1").id == "m1"
    with pytest.raises(ValueError, match="does not support 'content'"):
        RemoveMessage(id="m1", content="x")


def test_content_blocks_translate_provider_formats() -> None:
    message = HumanMessage(
        [
            "plain",
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "high"}},
            {"type": "image_url", "image_url": {"url": "https://e.com/a.png"}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "BBBB"}},
            {"type": "input_audio", "input_audio": {"data": "CCCC", "format": "wav"}},
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "weird", "x": 1},
        ]
    )
    assert message.content_blocks == [
        {"type": "text", "text": "plain"},
        {"type": "image", "base64": "AAAA", "mime_type": "image/png", "extras": {"detail": "high"}},
        {"type": "image", "url": "https://e.com/a.png"},
        {"type": "image", "base64": "BBBB", "mime_type": "image/jpeg"},
        {"type": "audio", "base64": "CCCC", "mime_type": "audio/wav"},
        {"type": "reasoning", "reasoning": "hmm", "extras": {"signature": "sig"}},
        {"type": "non_standard", "value": {"type": "weird", "x": 1}},
    ]


def test_ai_content_blocks_include_tool_calls_once() -> None:
    message = AIMessage("done", tool_calls=[{"name": "f", "args": {"q": 1}, "id": "c1"}])
    blocks = message.content_blocks
    assert blocks[0] == {"type": "text", "text": "done"}
    assert blocks[1] == {"type": "tool_call", "name": "f", "args": {"q": 1}, "id": "c1"}
    assert len(blocks) == 2


def test_block_factories_validate_sources() -> None:
    assert create_text_block("hi") == {"type": "text", "text": "hi"}
    assert create_image_block(url="https://x/y.png") == {"type": "image", "url": "https://x/y.png"}
    with pytest.raises(ValueError, match="one of"):
        create_image_block()
    with pytest.raises(ValueError, match="mime_type"):
        create_image_block(base64="AAAA")
    assert HumanMessage(content_blocks=[create_text_block("a")]).content == [{"type": "text", "text": "a"}]


def test_chunk_merging_streams_tool_calls_and_usage() -> None:
    pieces = [
        AIMessageChunk(
            "", id="run-123", tool_call_chunks=[{"name": "search", "args": '{"q": "ca', "id": "t1", "index": 0}]
        ),
        AIMessageChunk("", id="chatcmpl-9", tool_call_chunks=[{"name": None, "args": 'ts"}', "id": None, "index": 0}]),
        AIMessageChunk(
            "Hi",
            usage_metadata={"input_tokens": 3, "output_tokens": 2, "total_tokens": 5},
            response_metadata={"model": "m"},
        ),
        AIMessageChunk(
            " there",
            usage_metadata={"input_tokens": 0, "output_tokens": 1, "total_tokens": 1},
            chunk_position="last",
        ),
    ]
    merged = pieces[0] + pieces[1] + pieces[2] + pieces[3]
    assert merged == pieces[0] + pieces[1:]
    assert merged.content == "Hi there"
    assert merged.id == "chatcmpl-9"  # the provider's id wins over the run id
    assert merged.tool_calls == [{"name": "search", "args": {"q": "cats"}, "id": "t1", "type": "tool_call"}]
    assert merged.usage_metadata == {"input_tokens": 3, "output_tokens": 3, "total_tokens": 6}
    assert merged.chunk_position == "last"
    final = message_chunk_to_message(merged)
    assert type(final) is AIMessage
    assert final.tool_calls == merged.tool_calls and final.content == "Hi there"
    assert message_chunk_to_message(final) is final


def test_partial_tool_call_args_parse_leniently() -> None:
    chunk = AIMessageChunk("", tool_call_chunks=[{"name": "f", "args": '{"a": [1, 2', "id": "x", "index": 0}])
    assert chunk.tool_calls[0]["args"] == {"a": [1, 2]}
    broken = AIMessageChunk("", tool_call_chunks=[{"name": "f", "args": "}{", "id": "x", "index": 0}])
    assert broken.tool_calls == [] and broken.invalid_tool_calls[0]["args"] == "}{"


def test_parse_partial_json() -> None:
    assert parse_partial_json('{"a": "b') == {"a": "b"}
    assert parse_partial_json('[{"a": 1}, {"b": ') == [{"a": 1}, {}]
    assert parse_partial_json('{"a": 1]') is None


def test_default_tool_chunk_parser() -> None:
    chunks = default_tool_chunk_parser([{"id": "1", "index": 0, "function": {"name": "f", "arguments": '{"a'}}])
    assert chunks == [{"name": "f", "args": '{"a', "id": "1", "index": 0, "type": "tool_call_chunk"}]


def test_content_merging_strings_and_lists() -> None:
    a = AIMessageChunk([{"type": "text", "text": "a", "index": 0}])
    b = AIMessageChunk([{"type": "text", "text": "b", "index": 0}, {"type": "text", "text": "c", "index": 1}])
    assert (a + b).content == [{"type": "text", "text": "ab", "index": 0}, {"type": "text", "text": "c", "index": 1}]
    assert (HumanMessageChunk("x") + HumanMessageChunk("y")).content == "xy"
    assert (HumanMessageChunk(["x"]) + HumanMessageChunk("y")).content == ["xy"]


def test_chunk_addition_checks_compatibility() -> None:
    with pytest.raises(ValueError, match="different roles"):
        ChatMessageChunk("a", role="x") + ChatMessageChunk("b", role="y")
    with pytest.raises(ValueError, match="different names"):
        ToolMessageChunk("a", tool_call_id="1") + ToolMessageChunk("b", tool_call_id="2")
    with pytest.raises(TypeError, match="unsupported operand"):
        HumanMessageChunk("a") + "b"
    merged = ToolMessageChunk("a", tool_call_id="1", artifact=[1]) + ToolMessageChunk(
        "b", tool_call_id="1", artifact=[2], status="error"
    )
    assert merged.content == "ab" and merged.artifact == [1, 2] and merged.status == "error"


def test_chunks_never_mutate_their_inputs() -> None:
    a = AIMessageChunk(["x"], additional_kwargs={"k": "1"})
    b = AIMessageChunk(["y"], additional_kwargs={"k": "2"})
    before = (a.model_dump(), b.model_dump())
    _ = a + b
    assert (a.model_dump(), b.model_dump()) == before


def test_chat_message_and_pretty_repr() -> None:
    message = ChatMessage("hello", role="critic", name="bob")
    text = message.pretty_repr()
    assert text.splitlines()[0].strip("=").strip() == "Chat Message"
    assert len(text.splitlines()[0]) == 80
    assert "Name: bob" in text and text.endswith("hello")
