"""Type in = type out for a PlanSession: turns of LangChain messages give LangChain plans (the kept messages the
caller's own objects), turns of OpenAI dicts with output="openai" give the caller's dicts; a mix gives ctxwin's."""

from __future__ import annotations

from typing import Any

import pytest

import ctxwin
from ctxwin.messages import BaseMessage, HumanMessage

lc = pytest.importorskip("langchain_core.messages")


def turns() -> list[list[Any]]:
    return [
        [lc.SystemMessage("Be brief."), lc.HumanMessage("Read the log.")],
        [lc.AIMessage("", tool_calls=[{"name": "read_log", "args": {}, "id": "call_1"}]),
         lc.ToolMessage("line\n" * 5000, tool_call_id="call_1")],
        [lc.HumanMessage("Summarise it.")],
    ]


def test_a_session_of_langchain_turns_plans_langchain_messages() -> None:
    session = ctxwin.Planner("gpt-4o", context_window=2000, reserve_output=200).session()
    given = []
    for turn in turns():
        session.add_messages(turn)
        given += turn
        plan = session.plan()
        assert all(isinstance(m, lc.BaseMessage) for m in plan.messages)
    assert [m is g for m, g in zip(plan.messages, given, strict=True)] == [True, True, True, False, True]
    assert isinstance(plan.messages[3], lc.ToolMessage) and len(plan.messages[3].content) < 5000 * 5
    assert all(m is g for m, g in zip(session.messages, given, strict=True))
    session.add_messages(lc.HumanMessage("One message alone is a turn too."))
    assert isinstance(session.plan().messages[-1], lc.HumanMessage)


def test_a_mixed_session_plans_ctxwin_messages() -> None:
    session = ctxwin.Planner("gpt-4o").session(turns()[0])
    session.add_messages([HumanMessage("a ctxwin message")])
    assert all(isinstance(m, BaseMessage) for m in session.plan().messages)
    assert all(isinstance(m, BaseMessage) for m in session.messages)


def test_a_session_of_openai_dicts_gives_the_callers_dicts() -> None:
    first = {"role": "user", "content": "hi", "x_trace": 1}
    call = {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    session = ctxwin.Planner("gpt-4o", output="openai").session([first])
    session.add_messages(call)
    session.add_messages([{"role": "tool", "tool_call_id": "c1", "content": "ok"}])
    messages = session.plan().messages
    assert messages[0] is first and messages[1] is call and messages[1]["content"] is None
