"""The OpenAI and Anthropic SDKs' shapes in: the SDK's own pydantic objects, Responses items and whole requests are
read wherever a message list is (convert_to_messages, every counter's count_messages, trim_messages, fit), counted by
their text, and nothing is dropped silently."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.types import Message as AnthropicResponse
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

import ctxwin
from ctxwin.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, convert_to_messages

COMPLETION = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
    "choices": [{
        "index": 0, "finish_reason": "tool_calls", "logprobs": None,
        "message": {
            "role": "assistant", "content": None, "refusal": None, "annotations": [],
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}],
        },
    }],
}

# A Responses turn as the API returns it: reasoning, a function call, and (after the tool ran) the answer.
RESPONSE = {
    "id": "resp_1", "object": "response", "created_at": 1, "model": "o4-mini", "status": "completed",
    "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    "output": [
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "The user wants weather."}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "get_weather",
         "arguments": '{"city":"Paris"}', "status": "completed"},
    ],
}

RESPONSES_ITEMS: list[dict[str, Any]] = [
    {"role": "developer", "content": "Answer briefly."},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "The user wants weather."}]},
    {"type": "function_call", "call_id": "call_9", "name": "get_weather", "arguments": '{"city":"Paris"}'},
    {"type": "function_call_output", "call_id": "call_9", "output": "sunny, 21C"},
    {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
     "content": [{"type": "output_text", "text": "Sunny and 21C.", "annotations": []}]},
]

ANTHROPIC_REQUEST: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "system": [{"type": "text", "text": "You are a terse weather bot.", "cache_control": {"type": "ephemeral"}}],
    "tools": [{"name": "get_weather", "description": "Weather for a city",
               "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
    "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "I should call the weather tool.", "signature": "sig=="},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]},
    ],
}

COUNTERS = ["gpt-4o", "approximate", "tiktoken:cl100k_base", "gpt-oss-20b"]


@pytest.mark.slow
def test_a_chat_completion_message_object_reads_like_its_dict() -> None:
    message = ChatCompletion.model_validate(COMPLETION).choices[0].message
    as_dict = COMPLETION["choices"][0]["message"]
    [read] = convert_to_messages([message])
    assert isinstance(read, AIMessage)
    assert read.tool_calls == [{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1", "type": "tool_call"}]
    conversation = [{"role": "user", "content": "Weather?"}, message,
                    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]
    counter = ctxwin.get_counter("gpt-4o")
    assert counter.count_messages(conversation) == counter.count_messages([*conversation[:1], as_dict, conversation[2]])
    plan = ctxwin.fit(conversation, "gpt-4o", output="openai")
    assert plan.messages[1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris"}'  # type: ignore[typeddict-item]


def test_responses_output_objects_read_as_one_assistant_turn() -> None:
    output = Response.model_validate(RESPONSE).output
    messages = convert_to_messages([{"role": "user", "content": "Weather in Paris?"}, *output,
                                    {"type": "function_call_output", "call_id": "call_9", "output": "sunny"}])
    assert [type(m) for m in messages] == [HumanMessage, AIMessage, ToolMessage]
    turn = messages[1]
    assert isinstance(turn, AIMessage)
    assert turn.tool_calls[0]["id"] == "call_9" and turn.tool_calls[0]["args"] == {"city": "Paris"}
    assert turn.content[0]["summary"][0]["text"] == "The user wants weather."  # type: ignore[index]


def test_responses_items_read_with_their_parts_as_text() -> None:
    messages = convert_to_messages(RESPONSES_ITEMS)
    assert [type(m) for m in messages] == [SystemMessage, HumanMessage, AIMessage, ToolMessage, AIMessage]
    assert messages[1].content == [{"type": "text", "text": "Weather in Paris?"}]
    assert messages[4].content == [{"type": "text", "text": "Sunny and 21C."}]
    assert messages[4].id == "msg_1"


@pytest.mark.slow
@pytest.mark.parametrize("spec", COUNTERS)
def test_responses_items_are_counted_by_their_text(spec: str) -> None:
    """Each item's tokens grow with its text (no flat per-block estimate), as the same text in chat form does."""
    counter = ctxwin.get_counter(spec)
    long = "Paris " * 300
    for index, key, path in ((1, "text", ("content", 0)), (3, "arguments", ()), (4, "output", ()),
                             (2, "text", ("summary", 0))):
        items = json.loads(json.dumps(RESPONSES_ITEMS))
        target = items[index]
        for step in path:
            target = target[step]
        before = counter.count_messages(items)
        target[key] = json.dumps({"city": long}) if key == "arguments" else long
        after = counter.count_messages(items)
        assert after - before >= counter.count_text(long) // 2, (index, key)


