"""LangChain's own ``merge_message_runs`` and ``filter_messages`` tests, run through ctxwin with LangChain
messages: LangChain's expected results, as LangChain objects (the caller's own where unchanged).

Upstream: ``libs/core/tests/unit_tests/messages/test_utils.py`` (commit in ``upstream_support``); each test names
the one it ports.
"""

from __future__ import annotations

from typing import Any

import pytest
from upstream_support import assert_langchain_out, deep_copies

import ctxwin

lc = pytest.importorskip("langchain_core.messages")

MESSAGE_CLASSES = [lc.HumanMessage, lc.AIMessage, lc.SystemMessage]


@pytest.mark.parametrize(
    ("upstream", "kwargs", "joined"),
    [
        ("test_merge_message_runs_str", {}, "foo\nbar\nbaz"),
        ("test_merge_message_runs_str_with_specified_separator", {"chunk_separator": "<sep>"}, "foo<sep>bar<sep>baz"),
        ("test_merge_message_runs_str_without_separator", {"chunk_separator": ""}, "foobarbaz"),
    ],
)
@pytest.mark.parametrize("msg_cls", MESSAGE_CLASSES)
def test_merge_message_runs_str(upstream: str, kwargs: dict[str, Any], joined: str, msg_cls: type) -> None:
    messages = [msg_cls("foo"), msg_cls("bar"), msg_cls("baz")]
    messages_model_copy = deep_copies(messages)
    expected = [msg_cls(joined)]
    actual = ctxwin.merge_message_runs(messages, **kwargs)
    assert actual == expected
    assert messages == messages_model_copy
    assert_langchain_out(actual, messages, expected)


def test_merge_message_runs_response_metadata() -> None:
    messages = [
        lc.AIMessage("foo", id="1", response_metadata={"input_tokens": 1}),
        lc.AIMessage("bar", id="2", response_metadata={"input_tokens": 2}),
    ]
    expected = [lc.AIMessage("foo\nbar", id="1", response_metadata={"input_tokens": 1})]
    actual = ctxwin.merge_message_runs(messages)
    assert actual == expected
    assert messages[1].response_metadata == {"input_tokens": 2}  # not mutated
    assert_langchain_out(actual, messages, expected)


def test_merge_message_runs_content() -> None:
    messages = [
        lc.AIMessage("foo", id="1"),
        lc.AIMessage(
            [{"text": "bar", "type": "text"}, {"image_url": "...", "type": "image_url"}],
            tool_calls=[lc.ToolCall(name="foo_tool", args={"x": 1}, id="tool1", type="tool_call")],
            id="2",
        ),
        lc.AIMessage(
            "baz",
            tool_calls=[lc.ToolCall(name="foo_tool", args={"x": 5}, id="tool2", type="tool_call")],
            id="3",
        ),
    ]
    messages_model_copy = deep_copies(messages)
    expected = [
        lc.AIMessage(
            ["foo", {"text": "bar", "type": "text"}, {"image_url": "...", "type": "image_url"}, "baz"],
            tool_calls=[
                lc.ToolCall(name="foo_tool", args={"x": 1}, id="tool1", type="tool_call"),
                lc.ToolCall(name="foo_tool", args={"x": 5}, id="tool2", type="tool_call"),
            ],
            id="1",
        ),
    ]
    actual = ctxwin.merge_message_runs(messages)
    assert actual == expected
    invoked = ctxwin.merge_message_runs().invoke(messages)
    assert actual == invoked
    assert messages == messages_model_copy
    assert_langchain_out(actual, messages, expected)
    assert_langchain_out(invoked, messages, expected)


def test_merge_messages_tool_messages() -> None:
    messages = [lc.ToolMessage("foo", tool_call_id="1"), lc.ToolMessage("bar", tool_call_id="2")]
    messages_model_copy = deep_copies(messages)
    actual = ctxwin.merge_message_runs(messages)
    assert actual == messages
    assert messages == messages_model_copy
    assert_langchain_out(actual, messages, messages)
    assert all(a is m for a, m in zip(actual, messages, strict=True))


