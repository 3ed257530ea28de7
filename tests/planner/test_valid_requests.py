"""Valid requests out: broken tool pairs in the input are repaired (or kept, on request) and reported, no step breaks
a pair, and the fuzzing findings' reproducers (issue 19) each have a test here."""

from __future__ import annotations

from typing import Any

import pytest

from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import Planner, fit
from ctxwin.strategies._pairs import find_broken_pairs
from ctxwin.strategies._pins import is_pinned, pin
from ctxwin.strategies._summarize import is_summary
from ctxwin.trim import trim_messages

from .test_planner import COUNTER, assert_tool_pairs_intact

TOOLS = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]


def call(call_id: str, text: str = "", **extra: Any) -> AIMessage:
    return AIMessage(text, tool_calls=[{"name": "search", "args": {"q": call_id}, "id": call_id}], **extra)


def result(call_id: str, words: int = 5) -> ToolMessage:
    return ToolMessage("found " * words, tool_call_id=call_id, id=f"r-{call_id}")


def test_orphan_results_and_unanswered_calls_are_repaired_and_named() -> None:
    messages = [
        SystemMessage("sys", id="sys"),
        HumanMessage("q", id="u0"),
        result("ghost"),  # answers no call
        AIMessage("", tool_calls=[  # one call answered, one never
            {"name": "search", "args": {}, "id": "ok"}, {"name": "search", "args": {}, "id": "lost"}], id="a0"),
        result("ok"),
        result("ok"),  # a second answer to the same call: an orphan too
        call("never", id="a1"),  # nothing left of it once its call goes: dropped
        HumanMessage("last", id="u1"),
    ]
    plan = fit(messages, counter=COUNTER, model=None, context_window=10_000, reserve_output=0)
    assert not find_broken_pairs(plan.messages)
    assert [m.id for m in plan.messages] == ["sys", "u0", "a0", "r-ok", "u1"]
    assert [c["id"] for c in plan.messages[2].tool_calls] == ["ok"]
    assert plan.fits and plan.tokens_after == get_counter(COUNTER).count_messages(plan.messages)
    [step] = plan.steps
    assert step.name == "repair_tool_pairs"
    assert step.dropped_ids == ["r-ghost", "r-ok", "a1"] and step.truncated_ids == ["a0"]
    [warning] = plan.warnings
    assert "2 orphan tool results (ghost, ok)" in warning and "2 unanswered tool calls (lost, never)" in warning
    assert messages[3].tool_calls[1]["id"] == "lost", "the input is never mutated"


def test_broken_pairs_can_be_kept_and_are_still_reported() -> None:
    messages = [HumanMessage("q"), result("ghost"), HumanMessage("last")]
    plan = fit(messages, counter=COUNTER, model=None, context_window=10_000, reserve_output=0, broken_tool_pairs="keep")
    assert plan.messages == messages and not plan.steps
    assert any("1 orphan tool result (ghost)" in w and "kept" in w for w in plan.warnings)
    with pytest.raises(ValueError, match="broken_tool_pairs"):
        Planner(counter=COUNTER, context_window=100, broken_tool_pairs="fix")  # type: ignore[arg-type]


def test_a_valid_conversation_is_untouched() -> None:
    messages = [HumanMessage("q"), call("c1"), result("c1"), AIMessage("done"), HumanMessage("last")]
    plan = fit(messages, counter=COUNTER, model=None, context_window=10_000, reserve_output=0)
    assert plan.messages == messages and not plan.steps and not plan.warnings


def interrupted(n_turns: int = 6) -> list[BaseMessage]:
    """Turns whose tool result comes after a user message that interrupted the call (fuzz finding b)."""
    out: list[BaseMessage] = [SystemMessage("be brief", id="sys")]
    for t in range(n_turns):
        out += [HumanMessage(f"question {t} " * 8, id=f"u{t}"), call(f"c{t}", id=f"a{t}")]
        out += [HumanMessage(f"and also {t} " * 4, id=f"x{t}"), result(f"c{t}", 40), AIMessage(f"answer {t} " * 6)]
    return out


