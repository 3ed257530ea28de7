"""Media moved out of a tool result (``place_media``, chat completions output) is part of that tool round, not a
user turn: a plan keeps the real last user message (the inserted message is never taken for it), and a session
decides whether the appended request fits on the request as sent, so ``cut=False`` means the previous request plus
every new message."""

from __future__ import annotations

from typing import Any

import pytest

import ctxwin
from ctxwin.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import Planner

PNG = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5E"
       "rkJggg==")
TOOLS = [{"type": "function", "function": {"name": "screenshot", "parameters": {"type": "object"}}}]
QUESTION = "Open the dashboard and tell me what the revenue chart shows for March."


def screenshot_round(call_id: str = "c1") -> list[Any]:
    return [AIMessage("", tool_calls=[{"name": "screenshot", "args": {}, "id": call_id}]),
            ToolMessage([{"type": "text", "text": "screenshot taken"},
                         {"type": "image_url", "image_url": {"url": PNG}}], tool_call_id=call_id)]


def conversation() -> list[Any]:
    return [SystemMessage("You drive a browser."), HumanMessage("an earlier question " * 60),
            AIMessage("an earlier answer " * 60), HumanMessage(QUESTION), *screenshot_round()]


@pytest.mark.parametrize("window", range(60, 700, 20))
def test_the_real_last_user_message_is_kept_not_the_moved_image(window: int) -> None:
    plan = ctxwin.fit(conversation(), "gpt-4o", context_window=window, reserve_output=0, output="openai",
                      tools=TOOLS)
    alone = ctxwin.fit([SystemMessage("You drive a browser."), HumanMessage(QUESTION)], "gpt-4o",
                       context_window=window, reserve_output=0, tools=TOOLS)
    if alone.fits:  # the must-keep part fits: it is kept
        assert plan.fits
        assert {"role": "user", "content": QUESTION} in plan.messages
    if plan.messages[-1]["role"] != "user" or plan.messages[-1]["content"] == QUESTION:  # the round was dropped
        assert any("the last turn" in w for w in plan.warnings) or not plan.fits


@pytest.mark.parametrize("window", range(300, 700, 6))
def test_a_session_that_appends_sends_the_previous_request_and_every_new_message(window: int) -> None:
    planner = Planner("gpt-4o", context_window=window, reserve_output=0, output="openai", tools=TOOLS)
    session = planner.session([SystemMessage("You drive a browser."), HumanMessage(QUESTION * 3)])
    first = session.plan()
    session.add_messages(screenshot_round())
    second = session.plan()
    assert second.cache is not None
    if not second.cache.cut:
        assert second.messages[: len(first.messages)] == first.messages
        assert len(second.messages) == len(first.messages) + 3  # the call, its result and the moved image
    assert second.fits
