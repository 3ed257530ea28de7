"""One conversion to Anthropic's request: ``output="anthropic"`` and the ``anthropic-api`` counter build the same
body (``convert_to_anthropic``, ``tool_forms.anthropic_tools``), and the real SDK sends it to a server that checks
what Anthropic checks (tests/interop/strict_server.py). Where the counter had its own copy, it disagreed: server
tools sent as client tools, empty descriptions sent, empty text blocks sent, system messages after the first turn
moved to ``system``, tool calls whose arguments are not JSON sent wrapped; the request form is the one kept."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

import ctxwin
from ctxwin.counters._api.anthropic import AnthropicApiCounter
from ctxwin.counters._api.store import StoredCounts
from ctxwin.messages._request_forms.anthropic import anthropic_tools, convert_to_anthropic

from .strict_server import Server, strict_server

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
EMPTY = {"type": "object", "properties": {}}
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "get_weather", "description": "", "parameters": SCHEMA}},
    {"type": "function", "function": {"name": "ping"}},  # no description, no parameters
    {"name": "lookup", "description": "Find a word", "parameters": SCHEMA},  # a bare function definition
    {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},  # Anthropic's server tool
    {"name": "calc", "description": "Add numbers", "input_schema": SCHEMA},  # already Anthropic's
]
AS_ANTHROPIC = [
    {"name": "get_weather", "input_schema": SCHEMA},
    {"name": "ping", "input_schema": EMPTY},
    {"name": "lookup", "description": "Find a word", "input_schema": SCHEMA},
    {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
    {"name": "calc", "description": "Add numbers", "input_schema": SCHEMA},
]
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a weather bot."},
    {"role": "user", "content": [{"type": "text", "text": "Weather here?"}, {"type": "text", "text": ""},
                                 {"type": "image_url", "image_url": {"url": f"DATA:Image/PNG;BASE64,{PNG}"}}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    {"role": "assistant", "content": "Sunny."},
    {"role": "user", "content": "And Rome?"},
]


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with strict_server() as running:
        yield running


@pytest.fixture
def counter(server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AnthropicApiCounter:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    return AnthropicApiCounter("claude-sonnet-4-5", cache=StoredCounts(tmp_path / "counts.sqlite"))


def send(server: Server, request: dict[str, Any]) -> dict[str, Any]:
    """``request`` sent by the SDK's own client (a 400 raises); the body the server got."""
    anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0).messages.create(
        **{"model": "claude-sonnet-4-5", "max_tokens": 64, **request})
    _path, body = server.bodies[-1]
    return body  # type: ignore[no-any-return]


@pytest.mark.slow
def test_tools_as_anthropic_takes_them(server: Server, counter: AnthropicApiCounter) -> None:
    assert anthropic_tools(TOOLS) == AS_ANTHROPIC
    request = ctxwin.fit(CONVERSATION, "gpt-4o", output="anthropic", tools=TOOLS).request
    assert request["tools"] == AS_ANTHROPIC
    assert send(server, request)["tools"] == AS_ANTHROPIC
    counted = counter.request(CONVERSATION, TOOLS)
    assert counted["tools"] == AS_ANTHROPIC  # counted as sent
    send(server, counted)  # the counter's request is one Anthropic takes


def test_a_function_tool_without_a_name() -> None:
    with pytest.raises(ValueError, match=r"^tools\[1\]: a function tool needs a string 'name', got None$"):
        anthropic_tools([TOOLS[0], {"type": "function", "function": {"description": "nameless"}}])


def test_the_counter_counts_the_request_sent(server: Server, counter: AnthropicApiCounter) -> None:
    request = counter.request(CONVERSATION, TOOLS[:1])
    assert request == {"model": "claude-sonnet-4-5", **convert_to_anthropic(CONVERSATION), "tools": AS_ANTHROPIC[:1]}
    assert request["system"] == "You are a weather bot."
    assert request["messages"][0]["content"] == [  # the empty text block left out: Anthropic refuses those
        {"type": "text", "text": "Weather here?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]
    send(server, request)


@pytest.mark.parametrize(("item", "match"), [
    ({"role": "system", "content": "Answer in French."}, r"^messages\[6\]: a system message after the conversation "
                                                         r"started has no Anthropic form"),
    ({"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": '}}]},
     r"^messages\[6\]: tool call 'get_weather' has arguments that are not a JSON object"),
])
def test_what_anthropic_cannot_take_is_refused_alike(counter: AnthropicApiCounter, item: dict[str, Any],
                                                      match: str) -> None:
    conversation = [*CONVERSATION, item]
    with pytest.raises(ValueError, match=match):
        convert_to_anthropic(conversation)
    with pytest.raises(ValueError, match=match):
        counter.request(conversation, TOOLS[:1])
