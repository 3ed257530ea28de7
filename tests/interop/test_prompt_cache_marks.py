"""Requests that mark the prompt cache go through the real SDKs to a server that checks the marks as the providers
do (tests/interop/strict_server.py): OpenAI's ``prompt_cache_breakpoint`` (at most four, on blocks that take one, in
explicit mode) with ``prompt_cache_key``, for chat completions and Responses; Anthropic's ``cache_control`` at the
lifetime the gap asks for. Tool outputs are ctxwin's own source files, read as an agent reads them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

import ctxwin
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from .strict_server import Server, strict_server

TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file of the repository",
                                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                                          "required": ["path"]}}}]
SOURCES = sorted((Path(ctxwin.__file__).parent / "planner").glob("*.py"))


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with strict_server() as running:
        yield running


def agent_turns(rounds: int) -> Iterator[list[BaseMessage]]:
    """A task, then tool rounds reading the planner's sources (up to 6,000 characters each), a question now and
    then."""
    yield [SystemMessage("You are a careful code reviewer. Read files with read_file before you answer."),
           HumanMessage("Review how ctxwin's planner keeps the prompt cache; read what you need.")]
    for n in range(rounds):
        path = SOURCES[n % len(SOURCES)]
        call = {"name": "read_file", "args": {"path": str(path.name)}, "id": f"call_{n}"}
        yield [AIMessage(f"Reading {path.name}.", tool_calls=[call]),
               ToolMessage(path.read_text(encoding="utf-8")[:6_000], tool_call_id=f"call_{n}")]
        if n % 4 == 3:
            yield [AIMessage(f"Noted {path.name}."), HumanMessage("Go on; mind the cut.")]


def marks_in(body: dict[str, Any]) -> int:
    return json.dumps(body).count('"prompt_cache_breakpoint"')


@pytest.mark.slow
@pytest.mark.parametrize("output", ["openai", "responses"])
def test_gpt_56_session_requests_are_accepted_with_their_marks(server: Server, output: str) -> None:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0)
    planner = ctxwin.Planner("gpt-5.6", context_window=13_000, reserve_output=1_000, tools=TOOLS,
                             output=output)  # type: ignore[call-overload]
    session = planner.session()
    cuts, key = 0, None
    for turn in agent_turns(24):
        session.add_messages(turn)
        plan = session.plan()
        cuts += plan.cache is not None and plan.cache.cut
        if output == "openai":
            client.chat.completions.create(**plan.request)
        else:
            client.responses.create(**plan.request)
        body = server.bodies[-1][1]
        key = key or plan.cache_key  # the session's, the same on every request
        assert key and body["prompt_cache_key"] == key and body["prompt_cache_options"] == {"mode": "explicit"}
        assert 1 <= marks_in(body) <= 4
    assert cuts >= 2  # the budget forced cuts, whose marks went through too


@pytest.mark.parametrize("output", ["openai", "responses"])
def test_a_one_off_gpt_56_plan_with_marks_is_accepted(server: Server, output: str) -> None:
    messages = [m for turn in agent_turns(3) for m in turn]
    plan = ctxwin.Planner("gpt-5.6", tools=TOOLS, output=output, reserve_output=2_000,  # type: ignore[call-overload]
                          cache_control=True).plan(messages)
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0)
    create = client.chat.completions.create if output == "openai" else client.responses.create
    create(**plan.request)  # type: ignore[operator]
    assert marks_in(server.bodies[-1][1]) == 1


@pytest.mark.slow
@pytest.mark.parametrize("gap", [20.0, 900.0])
def test_anthropic_session_requests_carry_the_lifetime_the_gap_needs(server: Server, gap: float) -> None:
    client = anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0)
    planner = ctxwin.Planner("claude-opus-4-7", context_window=14_000, reserve_output=2_000, tools=TOOLS,
                             output="anthropic")
    session = planner.session(expected_gap=gap)
    for turn in agent_turns(16):
        session.add_messages(turn)
        plan = session.plan()
        client.messages.create(**plan.request)
        body = json.dumps(server.bodies[-1][1])
        assert 0 < body.count('"cache_control"') <= 4
        assert body.count('"ttl": "1h"') == (body.count('"cache_control"') if gap > 300 else 0)


def test_the_server_refuses_marks_the_providers_refuse(server: Server) -> None:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0)
    mark = {"mode": "explicit"}
    five = [{"role": "user", "content": [{"type": "text", "text": f"part {i}", "prompt_cache_breakpoint": mark}]}
            for i in range(5)]
    with pytest.raises(openai.BadRequestError, match="at most 4"):
        client.chat.completions.create(model="gpt-5.6", messages=five)  # type: ignore[arg-type]
    part = {"type": "refusal", "refusal": "no", "prompt_cache_breakpoint": mark}
    refusal = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [part]}]
    with pytest.raises(openai.BadRequestError, match="not allowed on a refusal"):
        client.chat.completions.create(model="gpt-5.6", messages=refusal)  # type: ignore[arg-type]
    implicit = [{"role": "user", "content": [{"type": "input_text", "text": "hi",
                                              "prompt_cache_breakpoint": {"mode": "implicit"}}]}]
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model="gpt-5.6", input=implicit)  # type: ignore[arg-type]
