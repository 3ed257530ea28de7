"""An agent left to work keeps its working set: the newest tool outputs (at least the last ``WORKING_SET``) go out
whole in every request whose budget holds them with what must stay, however low a cut's target (a cut sized for the
bill does not cut what the agent works from)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import Planner
from ctxwin.strategies._base import WORKING_SET, working_set_start

from .test_cache_session import request_points
from .test_session_head import agent_run

GPT4O = get_counter("gpt-4o")


def working_set(history: list[BaseMessage], head: list[BaseMessage]) -> tuple[list[ToolMessage], list[BaseMessage]]:
    """The newest ``WORKING_SET`` tool outputs of ``history``, and what a request needs to send them whole: the
    system prompt, the session's ``head``, the last user message and the tool rounds from the one that called the
    oldest of them."""
    outputs = [m for m in history if isinstance(m, ToolMessage)][-WORKING_SET:]
    first = history.index(outputs[0])
    start = max(i for i in range(first) if isinstance(history[i], AIMessage)
                and any(call["id"] == outputs[0].tool_call_id for call in history[i].tool_calls))
    user = max(i for i, m in enumerate(history) if isinstance(m, HumanMessage))
    needed = [m for m in history[:start] if isinstance(m, SystemMessage) or m in head or m is history[user]]
    return outputs, needed + history[start:]


def check_agent_run(seed: int, window: int, rounds: int) -> int:
    """Replays an agent run in a default session: each request whose budget holds the working set with what must
    stay sends its outputs whole, but for an output a cut that could not hold them shortened, which the requests
    after it resend as they were until the next cut (the cache reads them); the number of requests checked."""
    planner = Planner("gpt-4o", context_window=window, reserve_output=0)
    session = planner.session()
    messages = agent_run(seed, rounds=rounds)
    checked = done = 0
    before: dict[str, Any] = {}  # the previous request's outputs
    held = True  # whether the last cut's budget held the working set
    for end in request_points(messages):
        session.add_messages(messages[done:end])
        done, history = end, messages[:end]
        plan = session.plan()
        sent = {m.tool_call_id: m.content for m in plan.messages if isinstance(m, ToolMessage)}
        if any(isinstance(m, ToolMessage) for m in history):
            outputs, needed = working_set(history, session.head)
            fits = GPT4O.count_messages(needed) <= planner.budget.max_input_tokens
            if plan.cache is not None and plan.cache.cut:
                held = fits
            if fits:
                checked += 1
                for output in outputs:
                    whole = sent.get(output.tool_call_id) == output.content
                    resent = not held and output.tool_call_id in before and before[output.tool_call_id] == sent.get(
                        output.tool_call_id)
                    assert whole or resent, f"request at {len(history)} messages: {output.tool_call_id}"
        before = sent
    return checked


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000), window=st.integers(6_000, 16_000), rounds=st.integers(20, 70))
def test_the_newest_tool_outputs_go_out_whole_when_they_fit(seed: int, window: int, rounds: int) -> None:
    check_agent_run(seed, window, rounds)


def test_the_newest_tool_outputs_go_out_whole_on_two_runs() -> None:
    assert check_agent_run(25, 6_000, 20) > 10
    assert check_agent_run(10, 8_000, 30) > 20


def test_the_working_set_starts_at_the_call_of_its_oldest_output() -> None:
    calls = [AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": f"c{k}"} for k in ids])
             for ids in ([1], [2, 3], [4])]
    messages: list[BaseMessage] = [
        SystemMessage("s"), HumanMessage("go"), calls[0], ToolMessage("1", tool_call_id="c1"), calls[1],
        ToolMessage("2", tool_call_id="c2"), ToolMessage("3", tool_call_id="c3"), AIMessage("so far so good"),
        calls[2], ToolMessage("4", tool_call_id="c4"),
    ]
    assert working_set_start(messages) == 4  # outputs 2, 3 and 4
    assert working_set_start(messages[:4]) == 2  # fewer outputs than the working set: all of them
    assert working_set_start(messages[:2]) is None
