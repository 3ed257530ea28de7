"""``plan.request`` is the whole request body: the SDK's client sends it as ``**plan.request`` and a server that
checks what the provider checks (tests/interop/strict_server.py) accepts it. Tools in each provider's form (from
OpenAI, Responses, Anthropic or LangChain tools), ``tool_choice``, the reply limit from the reserve, media where
the API takes it."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types import MessageParam
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.tools import tool
from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter

import ctxwin
from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.messages._tool_forms import openai_tools

from .strict_server import Rejected, Server, _chat, strict_server

PNG = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5E"
       "rkJggg==")
SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "description": "the city"}}, "required": ["city"]}
OPENAI_TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                                   "parameters": SCHEMA}}]
ANTHROPIC_TOOLS = [{"name": "get_weather", "description": "Weather for a city", "input_schema": SCHEMA}]
RESPONSES_TOOLS = [{"type": "function", "name": "get_weather", "description": "Weather for a city",
                    "parameters": SCHEMA, "strict": False}]


@tool
def get_weather(city: str) -> str:
    """Weather for a city"""
    return "sunny"


TOOL_FORMS = {"openai": OPENAI_TOOLS, "anthropic": ANTHROPIC_TOOLS, "responses": RESPONSES_TOOLS,
              "langchain": [get_weather]}
LIMITS = {"openai": "max_completion_tokens", "responses": "max_output_tokens", "anthropic": "max_tokens"}


pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with strict_server() as running:
        yield running


def send(server: Server, output: str, request: dict[str, Any]) -> tuple[str, Any]:
    """``request`` sent with the SDK's own client; the body the server got."""
    if output == "openai":
        openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0).chat.completions.create(
            **{**request, "model": "gpt-4o"})
    elif output == "responses":
        openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0).responses.create(
            **{**request, "model": "gpt-4o"})
    else:
        anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0).messages.create(
            **{**request, "model": "claude-sonnet-4-5"})
    return server.bodies[-1]


def tool_loop() -> list[Any]:
    return [
        SystemMessage("You are a weather bot."),
        HumanMessage("Weather in Paris?"),
        AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}]),
        ToolMessage("sunny", tool_call_id="call_1"),
        AIMessage("Sunny."),
        HumanMessage("And Rome?"),
    ]


@pytest.mark.parametrize("output", ["openai", "responses", "anthropic"])
@pytest.mark.parametrize("form", sorted(TOOL_FORMS))
def test_the_request_carries_tools_choice_and_limit_and_is_accepted(server: Server, output: str, form: str) -> None:
    plan = ctxwin.fit(tool_loop(), "gpt-4o", output=output, tools=TOOL_FORMS[form],  # type: ignore[call-overload]
                      tool_choice="required", reserve_output=700)
    request = plan.request
    assert request[LIMITS[output]] == 700
    [function] = [t["function"] for t in openai_tools(request["tools"]) or []]
    if form == output:
        assert request["tools"] == TOOL_FORMS[output]  # a provider's own tools go back as given
    if form != "langchain":
        assert {key: value for key, value in function.items() if key != "strict"} == OPENAI_TOOLS[0]["function"]
    assert function["name"] == "get_weather"
    assert request["tool_choice"] == ({"type": "any"} if output == "anthropic" else "required")
    _path, body = send(server, output, request)
    assert body == {**json.loads(json.dumps(request)), "model": body["model"]}
    # the tools the plan counted are the ones sent
    counter = get_counter("gpt-4o")
    assert plan.budget.tools_tokens == counter.count_tools(openai_tools(request["tools"]))  # type: ignore[attr-defined]


