"""A PlanSession plans a growing conversation turn by turn, tokenizing only what was appended and what the cut
needs; with ``cache_stable=False`` each plan equals ``Planner.plan`` of all its messages (the cache-stable default
is tested in test_cache_session.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.messages import BaseMessage, HumanMessage
from ctxwin.planner import Plan, Planner
from ctxwin.strategies._pins import pin
from ctxwin.strategies._salience import extractive_summarizer

from .test_lazy_planning import RecordingCounter
from .test_plan_properties import COUNTER, TOOLS, random_conversation
from .test_planner import conversation


def report(plan: Plan) -> tuple[Any, ...]:
    """Everything a plan says, its lazy figures and labels included."""
    return (plan.messages, plan.fits, plan.tokens_before, plan.tokens_after, plan.warnings, plan.system_tokens,
            plan.recent_turns_verbatim, [step.as_dict() for step in plan.steps])


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 100_000),
    window=st.integers(150, 5_000),
    summarize=st.booleans(),
    keep_last=st.none() | st.integers(0, 6),
    tools=st.booleans(),
    cuts=st.lists(st.integers(1, 8), min_size=1, max_size=6),
)
def test_each_session_plan_equals_planning_all_its_messages(
    seed: int, window: int, summarize: bool, keep_last: int | None, tools: bool, cuts: list[int]
) -> None:
    messages, _ = random_conversation(seed)
    planner = Planner(counter=COUNTER, context_window=window, reserve_output=0, keep_last=keep_last,
                      tools=TOOLS if tools else None, summarizer=extractive_summarizer if summarize else None)
    session = planner.session(cache_stable=False)
    added = 0
    for size in [*cuts, len(messages)]:
        if added == len(messages):
            break
        session.add_messages(messages[added : added + size])
        added = min(added + size, len(messages))
        assert len(session) == added
        assert report(session.plan()) == report(planner.plan(messages[:added]))


@pytest.mark.slow
def test_a_turn_tokenizes_only_the_new_messages() -> None:
    messages = conversation(5, turns=600, big_tool=300)
    counter = RecordingCounter()
    session = Planner(counter=counter, context_window=4000, reserve_output=0).session(messages)
    first = session.plan()
    assert first.fits
    history = {m.text for m in messages if m.text}
    for turn in range(20):
        before = counter.texts
        question = f"one more question, number {turn}"
        session.add_messages([HumanMessage(question, id=f"new{turn}")])
        plan = session.plan()
        assert plan.fits and plan.messages[-1].id == f"new{turn}"
        tokenized = counter.seen[before:]
        assert question in tokenized
        assert not history.intersection(tokenized), "a turn tokenized a message of the history again"
        assert len(tokenized) <= 4  # the new message, and the truncation marker and empty framings


def test_pins_added_in_a_later_turn_are_kept() -> None:
    messages = conversation(6, turns=200)
    for stable in (False, True):
        session = Planner(counter=COUNTER, context_window=1500, reserve_output=0).session(
            messages[:100], cache_stable=stable
        )
        assert session.plan().fits
        session.add_messages([pin(messages[100]), *messages[101:]])
        plan = session.plan()
        assert plan.fits and any(m.id == messages[100].id for m in plan.messages)
        if not stable:
            expected = session.planner.plan([*messages[:100], pin(messages[100]), *messages[101:]])
            assert report(plan) == report(expected)


def test_the_session_forgets_the_copies_of_past_plans() -> None:
    """Each turn's truncated tool outputs are new copies; the session's counts stay bounded by the conversation."""
    messages = conversation(7, turns=30, tool_every=1, big_tool=2000)
    for stable in (False, True):
        session = Planner(counter=COUNTER, context_window=6000, reserve_output=0).session(messages,
                                                                                          cache_stable=stable)
        most = 0
        for turn in range(60):
            session.add_messages([HumanMessage(f"q{turn}", id=f"q{turn}")])
            assert session.plan().fits
            most = max(most, session.counted)
        # a re-fit counts new copies every turn; a cache-stable session only at its cuts
        assert (stable or len(session) < most) and most <= 3 * len(session) + 64


def test_aplan_equals_plan() -> None:
    messages = conversation(8, turns=40)
    planner = Planner(counter=COUNTER, context_window=1200, reserve_output=0)
    sessions = [planner.session(messages), planner.session(messages)]
    for turn in range(5):
        for session in sessions:
            session.add_messages([HumanMessage(f"question {turn} " * 20, id=f"q{turn}")])
        assert report(asyncio.run(sessions[0].aplan())) == report(sessions[1].plan())


def test_messages_are_a_copy() -> None:
    session = Planner(counter=COUNTER, context_window=1200, reserve_output=0).session(
        [HumanMessage("hi", id="h")]
    )
    copied: list[BaseMessage] = session.messages
    copied.clear()
    assert len(session) == 1
