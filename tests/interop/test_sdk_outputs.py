"""output="openai" | "responses" | "anthropic": valid by the SDKs' own param types, and accepted by their real
clients (pointed at a local server that records the body they send)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types import MessageParam, TextBlockParam
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputItemParam
from pydantic import TypeAdapter

import ctxwin
from ctxwin.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.messages._request_forms.anthropic import convert_to_anthropic
from ctxwin.messages._request_forms.responses import convert_to_responses_items

from .strict_server import REPLIES  # the canned answers the SDK clients parse
from .test_sdk_inputs import ANTHROPIC_REQUEST, RESPONSES_ITEMS

PNG_URL = (  # a 1x1 PNG
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
class _Recorder(BaseHTTPRequestHandler):
    bodies: list[tuple[str, Any]]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.bodies.append((self.path, body))
        reply = json.dumps(REPLIES[self.path]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, list[tuple[str, Any]]]]:
    """A local HTTP server answering the three endpoints; yields its URL and the bodies it received."""
    bodies: list[tuple[str, Any]] = []
    handler = type("Recorder", (_Recorder,), {"bodies": bodies})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # shutdown() waits for the loop's next poll: every 0.5 s by default, every 0.05 s here
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", bodies
    httpd.shutdown()
    httpd.server_close()


def conversation() -> list[Any]:
    """Every kind of message a fit can produce: system, an image, parallel tool calls, a failed tool, runs of one
    role, Anthropic thinking, Responses reasoning."""
    return [
        SystemMessage("You are a weather bot."),
        SystemMessage("Summary of earlier turns: the user lives in Paris."),
        HumanMessage([{"type": "text", "text": "Weather here and in Rome? See my photo."},
                      {"type": "image_url", "image_url": {"url": PNG_URL}}]),
        AIMessage(
            [{"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "two cities"}]},
             {"type": "text", "text": "Checking both."}],
            tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"},
                        {"name": "get_weather", "args": {"city": "Rome"}, "id": "call_2"}],
        ),
        ToolMessage("sunny", tool_call_id="call_1"),
        ToolMessage("service down", tool_call_id="call_2", status="error"),
        HumanMessage("Also, one more thing."),
        AIMessage([{"type": "thinking", "thinking": "Rome failed.", "signature": "c2ln"},
                   {"type": "text", "text": "Paris is sunny; Rome is unknown."}]),
        HumanMessage("Thanks!"),
        HumanMessage("Bye."),
    ]


def test_openai_output_validates_and_is_sent(server: tuple[str, list[Any]]) -> None:
    url, bodies = server
    plan = ctxwin.fit(conversation(), "gpt-4o", output="openai")
    adapter = TypeAdapter(ChatCompletionMessageParam)
    for message in plan.messages:
        adapter.validate_python(message)
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
    client.chat.completions.create(model="gpt-4o", messages=plan.messages)
    assert bodies[-1] == ("/v1/chat/completions", {"model": "gpt-4o", "messages": plan.messages})


def test_responses_output_validates_and_is_sent(server: tuple[str, list[Any]]) -> None:
    url, bodies = server
    plan = ctxwin.fit(conversation(), "gpt-4o", output="responses")
    adapter = TypeAdapter(ResponseInputItemParam)
    for item in plan.messages:
        adapter.validate_python(item)
    assert [item.get("type") for item in plan.messages] == [
        "message", "message", "message", "reasoning", "message", "function_call", "function_call",
        "function_call_output", "function_call_output", "message", "message", "message", "message",
    ]
    assert plan.messages[2]["content"][1] == {  # type: ignore[index, typeddict-item]
        "type": "input_image",
        "image_url": PNG_URL, "detail": "auto"}
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
    client.responses.create(**plan.request)
    assert bodies[-1] == ("/v1/responses", {"model": "gpt-4o", "input": plan.messages, "max_output_tokens": 16_000})


@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
def test_anthropic_output_validates_and_is_sent(server: tuple[str, list[Any]]) -> None:
    url, bodies = server
    plan = ctxwin.fit(conversation(), "gpt-4o", output="anthropic")
    message_adapter, block_adapter = TypeAdapter(MessageParam), TypeAdapter(TextBlockParam)
    for message in plan.messages:
        message_adapter.validate_python(message)
    for block in plan.system:
        block_adapter.validate_python(block)
    assert plan.system == [{"type": "text", "text": "You are a weather bot."},
                           {"type": "text", "text": "Summary of earlier turns: the user lives in Paris."}]
    roles = [m["role"] for m in plan.messages]
    assert roles == ["user", "assistant", "user", "assistant", "user"]  # alternating, as Anthropic requires
    assert plan.messages[1]["content"] == [  # Responses reasoning has no Anthropic form; the calls are tool_use
        {"type": "text", "text": "Checking both."},
        {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "call_2", "name": "get_weather", "input": {"city": "Rome"}},
    ]
    assert plan.messages[2]["content"] == [  # both results, then the user's text, in one user turn
        {"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"},
        {"type": "tool_result", "tool_use_id": "call_2", "content": "service down", "is_error": True},
        {"type": "text", "text": "Also, one more thing."},
    ]
    assert plan.messages[3]["content"][0] == {  # type: ignore[index]
        "type": "thinking", "thinking": "Rome failed.", "signature": "c2ln"}
    assert plan.messages[4]["content"] == [{"type": "text", "text": "Thanks!"}, {"type": "text", "text": "Bye."}]
    client = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
    client.messages.create(**{**plan.request, "model": "claude-sonnet-4-5"})
    assert bodies[-1] == ("/v1/messages", {**plan.request, "model": "claude-sonnet-4-5"})
    assert plan.request["max_tokens"] == plan.budget.reserve_output


def test_one_system_message_is_a_string_and_none_is_left_out() -> None:
    assert convert_to_anthropic([SystemMessage("Be brief."), HumanMessage("hi")]) == {
        "system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}
    assert convert_to_anthropic([HumanMessage("hi")]) == {"messages": [{"role": "user", "content": "hi"}]}
    plan = ctxwin.fit([HumanMessage("hi")], "gpt-4o", output="anthropic")
    assert plan.system is None
    assert plan.request == {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 16_000}


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        ([HumanMessage("hi"), SystemMessage("late")], r"^messages\[1\]: a system message after the conversation"),
        ([HumanMessage("hi"), AIMessage("", invalid_tool_calls=[{"name": "f", "args": "{oops", "id": "c1",
                                                                  "error": "bad json"}])],
         r"^messages\[1\]: tool call 'f' has arguments that are not a JSON object"),
        ([HumanMessage([{"type": "input_audio", "input_audio": {"data": "AA==", "format": "wav"}}])],
         r"^messages\[0\]: an 'input_audio' block has no Anthropic form"),
        ([SystemMessage([{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]), HumanMessage("hi")],
         r"^messages\[0\]: Anthropic's system takes text only"),
    ],
)
def test_what_anthropic_cannot_hold_is_an_error(messages: list[Any], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        convert_to_anthropic(messages)


def test_responses_items_round_trip() -> None:
    """Responses items in, Responses items out: the same items (the assistant text as a plain message)."""
    out = convert_to_responses_items(RESPONSES_ITEMS)
    assert out[:5] == [
        {"type": "message", "role": "developer", "content": "Answer briefly."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
        RESPONSES_ITEMS[2],
        {"type": "function_call", "call_id": "call_9", "name": "get_weather", "arguments": '{"city":"Paris"}'},
        {"type": "function_call_output", "call_id": "call_9", "output": "sunny, 21C"},
    ]
    assert out[5] == {"type": "message", "role": "assistant", "content": "Sunny and 21C."}


def test_an_anthropic_request_round_trips() -> None:
    request = convert_to_anthropic(ANTHROPIC_REQUEST)
    assert request == {"system": ANTHROPIC_REQUEST["system"], "messages": ANTHROPIC_REQUEST["messages"]}


def test_openai_dicts_come_back_as_the_callers_own() -> None:
    """output="openai" with OpenAI dicts in: the kept messages are the caller's dicts (unknown keys and a null
    content as given); a shortened one is a new dict."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief.", "x_cache": "s1"},
        {"role": "user", "content": "Read the log."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "read_log", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "line\n" * 5000},
        {"role": "user", "content": "Summarise it.", "x_trace": {"turn": 2}},
    ]
    plan = ctxwin.fit(history, "gpt-4o", context_window=2000, reserve_output=200, output="openai")
    out = plan.messages
    assert [m is h for m, h in zip(out, history, strict=True)] == [True, True, True, False, True]
    assert out[2]["content"] is None and out[4]["x_trace"] == {"turn": 2}  # type: ignore[typeddict-item]
    assert out[3]["role"] == "tool" and len(str(out[3]["content"])) < len(history[3]["content"])


@pytest.mark.slow
def test_anthropic_merging_is_linear() -> None:
    """100,000 tool results in a row merge into one user turn in one pass (a quadratic merge would take minutes)."""
    results = [ToolMessage("ok", tool_call_id=f"c{i}") for i in range(100_000)]
    calls = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": f"c{i}"} for i in range(100_000)])
    request = convert_to_anthropic([HumanMessage("go"), calls, *results])
    assert len(request["messages"]) == 3 and len(request["messages"][2]["content"]) == 100_000


@pytest.mark.slow
def test_typed_usage_needs_no_cast() -> None:
    """mypy --strict accepts passing the typed outputs to the SDK calls (tests/interop/typed_usage.py)."""
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "tests/interop/typed_usage.py"],
        cwd=root, capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_unknown_output_is_named() -> None:
    with pytest.raises(ValueError, match=r"^output must be one of 'messages', 'openai', 'responses', 'anthropic', "
                                         r"'request', got 'gemini'"):
        ctxwin.Planner("gpt-4o", output="gemini")  # type: ignore[call-overload]
