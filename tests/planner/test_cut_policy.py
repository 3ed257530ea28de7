"""The cut policy on its own: the low-water mark from how long the turns are, agent runs and their tool-output cap,
the target a cut plans down to, the head it keeps, when an appended request still fits, and the planner runs a cut
asks for when one does not work."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import Planner
from ctxwin.planner._cache_policy import CachePolicy
from ctxwin.planner._cut_policy import AGENT_LOW_WATER, DEFAULT_LOW_WATER, CutPolicy
from ctxwin.planner._planning import Planned
from ctxwin.strategies._meter import Meter

GPT4O = get_counter("gpt-4o")
BUDGET = 10_000


def words(tokens: int, tag: str = "w") -> str:
    """About ``tokens`` tokens of text (one a word)."""
    return " ".join(f"{tag}{k % 50}" for k in range(tokens // 2))


def make(model: str = "gpt-4o", planner_options: dict[str, Any] | None = None, **options: Any) -> CutPolicy:
    planner: Planner[Any] = Planner(model, context_window=BUDGET, reserve_output=0, **(planner_options or {}))
    config = planner.config.replace(**options)
    meter = Meter(planner.counter)
    return CutPolicy(planner, config, CachePolicy(planner, config, meter), meter)


def tool_round(call_id: str, tokens: int = 20) -> list[BaseMessage]:
    return [AIMessage("", tool_calls=[{"name": "grep", "args": {"q": "x"}, "id": call_id}]),
            ToolMessage(words(tokens, "out"), tool_call_id=call_id)]


def test_the_low_water_mark_follows_how_long_the_user_turns_are() -> None:
    cut = make()
    assert (cut.turn_length, cut.low_water, cut.agent_run) == (0.0, DEFAULT_LOW_WATER, False)
    question = HumanMessage(words(BUDGET // 10))  # about a tenth of the budget: between short and long
    cut.note([question])
    share = GPT4O.count_message(question) / BUDGET
    assert cut.turn_length == pytest.approx((share - 0.05) / 0.1)
    assert AGENT_LOW_WATER < cut.low_water < DEFAULT_LOW_WATER
    cut.note([HumanMessage(words(BUDGET // 2))])
    assert cut.turn_length == 1.0 and cut.low_water == AGENT_LOW_WATER
    fixed = make(low_water=0.8)
    fixed.note([HumanMessage(words(BUDGET // 2))])
    assert fixed.low_water == 0.8


def test_an_agent_run_is_mostly_tool_rounds_and_caps_new_tool_outputs() -> None:
    cut = make(tool_output_cap=0.1)
    cut.note([HumanMessage("Fix the failing test.")])
    assert not cut.agent_run and cut.tool_output_cap() is None
    for k in range(3):
        cut.note(tool_round(f"c{k}"))
    assert cut.agent_run and cut.tool_output_cap() == math.floor(0.1 * BUDGET)
    for _ in range(3):
        cut.note([HumanMessage("And then?")])
    assert not cut.agent_run
    uncapped, refitting = make(), make(tool_output_cap=0.1, cache_stable=False)
    for policy in (uncapped, refitting):
        for k in range(3):
            policy.note(tool_round(f"c{k}"))
        assert policy.agent_run and policy.tool_output_cap() is None


def test_the_target_leaves_room_for_the_recent_growth() -> None:
    system = [SystemMessage(words(1_500))]  # over gpt-4o's 1,024-token minimum: a cut reads it from the cache
    cut = make(low_water=0.9)
    assert cut.target(system) == math.floor(BUDGET - (1 - 0.9) * BUDGET)
    growth = HumanMessage(words(2_000))
    cut.note([growth])
    assert cut.target(system) == BUDGET - GPT4O.count_message(growth)  # one request's growth (writes cost nothing)
    # A cut that reads nothing from the cache leaves room for ten requests' growth, at most 60% of the budget.
    assert cut.target([SystemMessage("Be brief.")]) == math.floor(BUDGET - 0.6 * BUDGET)


def agent_start() -> list[BaseMessage]:
    return [SystemMessage("You are a coding agent."), HumanMessage(words(600, "task")), *tool_round("c0", 600),
            AIMessage("Found it."), HumanMessage("Now fix it."), *tool_round("c1", 200), AIMessage("Done.")]


def test_the_head_reaches_the_minimum_prefix_and_ends_after_a_whole_tool_round() -> None:
    sent = agent_start()
    cut = make()
    cut.choose_head(sent)
    assert cut.head_chosen and cut.head == tuple(sent[1:4])  # the task alone is under 1,024 tokens: its round too
    narrow = make(keep_first=0.1)  # 1,000 tokens cannot hold the task and its whole round
    narrow.choose_head(sent)
    assert narrow.head_chosen and narrow.head == ()
    headless = make(keep_first=None)
    headless.choose_head(sent)
    assert headless.head == ()
    summarized = make("claude-sonnet-4-5", {"output": "anthropic", "summarizer": lambda m: "summary", "counter": GPT4O})
    summarized.choose_head(sent)  # a summary would follow the head: a system message only goes first
    assert summarized.head == ()


def test_an_appended_request_fits_while_it_is_within_the_budget() -> None:
    cut = make()
    assert cut.appended_fits([SystemMessage("Be brief."), HumanMessage(words(BUDGET // 2))])
    assert not cut.appended_fits([SystemMessage("Be brief."), HumanMessage(words(3 * BUDGET))])


def planned(messages: list[BaseMessage], window: int = BUDGET) -> Planned[Any]:
    """A real planner run: it fits when ``window`` holds what must stay."""
    planner: Planner[Any] = Planner("gpt-4o", context_window=window, reserve_output=0)
    return planner.plan_run(messages, Meter(GPT4O))


def asked(cut: CutPolicy, results: Sequence[Planned[Any]], candidate: list[BaseMessage],
          view: list[BaseMessage], appended: bool = True) -> tuple[list[tuple[Any, int | None, bool]], Planned[Any]]:
    """The runs a cut asks for (the messages as ``candidate``/``view``, the target, whether whole) when each is
    answered by the next of ``results``, and what the cut returns."""
    runs: list[tuple[Any, int | None, bool]] = []
    names = {id(candidate): "candidate", id(view): "view"}
    cutting = cut.cut(candidate, appended, view, candidate, lambda m, target, whole: (names[id(m)], target, whole))
    run = next(cutting)
    for result in results:
        runs.append(run)
        try:
            run = cutting.send(result)
        except StopIteration as stop:
            return runs, stop.value
    raise AssertionError(f"the cut asked for more than {len(results)} runs: {runs}")


def test_a_cut_asks_again_only_for_what_did_not_work() -> None:
    sent = agent_start()
    view = list(sent)
    fits, over = planned(sent), planned(sent, window=20)
    assert fits.plan.fits and not over.plan.fits
    cut = make(keep_first=None)
    target = cut.target(sent)
    assert asked(cut, [fits], sent, view) == ([("candidate", target, False)], fits)
    # the low-water mark below what must stay: to the budget; then what the last cut made: from every message
    runs, _ = asked(make(keep_first=None), [over, over, fits], sent, view)
    assert runs == [("candidate", target, False), ("candidate", None, False), ("view", None, True)]
    # before the first request there is no last cut to start afresh from
    runs, last = asked(make(keep_first=None), [over, over], sent, view, appended=False)
    assert runs == [("candidate", target, True), ("candidate", None, False)] and last is over


def test_a_cut_that_loses_its_head_goes_on_without_it() -> None:
    sent = agent_start()
    cut = make()
    cut.note([HumanMessage(words(600))])
    cut.choose_head(sent)
    assert cut.head
    without_head = planned([sent[0], *sent[4:]])
    assert without_head.plan.fits and not cut.head_kept(without_head, sent) and cut.head_kept(planned(sent), sent)
    # the head in place but the newest tool round gone: the head goes instead of it
    assert not cut.head_kept(planned(sent[:-1]), sent)
    runs, _ = asked(cut, [without_head, planned(sent)], sent, list(sent))
    assert [target is None for _, target, _ in runs] == [False, False] and cut.head == ()
    assert runs[1][1] == cut.target(sent) != runs[0][1]  # without a head the cut reads nothing: a lower target
