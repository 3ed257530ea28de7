"""In an agent run (most requests are tool rounds) a cache-stable session cuts a large tool output once, when it
arrives (``tool_output_cap``): the head and tail are sent from then on, the same bytes on every request until a cut;
outputs under the cap, pinned ones, chats' outputs and sessions with ``tool_output_cap=None`` are sent as given."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.messages import convert_to_openai_messages as to_openai
from ctxwin.planner import Planner, PlanSession
from ctxwin.strategies._pairs import find_broken_pairs
from ctxwin.strategies._pins import pin
from ctxwin.strategies._truncate import MARKER

from .test_cache_session import chat, replay, request_points
from .test_plan_properties import COUNTER
from .test_planner import conversation

EXACT = get_counter(COUNTER)
MARKER_HEAD = MARKER.split("{cut}")[0]


def as_json(message: BaseMessage) -> str:
    return json.dumps(to_openai([message]), sort_keys=True, ensure_ascii=False)


def content_tokens(message: BaseMessage) -> int:
    return EXACT.count_message(message) - EXACT.count_message(message.model_copy(update={"content": ""}))


def agent(seed: int, turns: int = 10, big_tool: int = 1_500) -> list[BaseMessage]:
    """An agent run: each task is followed by one to five tool rounds, outputs of up to ``big_tool`` words."""
    return conversation(seed, turns=turns, tool_every=1, big_tool=big_tool, rounds=5)


def in_an_agent_run(session: PlanSession[Any]) -> PlanSession[Any]:
    """``session`` after a task and three small tool rounds, each planned: an agent run from then on."""
    session.add_messages([SystemMessage("You are an agent.", id="sys"), HumanMessage("Fix the build.", id="task")])
    session.plan()
    for r in range(3):
        session.add_messages([AIMessage("", tool_calls=[{"name": "run", "args": {}, "id": f"w{r}"}], id=f"aw{r}"),
                              ToolMessage("ok", tool_call_id=f"w{r}", id=f"rw{r}")])
        session.plan()
    assert session.agent_run  # from here on, what arrives is capped
    return session


def test_a_large_output_is_cut_once_to_the_cap_and_a_small_one_is_sent_as_given() -> None:
    planner = Planner(counter=COUNTER, context_window=20_000, reserve_output=0)
    session = in_an_agent_run(planner.session(tool_output_cap=0.02))  # 400 tokens
    big = ToolMessage(" ".join(f"line{i}" for i in range(3_000)), tool_call_id="c1", id="big")
    small = ToolMessage("ok " * 50, tool_call_id="c2", id="small")
    calls = [{"name": "run", "args": {}, "id": "c1"}, {"name": "run", "args": {}, "id": "c2"}]
    session.add_messages([AIMessage("", tool_calls=calls), big, small])
    sent = {m.id: m for m in session.plan().messages}
    assert content_tokens(big) > 400
    cut = sent["big"]
    assert MARKER_HEAD in cut.text and cut.text.startswith("line0 ") and cut.text.endswith("line2999")
    assert 300 < content_tokens(cut) <= 400 + EXACT.count_text(MARKER.format(cut=10**6))
    assert cut.artifact == big.content  # the full output is kept beside what is sent
    assert sent["small"] is small


def test_the_cut_output_is_sent_with_the_same_bytes_until_a_cut() -> None:
    planner = Planner(counter=COUNTER, context_window=6_000, reserve_output=0)
    session = planner.session(tool_output_cap=0.05)
    seen: dict[str, str] = {}
    changed_between_cuts = 0
    cuts = 0
    for plan, _ in replay(session, agent(3, turns=40)):
        assert plan.cache is not None
        cuts += plan.cache.cut
        for message in plan.messages:
            if isinstance(message, ToolMessage):
                text = as_json(message)
                if not plan.cache.cut and seen.get(str(message.id), text) != text:
                    changed_between_cuts += 1
                seen[str(message.id)] = text
    assert cuts > 2 and changed_between_cuts == 0
    assert any(MARKER_HEAD in json.loads(text)[0]["content"] for text in seen.values())


def test_the_cap_follows_the_budget() -> None:
    output = ToolMessage(" ".join(f"w{i}" for i in range(4_000)), tool_call_id="c1", id="out")
    turn = [AIMessage("", tool_calls=[{"name": "run", "args": {}, "id": "c1"}]), output]
    sizes = []
    for window in (10_000, 40_000):
        planner = Planner(counter=COUNTER, context_window=window, reserve_output=0)
        session = in_an_agent_run(planner.session(tool_output_cap=0.05))
        session.add_messages(turn)
        sizes.append(content_tokens(next(m for m in session.plan().messages if m.id == "out")))
    assert 400 < sizes[0] <= 500 + 20 and 1_800 < sizes[1] <= 2_000 + 20


def test_by_default_with_no_cap_refit_and_chats_the_outputs_are_sent_as_given() -> None:
    history = agent(5, turns=3, big_tool=800)
    outputs = [m for m in history if isinstance(m, ToolMessage)]
    planner = Planner(counter=COUNTER, context_window=200_000, reserve_output=0)

    def sent_whole(session: PlanSession[Any], messages: list[BaseMessage]) -> list[bool]:
        plans = replay(session, messages)
        last = plans[-1][0].messages
        return [any(m is output for m in last) for output in messages if isinstance(output, ToolMessage)]

    for options in ({}, {"tool_output_cap": None}, {"cache_stable": False, "tool_output_cap": 0.001}):
        assert all(sent_whole(planner.session(**options), history))  # type: ignore[arg-type]
    assert not all(sent_whole(planner.session(tool_output_cap=0.001), history))
    assert len(outputs) > 4
    talk = conversation(5, turns=12, tool_every=1, big_tool=800)  # one tool round a question: a chat
    assert all(sent_whole(planner.session(tool_output_cap=0.001), talk))


def test_pinned_outputs_are_not_cut() -> None:
    pinned = pin(ToolMessage("data " * 3_000, tool_call_id="c1", id="keep"))
    planner = Planner(counter=COUNTER, context_window=20_000, reserve_output=0)
    session = in_an_agent_run(planner.session(tool_output_cap=0.01))
    session.add_messages([AIMessage("", tool_calls=[{"name": "run", "args": {}, "id": "c1"}]), pinned])
    assert any(m is pinned for m in session.plan().messages)


def test_an_agent_run_is_told_from_a_chat_by_its_requests() -> None:
    planner = Planner(counter=COUNTER, context_window=8_000, reserve_output=0)
    run = planner.session()
    replay(run, agent(7, turns=12))
    talk = planner.session()
    replay(talk, chat(40))
    assert run.agent_run and not talk.agent_run


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 100_000), window=st.integers(3_000, 12_000), cap=st.sampled_from([None, 0.02, 0.1, 0.5]),
       low_water=st.sampled_from([0.3, 0.6, 0.9]))
def test_agent_session_invariants(seed: int, window: int, cap: float | None, low_water: float) -> None:
    """Random agent runs with large outputs: every request fits, keeps its tool pairs and the last user message,
    and between cuts sends the previous request byte for byte, outputs cut on arrival included."""
    planner = Planner(counter=COUNTER, context_window=window, reserve_output=0)
    session = planner.session(tool_output_cap=cap, low_water=low_water)
    previous: list[str] | None = None
    messages = agent(seed, turns=15, big_tool=2_500)
    capped: set[Any] = set()  # the outputs that came in an agent run
    done = 0
    for end in request_points(messages):
        if session.agent_run:
            capped.update(m.id for m in messages[done:end] if isinstance(m, ToolMessage))
        session.add_messages(messages[done:end])
        plan, history, done = session.plan(), messages[:end], end
        sent = list(plan.messages)
        assert plan.cache is not None
        if not plan.fits:
            assert not planner.plan(history).fits
            previous = None
            continue
        assert EXACT.count_messages(sent) <= planner.budget.max_input_tokens
        assert not find_broken_pairs(sent)
        last_user = next(m for m in reversed(history) if isinstance(m, HumanMessage))
        assert any(m is last_user for m in sent)
        now = [as_json(m) for m in sent]
        if previous is not None and not plan.cache.cut:
            assert now[: len(previous)] == previous
        if cap is not None:
            limit = int(cap * planner.budget.max_input_tokens) + EXACT.count_text(MARKER.format(cut=10**6)) + 8
            assert all(content_tokens(m) <= limit for m in sent if m.id in capped)
        if plan.cache.cut or all(step.name != "repair_tool_pairs" for step in plan.steps):
            previous = now


@pytest.mark.parametrize(("seed", "window", "cap", "low_water"), [(1, 3_000, 0.02, 0.6), (2, 9_000, None, 0.3)])
def test_agent_session_invariants_on_two_runs(seed: int, window: int, cap: float | None, low_water: float) -> None:
    """The property on two fixed runs, capped and not (the fast tier's; the slow tier draws 30)."""
    test_agent_session_invariants.hypothesis.inner_test(seed, window, cap, low_water)  # type: ignore[attr-defined]


@pytest.mark.parametrize("cap", [0, 1.5, -0.1, True, "0.1"])
def test_a_bad_cap_is_refused(cap: Any) -> None:
    with pytest.raises(ValueError, match="tool_output_cap"):
        Planner("gpt-4o").session(tool_output_cap=cap)


def test_an_oversize_output_is_cut_on_arrival_in_a_chat_and_sent_alike_until_a_cut() -> None:
    """With no cap, in a chat: an output over half the budget (two never fit one request) is cut once, when it
    arrives, to an eighth of the budget and sent with the same bytes after; one under half is sent whole; the
    oversize outputs of many turns cost a cut every few requests, not one each."""
    planner = Planner(counter=COUNTER, context_window=8_000, reserve_output=0)
    budget = planner.budget.max_input_tokens
    session = planner.session()
    session.add_messages([SystemMessage("You read logs.", id="sys")])
    calls = cuts = 0
    sent_as: dict[str, str] = {}
    for turn in range(12):
        words = 400 + (turn * 1_711) % 9_000  # 0.05 to about 1.5 budgets
        output = ToolMessage(" ".join(f"t{turn}w{i}" for i in range(words)), tool_call_id=f"c{turn}", id=f"o{turn}")
        for added in ([HumanMessage(f"Read log {turn}.", id=f"u{turn}")],
                      [AIMessage("", tool_calls=[{"name": "read", "args": {}, "id": f"c{turn}"}], id=f"a{turn}"),
                       output]):
            session.add_messages(added)
            plan = session.plan()
            assert plan.fits and plan.cache is not None
            calls, cuts = calls + 1, cuts + plan.cache.cut
            for message in plan.messages:
                if isinstance(message, ToolMessage) and not plan.cache.cut:
                    assert sent_as.setdefault(str(message.id), as_json(message)) == as_json(message)
                elif isinstance(message, ToolMessage):
                    sent_as[str(message.id)] = as_json(message)
        new = next(m for m in plan.messages if m.id == output.id)
        if EXACT.count_message(output) > budget / 2:
            assert new.artifact == output.content and content_tokens(new) <= budget / 8 + 20
        else:
            assert new is output
        session.add_messages([AIMessage(f"Log {turn} read.", id=f"r{turn}")])
    assert cuts * 3 <= calls, f"{cuts} cuts in {calls} requests"
