"""The nesting limit: deep data is refused once, when a message is built, with a one-line error; tool-call
arguments nested too deep become an InvalidToolCall; nothing raises RecursionError anywhere later."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from ctxwin.counters._approximate.counter import ApproximateCounter
from ctxwin.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    ToolMessage,
    convert_to_messages,
    convert_to_openai_messages,
    messages_from_dict,
    parse_partial_json,
    tool_call_chunk,
)
from ctxwin.messages._limits import (
    MAX_NESTING_DEPTH,
    MAX_TOOL_ARGS_DEPTH,
    NestingError,
    json_too_deep,
    nesting_depth,
)
from ctxwin.trim import merge_message_runs, trim_messages


def nested(depth: int, leaf: Any = "x") -> Any:
    """``depth`` levels of alternating dicts and lists around ``leaf``, a dict outermost."""
    value = leaf
    for level in range(depth):
        value = {"k": value} if (depth - level) % 2 else [value]
    return value


def openai_call(arguments: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}],
    }


@pytest.mark.slow
def test_nesting_depth_counts_levels_without_recursion() -> None:
    assert nesting_depth(["text", None, 3]) == 0
    assert nesting_depth([{}, []]) == 1
    assert nesting_depth([[{"a": [1]}]]) == 3
    assert nesting_depth([nested(100_000)]) == MAX_NESTING_DEPTH + 1  # stops one level past the limit
    loop: list[Any] = []
    loop += [loop, loop]  # shared and self-containing: visited once per level, so no blow-up
    assert nesting_depth([loop]) == MAX_NESTING_DEPTH + 1


def test_json_too_deep_skips_strings() -> None:
    assert not json_too_deep(json.dumps(nested(MAX_NESTING_DEPTH)))
    assert json_too_deep(json.dumps(nested(MAX_NESTING_DEPTH + 1)))
    assert json_too_deep("[" * 3000)
    assert not json_too_deep(json.dumps({"text": "[" * 3000}))  # brackets inside a string do not nest
    assert not json_too_deep('"\\"' + "[" * 3000)  # an unterminated string holds the rest


def test_tool_call_arguments_of_3kb_of_brackets_become_an_invalid_call() -> None:
    """The fuzzing finding: a model stuck in a loop emits '[' thousands of times; json.loads recursed."""
    text = "[" * 3000
    (message,) = convert_to_messages([openai_call(text)])
    assert isinstance(message, AIMessage) and not message.tool_calls
    (invalid,) = message.invalid_tool_calls
    assert invalid["args"] == text and f"nested deeper than {MAX_TOOL_ARGS_DEPTH} levels" in (invalid["error"] or "")
    assert convert_to_openai_messages([message]) == [openai_call(text)]  # nothing the model said is lost


@pytest.mark.parametrize(
    "arguments",
    [
        "[" * 100_000,
        json.dumps(nested(MAX_TOOL_ARGS_DEPTH + 1)),
        '{"a": ' + "1" * 5000 + "}",  # past Python's integer digit limit: a ValueError, not a JSONDecodeError
    ],
)
def test_arguments_json_cannot_raise(arguments: str) -> None:
    (message,) = convert_to_messages([openai_call(arguments)])
    assert isinstance(message, AIMessage) and message.invalid_tool_calls[0]["args"] == arguments


def test_arguments_at_the_limit_are_parsed() -> None:
    args = nested(MAX_TOOL_ARGS_DEPTH)
    (message,) = convert_to_messages([openai_call(json.dumps(args))])
    assert isinstance(message, AIMessage) and message.tool_calls[0]["args"] == args


def test_streamed_arguments_nested_too_deep_become_an_invalid_call() -> None:
    chunk = AIMessageChunk("", tool_call_chunks=[tool_call_chunk(name="f", args="[" * 5000, id="c", index=0)])
    assert not chunk.tool_calls and chunk.invalid_tool_calls[0]["args"] == "[" * 5000
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_NESTING_DEPTH} levels"):
        parse_partial_json("[" * 5000)


@pytest.mark.parametrize("field", ["content", "additional_kwargs", "response_metadata", "artifact", "extra"])
def test_deep_fields_are_refused_with_one_line(field: str) -> None:
    deep = nested(MAX_NESTING_DEPTH + 1)
    item: dict[str, Any] = {"role": "tool", "tool_call_id": "c", "content": "x"}
    if field == "content":
        item["content"] = [{"type": "text", "text": "x", "deep": nested(MAX_NESTING_DEPTH)}]
    elif field == "extra":
        item["meta"] = deep  # an unknown key goes into additional_kwargs
    else:
        item[field] = deep
    where = "additional_kwargs" if field == "extra" else field
    error = rf"^messages\[1\]: nested deeper than 100 levels \(in '{where}'\)$"
    with pytest.raises(ValueError, match=error):
        convert_to_messages(["hi", item])
    with pytest.raises(ValueError, match=error):
        trim_messages(["hi", item], max_tokens=100, token_counter=len)
    stored_as = "meta" if field == "extra" else field  # a stored message keeps unknown keys as its own fields
    with pytest.raises(ValueError, match=error.replace(where, stored_as)):
        messages_from_dict([{"type": "human", "data": {"content": "hi"}}, {"type": "tool", "data": item}])
    with pytest.raises(NestingError, match="nested deeper than 100 levels"):
        ToolMessage("x", tool_call_id="c", artifact=deep)


def test_every_depth_up_to_the_limit_works_everywhere() -> None:
    """At the limit, every operation that recurses (cache keys and copies, JSON, merging, counting, deep copies
    of partial messages) stays within the interpreter's stack, however deep the caller already is."""
    deep = nested(MAX_NESTING_DEPTH - 2)  # inside additional_kwargs and a content block, two levels are used
    messages = [
        HumanMessage([{"type": "text", "text": "a line\n" * 50, "deep": deep}], additional_kwargs={"deep": deep}),
        AIMessage("ok", tool_calls=[{"name": "f", "args": {"deep": nested(MAX_NESTING_DEPTH - 4)}, "id": "c"}]),
        ToolMessage("done", tool_call_id="c", artifact=deep),
    ]
    counter = ApproximateCounter()

    def everything() -> None:
        for _ in range(2):  # the second trim recalls counts by identity and compares deep copies
            assert trim_messages(messages, max_tokens=10_000, token_counter=counter) == messages
        half = counter.count_message(messages[0]) // 2
        (partial,) = trim_messages(
            messages, max_tokens=half, token_counter=counter, allow_partial=True, strategy="first"
        )
        assert partial.additional_kwargs == {"deep": deep} and partial.text.startswith("a line\n")
        assert len(merge_message_runs([*messages[:1], *messages[:1]])) == 1
        assert messages_from_dict(json.loads(json.dumps([{"type": m.type, "data": m.model_dump()} for m in messages])))
        convert_to_openai_messages(messages)
        counter.count_messages(messages)

    depth_now = len(__import__("inspect").stack())
    headroom = sys.getrecursionlimit() - depth_now

    def at_depth(levels: int) -> None:
        if levels:
            at_depth(levels - 1)
        else:
            everything()

    at_depth(max(0, headroom - 600))  # a caller already 400 frames deep still has room for everything above
