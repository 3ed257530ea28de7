"""``plan.request`` is each SDK's whole call: ``client.chat.completions.create(**plan.request)``,
``client.responses.create(**plan.request)`` and ``client.messages.create(**plan.request)`` work as written, the
model included (the name given, or ``request_model`` where the provider's id differs), for one-off plans, sessions
and whole requests, through the real SDKs to a server that checks what the provider checks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

import ctxwin
from ctxwin import FitConfig, Planner
from ctxwin.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from .strict_server import Server, strict_server

pytestmark = pytest.mark.slow  # each test starts a server (half a second to stop)

TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "Look a word up",
                                           "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]
MODELS = {"openai": "gpt-4o", "responses": "gpt-4o", "anthropic": "claude-sonnet-4-5"}
PATHS = {"openai": "/v1/chat/completions", "responses": "/v1/responses", "anthropic": "/v1/messages"}


@pytest.fixture
def server() -> Iterator[Server]:
    with strict_server() as running:
        yield running


def create(server: Server, output: str, request: dict[str, Any]) -> dict[str, Any]:
    """``request`` sent as the docs write it, ``create(**plan.request)``; the body the server took."""
    if output == "anthropic":
        anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0).messages.create(**request)
    else:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0)
        (client.chat.completions if output == "openai" else client.responses).create(**request)
    path, body = server.bodies[-1]
    assert path == PATHS[output]
    return body  # type: ignore[no-any-return]


def chat(turns: int) -> list[Any]:
    out: list[Any] = [SystemMessage("Answer in one line.")]
    for i in range(turns):
        out += [HumanMessage(f"Look up word {i}."), AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": f"w{i}"},
                                                                              "id": f"c{i}"}]),
                ToolMessage(f"word {i}: a definition " * 20, tool_call_id=f"c{i}"), AIMessage(f"Word {i} means x.")]
    return [*out, HumanMessage("And the last one?")]


@pytest.mark.parametrize("output", sorted(MODELS))
def test_a_plan_is_the_whole_sdk_call(server: Server, output: str) -> None:
    plan = ctxwin.fit(chat(20), MODELS[output], output=output, tools=TOOLS, tool_choice="auto",  # type: ignore[call-overload]
                      context_window=4_000, reserve_output=500)
    assert plan.request["model"] == MODELS[output]
    assert create(server, output, plan.request)["model"] == MODELS[output]


@pytest.mark.parametrize("output", sorted(MODELS))
def test_a_sessions_plans_are_the_whole_sdk_call(server: Server, output: str) -> None:
    session = Planner(MODELS[output], output=output, tools=TOOLS, context_window=4_000,  # type: ignore[call-overload]
                      reserve_output=500).session(chat(2))
    cuts = 0
    for i in range(2, 14):
        plan = session.plan()
        assert create(server, output, plan.request)["model"] == MODELS[output]
        cuts += plan.cache is not None and plan.cache.cut
        session.add_messages(chat(i + 1)[-5:])
    assert cuts  # appended requests and cuts alike


@pytest.mark.parametrize("output", sorted(MODELS))
def test_the_request_model_names_the_providers_id(server: Server, output: str) -> None:
    given = {"openai": "gpt-4o-2024-11-20", "responses": "gpt-4o-2024-11-20",
             "anthropic": "claude-sonnet-4-5-20250929"}[output]
    config = FitConfig(model=MODELS[output], output=output, tools=TOOLS, request_model=given)  # type: ignore[arg-type]
    plan = ctxwin.fit(chat(2), config=config)
    assert plan.model == MODELS[output] and plan.request["model"] == given
    assert create(server, output, plan.request)["model"] == given


def test_a_whole_request_keeps_the_model_it_was_planned_for(server: Server) -> None:
    request = {"system": "Answer in one line.", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 100}
    plan = Planner("claude-sonnet-4-5", output="request").plan(request)
    assert create(server, "anthropic", plan.request)["max_tokens"] == 100


def test_the_request_model_is_checked_and_left_out_without_a_model() -> None:
    for bad in ("", "  ", 4):
        with pytest.raises(ValueError, match="request_model must be the provider's model id"):
            FitConfig(model="gpt-4o", request_model=bad)  # type: ignore[arg-type]

    plan = ctxwin.fit(chat(1), None, counter="approximate", context_window=8_000, output="anthropic", tools=TOOLS)
    assert "model" not in plan.request  # no model given: none named