# upstream: test_filter_message (its parameter table, in order)
FILTERS: list[dict[str, Any]] = [
    {"include_names": ["blur"]},
    {"exclude_names": ["blah"]},
    {"include_ids": ["2"]},
    {"exclude_ids": ["1"]},
    {"include_types": "human"},
    {"include_types": ["human"]},
    {"include_types": lc.HumanMessage},
    {"include_types": [lc.HumanMessage]},
    {"exclude_types": "system"},
    {"exclude_types": ["system"]},
    {"exclude_types": lc.SystemMessage},
    {"exclude_types": [lc.SystemMessage]},
    {"include_names": ["blah", "blur"], "exclude_types": [lc.SystemMessage]},
]


@pytest.mark.parametrize("filters", FILTERS, ids=repr)
def test_filter_message(filters: dict[str, Any]) -> None:
    messages = [lc.SystemMessage("foo", name="blah", id="1"), lc.HumanMessage("bar", name="blur", id="2")]
    messages_model_copy = deep_copies(messages)
    expected = messages[1:2]
    actual = ctxwin.filter_messages(messages, **filters)
    assert expected == actual
    invoked = ctxwin.filter_messages(**filters).invoke(messages)
    assert invoked == actual
    assert messages == messages_model_copy
    assert_langchain_out(actual, messages, expected)
    assert_langchain_out(invoked, messages, expected)
    assert actual[0] is messages[1]


TOOL_CALLS = [
    {"name": "foo", "id": "1", "args": {}, "type": "tool_call"},
    {"name": "bar", "id": "2", "args": {}, "type": "tool_call"},
]


def _exclude_tool_calls_messages(ai_content: Any) -> list[Any]:
    return [
        lc.HumanMessage("foo", name="blah", id="1"),
        lc.AIMessage("foo-response", name="blah", id="2"),
        lc.HumanMessage("bar", name="blur", id="3"),
        lc.AIMessage(ai_content, tool_calls=TOOL_CALLS, id="4"),
        lc.ToolMessage("baz", tool_call_id="1", id="5"),
        lc.ToolMessage("qux", tool_call_id="2", id="6"),
    ]


def _check_excluding_all(messages: list[Any]) -> None:
    expected = messages[:3]
    for exclude in (True, ["1", "2"]):  # excluding all tool calls, implicitly and explicitly
        actual = ctxwin.filter_messages(messages, exclude_tool_calls=exclude)
        assert expected == actual
        assert_langchain_out(actual, messages, expected)
        assert all(a is m for a, m in zip(actual, messages, strict=False))


def test_filter_message_exclude_tool_calls() -> None:
    messages = _exclude_tool_calls_messages("bar-response")
    messages_model_copy = deep_copies(messages)
    _check_excluding_all(messages)

    # excluding a specific tool call
    expected = messages[:5]
    expected[3] = expected[3].model_copy(update={"tool_calls": [TOOL_CALLS[0]]})
    actual = ctxwin.filter_messages(messages, exclude_tool_calls=["2"])
    assert expected == actual
    assert_langchain_out(actual, messages, expected)
    assert actual[3] is not messages[3]  # changed: a new AIMessage of the caller's class

    assert messages == messages_model_copy


def test_filter_message_exclude_tool_calls_content_blocks() -> None:
    messages = _exclude_tool_calls_messages(
        [
            {"text": "bar-response", "type": "text"},
            {"name": "foo", "type": "tool_use", "id": "1"},
            {"name": "bar", "type": "tool_use", "id": "2"},
        ]
    )
    messages_model_copy = deep_copies(messages)
    _check_excluding_all(messages)

    # excluding a specific tool call
    expected = messages[:4] + messages[-1:]
    expected[3] = expected[3].model_copy(
        update={
            "tool_calls": [TOOL_CALLS[1]],
            "content": [{"text": "bar-response", "type": "text"}, {"name": "bar", "type": "tool_use", "id": "2"}],
        }
    )
    actual = ctxwin.filter_messages(messages, exclude_tool_calls=["1"])
    assert expected == actual
    assert_langchain_out(actual, messages, expected)

    assert messages == messages_model_copy