@pytest.mark.parametrize("spec", COUNTERS)
def test_an_anthropic_request_counts_its_system_tools_and_thinking(spec: str) -> None:
    counter = ctxwin.get_counter(spec)
    total = counter.count_messages(ANTHROPIC_REQUEST)
    without_system = counter.count_messages({**ANTHROPIC_REQUEST, "system": None})
    without_tools = counter.count_messages({**ANTHROPIC_REQUEST, "tools": []})
    assert total - without_system >= counter.count_text("You are a terse weather bot.")
    assert total > without_tools
    assert counter.count_messages(ANTHROPIC_REQUEST, tools=[]) == without_tools  # tools= given wins
    thinking = json.loads(json.dumps(ANTHROPIC_REQUEST))
    thinking["messages"][1]["content"][0]["thinking"] = "think " * 200
    assert counter.count_messages(thinking) - total >= counter.count_text("think " * 200) // 2


def test_an_anthropic_request_reads_with_its_system_first() -> None:
    messages = convert_to_messages(ANTHROPIC_REQUEST)
    assert isinstance(messages[0], SystemMessage)
    assert messages[0].content[0]["text"] == "You are a terse weather bot."  # type: ignore[index]
    assert [type(m) for m in messages[1:]] == [HumanMessage, AIMessage, ToolMessage]
    assert convert_to_messages({"system": "Be brief.", "messages": []})[0].content == "Be brief."


def test_an_anthropic_response_object_reads_as_an_assistant_message() -> None:
    response = AnthropicResponse.model_validate({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
        "content": [{"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}],
    })
    [message] = convert_to_messages([response])
    assert isinstance(message, AIMessage)
    assert message.content == [{"type": "text", "text": "Let me check."}]
    assert message.tool_calls[0]["id"] == "toolu_1"


def test_trim_and_fit_keep_a_requests_system_and_tool_pairs() -> None:
    request = json.loads(json.dumps(ANTHROPIC_REQUEST))
    request["max_tokens"] = 100  # the reserve is at least the request's reply limit: it must fit the small window
    request["messages"] = [{"role": "user", "content": "old question " * 400},
                           {"role": "assistant", "content": "old answer " * 400}, *request["messages"]]
    trimmed = ctxwin.trim_messages(request, max_tokens=150, token_counter="gpt-4o", include_system=True)
    assert isinstance(trimmed[0], SystemMessage)
    assert [type(m) for m in trimmed[1:]] == [HumanMessage, AIMessage, ToolMessage]
    plan = ctxwin.fit(request, "gpt-4o", context_window=600, reserve_output=100, output="anthropic")
    assert plan.fits
    assert plan.system == ANTHROPIC_REQUEST["system"]
    assert plan.messages == ANTHROPIC_REQUEST["messages"]
    # The request's tools are in the budget: the same conversation without them has more room.
    bare = ctxwin.fit({**request, "tools": []}, "gpt-4o", context_window=600, reserve_output=100)
    assert plan.budget.tools_tokens > 0 == bare.budget.tools_tokens


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([{"role": "user", "content": "hi"}, {"type": "web_search_call", "id": "ws_1", "status": "completed"}],
         r"^messages\[1\]: cannot read an item of type 'web_search_call'"),
        ([{"type": "function_call", "name": "f", "arguments": "{}"}],
         r"^messages\[0\]: a 'function_call' item needs a string 'call_id' and 'name'"),
        ([{"role": "user", "content": "hi"}, {"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}],
         r"^messages\[1\]: a 'function_call' item's 'arguments' must be a JSON string"),
        ([{"role": "user", "content": "hi"}, {"type": "message", "role": "assistant", "content": 5},
          {"role": "user", "content": "ok"}],
         r"^messages\[1\]: content must be a string, a list of content blocks or None, got int"),
        ([{"type": "function_call_output", "output": "x"}],
         r"^messages\[0\]: a 'function_call_output' item needs a string 'call_id'"),
        ([{"role": "user", "content": [{"type": "input_text"}]}],
         r"^messages\[0\]: content\[0\]: a 'input_text' part needs a string 'text'"),
    ],
)
def test_unreadable_items_name_their_index(items: list[Any], message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        convert_to_messages(items)
    with pytest.raises((ValueError, TypeError), match=message):
        ctxwin.get_counter("gpt-4o").count_messages(items)


def test_a_bad_request_system_or_tools_is_named() -> None:
    with pytest.raises(TypeError, match=r"^system: content must be a string"):
        convert_to_messages({"system": 3, "messages": []})
    with pytest.raises(TypeError, match=r"^a request's 'tools' must be a list"):
        ctxwin.get_counter("gpt-4o").count_messages({"messages": [], "tools": "get_weather"})
    with pytest.raises(TypeError, match=r"^expected a request's 'messages', got int"):
        convert_to_messages({"messages": 3})


@pytest.mark.slow
def test_a_long_run_of_function_calls_reads_in_linear_time() -> None:
    """A turn of 100,000 parallel calls is read in one pass (a quadratic reader would take minutes)."""
    calls = [{"type": "function_call", "call_id": f"c{i}", "name": "f", "arguments": "{}"} for i in range(100_000)]
    [turn] = convert_to_messages(calls)
    assert isinstance(turn, AIMessage) and len(turn.tool_calls) == 100_000