def test_a_langchain_tool_reads_as_langchain_converts_it() -> None:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    plan = ctxwin.fit(tool_loop(), "gpt-4o", output="openai", tools=[get_weather])
    assert plan.request["tools"] == [convert_to_openai_tool(get_weather)]


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "tool", "name": "get_weather"},
         {"openai": {"type": "function", "function": {"name": "get_weather"}},
          "responses": {"type": "function", "name": "get_weather"},
          "anthropic": {"type": "tool", "name": "get_weather"}}),
        ({"type": "function", "function": {"name": "get_weather"}},
         {"openai": {"type": "function", "function": {"name": "get_weather"}},
          "responses": {"type": "function", "name": "get_weather"},
          "anthropic": {"type": "tool", "name": "get_weather"}}),
        ("none", {"openai": "none", "responses": "none", "anthropic": {"type": "none"}}),
        ({"type": "any", "disable_parallel_tool_use": True},
         {"openai": "required", "responses": "required",
          "anthropic": {"type": "any", "disable_parallel_tool_use": True}}),
    ],
)
def test_tool_choice_in_each_form(server: Server, choice: Any, expected: dict[str, Any]) -> None:
    for output, wanted in expected.items():
        plan = ctxwin.fit(tool_loop(), "gpt-4o", output=output, tools=OPENAI_TOOLS,  # type: ignore[call-overload]
                          tool_choice=choice)
        assert plan.request["tool_choice"] == wanted
        send(server, output, plan.request)


def test_a_request_gives_its_tool_choice_and_without_tools_none_is_sent() -> None:
    request = {"messages": [{"role": "user", "content": "hi"}], "tools": OPENAI_TOOLS, "tool_choice": "auto"}
    assert ctxwin.fit(request, "gpt-4o", output="openai").request["tool_choice"] == "auto"
    plan = ctxwin.fit([HumanMessage("hi")], "gpt-4o", output="openai", tool_choice="required")
    assert "tool_choice" not in plan.request and "tools" not in plan.request  # no API takes a choice without tools


@pytest.mark.parametrize("choice", ["sometimes", {"type": "maybe"}, 3])
def test_a_bad_tool_choice_is_named(choice: Any) -> None:
    with pytest.raises(ValueError, match=r"^tool_choice must be 'auto', 'none', 'required'"):
        ctxwin.Planner("gpt-4o", tool_choice=choice)
    with pytest.raises(ValueError, match=r"^tool_choice must be"):
        ctxwin.fit({"messages": [{"role": "user", "content": "hi"}], "tools": OPENAI_TOOLS, "tool_choice": choice})


def test_a_bad_tool_is_named() -> None:
    with pytest.raises(TypeError, match=r"^tools\[1\]: expected a dict tool definition"):
        ctxwin.Planner("gpt-4o", tools=[OPENAI_TOOLS[0], 42])


def test_the_server_rejects_what_the_providers_reject(server: Server) -> None:
    """The checks the tests rely on fail where the provider's would: no test passes by a lenient server."""
    plan = ctxwin.fit(tool_loop(), "gpt-4o", output="anthropic")
    with pytest.raises(anthropic.BadRequestError, match="tool_use blocks must define tools"):
        send(server, "anthropic", plan.request)
    assert any("Anthropic rejects tool_use blocks" in w for w in plan.warnings)
    messages = [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "image_url", "image_url": {"url": PNG}}]}]
    with pytest.raises(openai.BadRequestError, match="only allowed in user messages"):
        send(server, "openai", {"messages": messages})
    thinking = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "made up", "signature": "forged"}, {"type": "text", "text": "x"}]},
        {"role": "user", "content": "go on"}]
    with pytest.raises(anthropic.BadRequestError, match="invalid signature"):
        send(server, "anthropic", {"messages": thinking, "max_tokens": 10})


def computer_use() -> list[Any]:
    """A computer-use loop: screenshots come back as tool results; an assistant turn and the system hold images."""
    image = {"type": "image_url", "image_url": {"url": PNG}}
    return [
        SystemMessage([{"type": "text", "text": "You operate a desktop."}, image]),
        HumanMessage("Open the settings."),
        AIMessage([{"type": "text", "text": "Here is what I see."}, image],
                  tool_calls=[{"name": "screenshot", "args": {}, "id": "call_1"},
                              {"name": "screenshot", "args": {}, "id": "call_2"}]),
        ToolMessage([{"type": "text", "text": "screen 1"}, image], tool_call_id="call_1"),
        ToolMessage([image], tool_call_id="call_2"),
        AIMessage("Done."),
        HumanMessage("Thanks."),
    ]


SCREENSHOT_TOOLS = [{"type": "function", "function": {"name": "screenshot", "parameters": {"type": "object"}}}]


