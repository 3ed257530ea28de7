"""``observe`` with Anthropic's context editing (issue 51, item 2): ctxwin counts a request before the provider
edits it, so the tokens the provider's ``clear_tool_uses`` / ``clear_thinking`` cleared (its reply's
``context_management.applied_edits``) are added back before the ratio corrects the budget: what the provider cleared
is not taken for the counter's over-count."""

from __future__ import annotations

import pytest

from ctxwin.messages import AIMessage, HumanMessage, ToolMessage
from ctxwin.planner import Planner


def agent_turns() -> list[object]:
    out: list[object] = [HumanMessage("read the files")]
    for i in range(4):
        out += [AIMessage("", tool_calls=[{"name": "read", "args": {"path": f"f{i}"}, "id": f"c{i}"}]),
                ToolMessage(f"contents {i} " + "line of text " * 80, tool_call_id=f"c{i}")]
    return [*out, HumanMessage("summarise them")]


def observed(usage_of: float, cleared: int | None) -> int:
    planner = Planner(counter="approximate", context_window=50_000, reserve_output=1_000)
    session = planner.session(agent_turns())
    counted = session.plan().tokens_after
    editing = None if cleared is None else {"applied_edits": [
        {"type": "clear_tool_uses_20250919", "cleared_tool_uses": 3, "cleared_input_tokens": cleared}]}
    session.observe({"input_tokens": int(counted * usage_of) - (cleared or 0), "output_tokens": 1},
                    context_management=editing)
    return session.max_input_tokens


def test_what_the_provider_cleared_is_added_back_before_the_ratio() -> None:
    exact = observed(1.0, None)  # the provider counted what ctxwin counted, nothing cleared
    assert observed(1.0, 900) == exact  # it cleared 900 tokens: the same budget, not room given back
    assert observed(1.0, None) < observed(0.8, None)  # (an over-count without editing does give room back)


def test_a_reply_without_applied_edits_is_refused_by_name() -> None:
    session = Planner(counter="approximate", context_window=50_000, reserve_output=1_000).session(agent_turns())
    session.plan()
    with pytest.raises(ValueError, match="context_management must be a reply's context_management"):
        session.observe({"input_tokens": 100, "output_tokens": 1}, context_management={"edits": []})
