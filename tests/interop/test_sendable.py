"""Provider output is sendable as built: ``client.messages.create(**plan.request)`` with the real Anthropic SDK (its
own non-streaming rule, then the strict local server) takes what a default plan or session builds, and a reply
limit the SDK would refuse without streaming comes with a warning that names streaming."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

import ctxwin
from ctxwin.counters import get_model
from ctxwin.messages import AIMessage, HumanMessage, SystemMessage
from ctxwin.planner import Planner

from .strict_server import Server, strict_server

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

CLAUDES = ["claude-sonnet-4-5", "claude-opus-4-1", "claude-opus-4-5", "claude-haiku-4-5", "claude-opus-4",
           "claude-sonnet-4", "claude-3-7-sonnet"]


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with strict_server() as running:
        yield running


def client(server: Server) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0)


def chat() -> list[Any]:
    return [SystemMessage("You are terse."), HumanMessage("Hi"), AIMessage("Hello."), HumanMessage("Plan a trip.")]


@pytest.mark.parametrize("model", CLAUDES)
def test_a_default_anthropic_plan_is_sent_without_streaming_under_every_name_of_the_model(
    server: Server, model: str
) -> None:
    plan = ctxwin.fit(chat(), model, output="anthropic")
    assert not [w for w in plan.warnings if "stream" in w]
    for name in (model, *get_model(model).aliases):  # the SDK's per-model limits are keyed by dated ids
        client(server).messages.create(**{**plan.request, "model": name})
        assert server.bodies[-1] == ("/v1/messages", {**plan.request, "model": name})


def test_a_default_anthropic_session_is_sent_without_streaming(server: Server) -> None:
    session = Planner("claude-sonnet-4-5", output="anthropic").session(chat())
    for turn in range(3):
        client(server).messages.create(**session.plan().request)
        session.add_messages([AIMessage(f"answer {turn}"), HumanMessage(f"question {turn}")])


def test_a_request_in_anthropic_form_gets_a_sendable_default_limit(server: Server) -> None:
    request = {"system": "You are terse.", "messages": [{"role": "user", "content": "Hi"}]}
    plan = Planner("claude-sonnet-4-5", output="request").plan(request)
    client(server).messages.create(**plan.request)


def test_a_reply_limit_that_needs_streaming_is_a_warning_naming_streaming(server: Server) -> None:
    plan = ctxwin.fit(chat(), "claude-sonnet-4-5", output="anthropic", reserve_output=40_000)
    assert plan.request["max_tokens"] == 40_000  # what the caller asked for
    (warning,) = [w for w in plan.warnings if "stream" in w]
    assert "client.messages.stream" in warning
    with pytest.raises(ValueError, match="Streaming is required"):  # the warning is the SDK's own rule
        client(server).messages.create(**plan.request)
    opus = ctxwin.fit(chat(), "claude-opus-4-1", output="anthropic", reserve_output=10_000)
    assert any("8192" in w for w in opus.warnings)
    with pytest.raises(ValueError, match="Streaming is required"):  # Opus 4's lower limit, by its SDK id
        client(server).messages.create(**{**opus.request, "model": "claude-opus-4-0"})


@pytest.mark.parametrize("window", [8_000, 200_000])
def test_no_reserved_output_still_sends_a_valid_max_tokens(server: Server, window: int) -> None:
    plan = ctxwin.fit(chat(), "claude-sonnet-4-5", context_window=window, reserve_output=0, output="anthropic")
    limit = plan.request["max_tokens"]
    assert limit == max(1, min(plan.budget.max_input_tokens - plan.tokens_after, 21_333))
    client(server).messages.create(**plan.request)
    bare = Planner(counter="approximate", context_window=window, output="anthropic").plan(chat())
    client(server).messages.create(model="claude-sonnet-4-5", **bare.request)


SIGNED = {"type": "thinking", "thinking": "The user wants a plan.", "signature": "c2lnbmVk"}
TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "Look a word up",
                                           "parameters": {"type": "object"}}}]
MARK = {"type": "ephemeral"}


def marked_chat() -> list[Any]:
    """A conversation carrying the caller's own cache_control marks (system and a user block)."""
    return [
        SystemMessage([{"type": "text", "text": "You are terse.", "cache_control": MARK},
                       {"type": "text", "text": "Answer in English.", "cache_control": MARK}]),
        HumanMessage([{"type": "text", "text": "A long document. " * 50, "cache_control": MARK},
                      {"type": "text", "text": "Summarise it."}]),
    ]


def test_session_breakpoints_with_the_callers_own_marks_stay_within_four(server: Server) -> None:
    session = Planner("claude-sonnet-4-5", tools=TOOLS, output="anthropic").session(marked_chat())
    for turn in range(3):
        request = session.plan().request
        client(server).messages.create(**request)
        assert "cache_control" in request["messages"][-1]["content"][-1]  # the newest prefix is still written
        session.add_messages([AIMessage(f"answer {turn}"), HumanMessage(f"question {turn}")])


@pytest.mark.parametrize("reply", [
    AIMessage([SIGNED]),  # a turn that only thought
    AIMessage(""),  # an empty reply (Anthropic's form: one empty text block when marked)
    AIMessage([{"type": "redacted_thinking", "data": "cmVkYWN0ZWQ="}]),
])
def test_breakpoints_never_land_on_empty_text_or_thinking(server: Server, reply: AIMessage) -> None:
    for block in reply.content if isinstance(reply.content, list) else []:
        server.issued.add_thinking(block)
    session = Planner("claude-sonnet-4-5", output="anthropic").session(
        [SystemMessage("You are terse."), HumanMessage("Plan a trip."), reply])
    client(server).messages.create(**session.plan().request)  # the last message
    session.add_messages(HumanMessage("And the budget?"))
    request = session.plan().request  # the previous request's last message is marked too
    client(server).messages.create(**request)
    assert "cache_control" in request["messages"][0]["content"][-1]  # moved to the nearest block before