@pytest.mark.parametrize("output", ["openai", "responses", "anthropic"])
def test_media_goes_where_the_api_takes_it_and_is_counted(server: Server, output: str) -> None:
    plan = ctxwin.fit(computer_use(), "gpt-4o", output=output, tools=SCREENSHOT_TOOLS)  # type: ignore[call-overload]
    send(server, output, plan.request)
    [step] = [s for s in plan.steps if s.name == "place_media"]
    assert step.notes and step.tokens_after > step.tokens_before  # the moved images' note and user turn, counted
    text = json.dumps(plan.request)
    assert text.count("iVBORw0KGgo") == 4  # every image still sent, none lost
    if output == "openai":
        roles = [m["role"] for m in plan.messages]
        assert roles == ["system", "user", "user", "assistant", "tool", "tool", "user", "assistant", "user"]
        moved = plan.messages[6]["content"]
        assert [part.get("text") for part in moved if part["type"] == "text"] == [  # type: ignore[union-attr]
            "[1 part from the assistant message #2]", "[1 part from the result of tool call call_1]",
            "[1 part from the result of tool call call_2]"]
        for message in plan.messages:
            TypeAdapter(ChatCompletionMessageParam).validate_python(message)
    if output == "anthropic":
        for message in plan.messages:
            TypeAdapter(MessageParam).validate_python(message)
        assert all(block["type"] == "text" for block in plan.system)
    if output == "openai":  # counted as it is sent
        assert plan.tokens_after == get_counter("gpt-4o").count_messages(plan.messages, tools=SCREENSHOT_TOOLS)


@pytest.mark.parametrize("output", ["openai", "anthropic"])
def test_audio_where_the_api_takes_none_is_a_note_with_a_warning(output: str) -> None:
    audio = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
    messages = [HumanMessage("Listen."), AIMessage("", tool_calls=[{"name": "record", "args": {}, "id": "c1"}]),
                ToolMessage([audio], tool_call_id="c1"), HumanMessage("What was it?")]
    plan = ctxwin.fit(messages, "gpt-4o", output=output)  # type: ignore[call-overload]
    text = json.dumps(plan.request)
    if output == "anthropic":
        assert "AAAA" not in text and "[audio removed: the anthropic API takes no audio]" in text
        assert plan.warnings[0] == ("place_media: the result of tool call c1: an audio part has no place in the "
                                    "anthropic API; replaced by a note")
    else:  # chat completions takes audio from the user: moved there
        assert plan.messages[3]["role"] == "user" and "AAAA" in json.dumps(plan.messages[3])


_ROLES = st.sampled_from(["system", "user", "assistant", "tool"])
_PART = st.sampled_from([
    {"type": "text", "text": "look"},
    {"type": "image_url", "image_url": {"url": PNG}},
    {"type": "image", "url": "https://example.com/a.png"},
    {"type": "file", "file_id": "file-1"},
])


@st.composite
def conversations(draw: st.DrawFn) -> list[Any]:
    out: list[Any] = [SystemMessage(draw(st.lists(_PART, min_size=1, max_size=3)))]
    for turn in range(draw(st.integers(1, 4))):
        out.append(HumanMessage(draw(st.lists(_PART, min_size=1, max_size=3))))
        calls = draw(st.integers(0, 2))
        ids = [f"c{turn}_{i}" for i in range(calls)]
        out.append(AIMessage(draw(st.lists(_PART, min_size=1, max_size=2)),
                             tool_calls=[{"name": "screenshot", "args": {}, "id": i} for i in ids]))
        out += [ToolMessage(draw(st.lists(_PART, min_size=1, max_size=3)), tool_call_id=i) for i in ids]
    return out


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.integers(300, 3_000))
def test_random_fits_with_media_are_valid_chat_completions(messages: list[Any], window: int) -> None:
    plan = ctxwin.fit(copy.deepcopy(messages), "gpt-4o", output="openai", context_window=window, reserve_output=100,
                      tools=SCREENSHOT_TOOLS)
    adapter = TypeAdapter(ChatCompletionMessageParam)
    for message in plan.messages:
        adapter.validate_python(message)
    try:
        _chat(json.loads(json.dumps(plan.request)), None)  # type: ignore[arg-type]
    except Rejected as exc:
        pytest.fail(f"{exc}: {plan.messages}")