def test_trim_never_orphans_a_result_behind_an_interrupting_user_message() -> None:
    # Fuzz finding (b), trim: every cut point of the conversation, as trim_messages gets it right.
    messages = interrupted()
    counter = get_counter(COUNTER)
    for window in range(60, counter.count_messages(messages) + 20, 7):
        plan = fit(messages, counter=COUNTER, model=None, context_window=window, reserve_output=0,
                   strategies=["trim"])
        assert_tool_pairs_intact(messages, plan.messages)
        assert not any(w.startswith("repair_tool_pairs") for w in plan.warnings), "a step broke a pair"
        assert_tool_pairs_intact(messages, trim_messages(messages, max_tokens=window, token_counter=counter))


def test_summarize_never_orphans_a_result_behind_an_interrupting_user_message() -> None:
    # Fuzz finding (b), summarize: the span must not end between a call and its result.
    messages = interrupted()
    counter = get_counter(COUNTER)
    for window in range(150, counter.count_messages(messages) + 20, 9):
        plan = fit(messages, counter=COUNTER, model=None, context_window=window, reserve_output=0,
                   summarizer=lambda ms: f"{len(ms)} messages", strategies=["summarize", "trim"])
        assert_tool_pairs_intact(messages, plan.messages)
        assert not any(w.startswith("repair_tool_pairs") for w in plan.warnings), "a step broke a pair"


@pytest.mark.parametrize("pinned", ["call", "result"])
def test_the_tool_partner_of_a_pinned_message_is_never_summarised_away(pinned: str) -> None:
    # Fuzz finding (a): a pinned call keeps its result, a pinned result its call.
    messages: list[BaseMessage] = [SystemMessage("sys", id="sys")]
    for t in range(8):
        messages += [HumanMessage(f"question {t} " * 10, id=f"u{t}"), call(f"c{t}", id=f"a{t}"), result(f"c{t}", 60)]
        messages.append(AIMessage(f"answer {t} " * 10, id=f"b{t}"))
    messages.append(HumanMessage("last question", id="last"))
    index = 2 if pinned == "call" else 3  # turn 0, the oldest: always in the summarised span
    messages[index] = pin(messages[index])
    for window in (400, 600, 900):
        plan = fit(messages, counter=COUNTER, model=None, context_window=window, reserve_output=0,
                   summarizer=lambda ms: "earlier turns", strategies=["summarize", "trim"])
        assert any(is_summary(m) for m in plan.messages)
        ids = [m.id for m in plan.messages]
        assert "a0" in ids and "r-c0" in ids, f"the pinned {pinned} lost its partner"
        assert any(is_pinned(m) for m in plan.messages)
        assert_tool_pairs_intact(messages, plan.messages)
        assert plan.fits


def test_an_empty_fitted_request_with_tools_counts_the_reply_priming() -> None:
    # Fuzz finding (c): nothing can be kept, and the request is the tools and the reply priming.
    messages = [AIMessage("word " * 400)]
    plan = fit(messages, counter=COUNTER, model=None, context_window=200, reserve_output=0, tools=TOOLS)
    assert plan.messages == []
    assert plan.tokens_after == get_counter(COUNTER).count_messages([], tools=TOOLS) == plan.budget.tools_tokens + 3


def test_strict_never_returns_a_broken_pair_as_fitting() -> None:
    messages = [*interrupted(3), call("pending", id="tail")]  # ends with an unanswered call
    plan = fit(messages, counter=COUNTER, model=None, context_window=400, reserve_output=0, strict=True)
    assert plan.fits and not find_broken_pairs(plan.messages)


def test_a_single_strategy_name_is_a_chain_of_one() -> None:
    messages = interrupted(4)
    plan = fit(messages, counter=COUNTER, model=None, context_window=300, reserve_output=0, strategies="trim")
    assert [s.name for s in plan.steps if s.name != "ledger"] == ["trim"]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"strategies": ["trim", "shred"]}, ValueError, r"strategies\[1\]: unknown strategy 'shred'"),
        ({"strategies": [object()]}, TypeError, r"strategies\[0\] must be a registered name"),
        ({"strategies": 3}, TypeError, "strategies must be a strategy name or a list"),
        ({"summarizer": "extractive"}, TypeError, "summarizer must be callable"),
        ({"keep_last": -1}, ValueError, "keep_last must be a non-negative int"),
    ],
)
def test_option_errors_name_the_parameter(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        Planner(counter=COUNTER, context_window=1000, **kwargs)
