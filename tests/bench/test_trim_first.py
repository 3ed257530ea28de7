"""``TrimToBudget(strategy="first")``: the oldest messages that fit beside the must-keep part, ending on a reply."""

from __future__ import annotations

import pytest
from bench_support import generated, turn
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.cli._bench.metrics import tool_pairs_intact
from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from ctxwin.planner import Planner
from ctxwin.strategies._pins import pin
from ctxwin.strategies._trim import TrimToBudget

COUNTER = "tiktoken:o200k_base"


def first(window: int) -> Planner:
    # recall_share=0, ledger_share=0: these tests check what the trim keeps (recall and the ledger would add a
    # message of their own)
    return Planner(None, [TrimToBudget(strategy="first")], counter=COUNTER, context_window=window, reserve_output=0,
                   recall_share=0, ledger_share=0)


def test_keeps_the_oldest_whole_turns_and_the_last_question() -> None:
    history = [m for i in range(6) for m in turn(i, tool=i % 2 == 1)]
    messages = [SystemMessage("be brief", id="sys"), *history, HumanMessage("the last question", id="last")]
    counter = get_counter(COUNTER)
    head = messages[:1] + history[:8] + messages[-1:]  # turns 0-2 (turn 1 has a tool call)
    window = counter.count_messages(head) + 5  # room for turns 0-2, not for turn 3's question and answer
    plan = first(window).plan(messages)
    assert [m.id for m in plan.messages] == [m.id for m in head]
    assert plan.fits and plan.tokens_after <= window


def test_the_kept_head_ends_on_an_assistant_reply() -> None:
    messages = [HumanMessage("q0 " * 5, id="u0"), AIMessage("a0", id="a0")]
    messages += [HumanMessage("q1 " * 200, id="u1"), AIMessage("a1", id="a1"), HumanMessage("last", id="last")]
    counter = get_counter(COUNTER)
    # room for u0, a0 and the long u1 but not its answer: u1 would be a question without its answer
    window = counter.count_messages([messages[0], messages[1], messages[2], messages[4]]) + 2
    plan = first(window).plan(messages)
    assert [m.id for m in plan.messages] == ["u0", "a0", "last"]


def test_tool_partners_of_kept_messages_stay_whole() -> None:
    messages = [HumanMessage("q", id="u0"), *turn(1, tool=True)[1:], HumanMessage("last", id="last")]
    plan = first(get_counter(COUNTER).count_messages(messages) - 2).plan(messages)  # the answer cannot stay
    assert [m.id for m in plan.messages] == ["last"]  # not the call without its answer, not a dangling question
    assert tool_pairs_intact(messages, plan.messages)


def test_unknown_variant() -> None:
    with pytest.raises(ValueError, match="'middle'"):
        TrimToBudget(strategy="middle")  # type: ignore[arg-type]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), window=st.integers(150, 6000))
def test_first_never_goes_over_and_keeps_pairs_and_what_must_stay(seed: int, window: int) -> None:
    messages: list[BaseMessage] = generated(seed)
    if len(messages) > 3 and not isinstance(messages[2], AIMessage):  # a question: no tool partners to protect
        messages[2] = pin(messages[2])
    counter = get_counter(COUNTER)
    plan = first(window).plan(messages)
    must = [messages[0], *(m for m in messages if m.additional_kwargs.get("pinned"))]
    must.append(next(m for m in reversed(messages) if isinstance(m, HumanMessage)))
    if counter.count_messages(must) <= window:
        assert plan.fits and counter.count_messages(plan.messages) <= window
    assert all(any(k is m for k in plan.messages) for m in must)
    assert tool_pairs_intact(messages, plan.messages)
    order = {id(m): i for i, m in enumerate(messages)}
    positions = [order[id(m)] for m in plan.messages]
    assert positions == sorted(positions), "order kept, no message invented or changed"
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
    unprotected = [p for p in positions if not (p == 0 or p >= last_user or messages[p] in must)]
    if unprotected:  # the kept part is a head of the rest (the last turn aside) that ends on an assistant message
        rest = [i for i in range(last_user) if i != 0 and messages[i] not in must]
        assert unprotected == rest[: len(unprotected)]
        assert isinstance(messages[unprotected[-1]], AIMessage)
