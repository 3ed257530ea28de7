"""Sendable turns: Anthropic output never holds an empty turn (``""``, no blocks: the API refuses both), whatever
the conversation's empty replies and results, with turns alternating and every tool result after its call; and no
request holds media moved out of a tool result whose call a step dropped (its note would name a call the request
does not have). The real SDK sends each request to a server that checks what the provider checks."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxwin
from ctxwin.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.messages._request_forms.anthropic import anthropic_tools, convert_to_anthropic

from .strict_server import Rejected, Server, _anthropic, _chat, strict_server

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
PNG = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5E"
       "rkJggg==")
EMPTY = st.sampled_from(["", [], [{"type": "text", "text": ""}]])


@pytest.fixture
def server() -> Iterator[Server]:
    with strict_server() as running:
        yield running


def send(server: Server, request: dict[str, Any]) -> None:
    anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0).messages.create(**request)


@pytest.mark.slow
@pytest.mark.parametrize("empty", ["", [], [{"type": "text", "text": ""}]])
def test_empty_replies_and_questions_are_left_out_and_their_neighbours_merged(server: Server, empty: Any) -> None:
    messages = [SystemMessage("Be brief."), HumanMessage("Plan a trip."), AIMessage(empty), HumanMessage(empty),
                HumanMessage("To Rome."), AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1"}]),
                ToolMessage("", tool_call_id="c1"), AIMessage(empty), HumanMessage("And?"), AIMessage(empty)]
    plan = ctxwin.fit(messages, "claude-sonnet-4-5", output="anthropic", tools=TOOLS)
    assert plan.messages == [
        {"role": "user", "content": [{"type": "text", "text": "Plan a trip."}, {"type": "text", "text": "To Rome."}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1"}, {"type": "text", "text": "And?"}]},
    ]
    send(server, plan.request)


@st.composite
def conversations(draw: st.DrawFn) -> list[Any]:
    out: list[Any] = [SystemMessage("Be brief.")]
    for turn in range(draw(st.integers(1, 5))):
        asked = st.just(f"question {turn}")  # the first is not empty: a conversation starts with the user
        out.append(HumanMessage(draw(st.one_of(EMPTY, asked) if turn else asked)))
        ids = [f"c{turn}_{i}" for i in range(draw(st.integers(0, 2)))]
        out.append(AIMessage(draw(st.one_of(EMPTY, st.just(f"answer {turn}"))),
                             tool_calls=[{"name": "f", "args": {}, "id": i} for i in ids]))
        out += [ToolMessage(draw(st.one_of(EMPTY, st.just("result"))), tool_call_id=i) for i in ids]
        if ids and draw(st.booleans()):
            out.append(AIMessage(draw(st.one_of(EMPTY, st.just("done")))))
    return out


def check_anthropic(messages: list[Any]) -> None:
    request = {**convert_to_anthropic(messages), "tools": anthropic_tools(TOOLS)}
    assert all(message["content"] for message in request["messages"])
    _anthropic(json.loads(json.dumps(request)), None)  # type: ignore[arg-type]  # alternation, tool pairs


def test_empty_turns_never_reach_anthropic_on_two_runs() -> None:
    for messages in ([HumanMessage(""), AIMessage([]), HumanMessage("hi")],
                     [HumanMessage("a"), AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c"}]),
                      ToolMessage([], tool_call_id="c"), HumanMessage([]), AIMessage(""), HumanMessage("b")]):
        check_anthropic(messages)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_empty_turns_never_reach_anthropic(messages: list[Any]) -> None:
    try:
        check_anthropic(messages)
    except Rejected as exc:
        pytest.fail(f"{exc}: {messages}")


def agent_run() -> list[Any]:
    """Tool rounds whose results hold a screenshot: chat completions takes images from the user only, so each is
    moved to a user message after its round, with a note naming the call."""
    out: list[Any] = [SystemMessage("You drive a browser."), HumanMessage("Find the cheapest flight.")]
    for i in range(8):
        page = [{"type": "text", "text": f"page {i} " * 150}, {"type": "image_url", "image_url": {"url": PNG}}]
        out += [AIMessage(f"Step {i}.", tool_calls=[{"name": "f", "args": {}, "id": f"c{i}"}]),
                ToolMessage(page, tool_call_id=f"c{i}"),
                AIMessage(f"Page {i} read.")]
    return out


@pytest.mark.parametrize("window", range(1_500, 4_000, 125))
def test_no_request_holds_media_of_a_tool_call_it_dropped(window: int) -> None:
    plan = ctxwin.fit(agent_run(), "gpt-4o", output="openai", tools=TOOLS, context_window=window, reserve_output=100)
    text = json.dumps(plan.request)
    named = set(re.findall(r"the result of tool call (c\d+)", text))
    sent = {call["id"] for message in plan.messages for call in message.get("tool_calls") or []}
    assert named <= sent, f"notes name {sorted(named - sent)}, not in the request"
    _chat(json.loads(text), None)  # type: ignore[arg-type]


@pytest.mark.slow
def test_the_sdk_sends_a_request_without_the_stray_media(server: Server) -> None:
    plan = ctxwin.fit(agent_run(), "gpt-4o", output="openai", tools=TOOLS, context_window=2_000, reserve_output=100)
    assert any("stray media" in note for step in plan.steps for note in step.notes)
    openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0).chat.completions.create(**plan.request)
