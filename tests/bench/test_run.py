"""``run_bench`` in process: the JSON rows, figures on conversations where the answer is obvious, and the promise
that no built-in chain ever goes over budget."""

from __future__ import annotations

import io

import pytest
from bench_support import generated, turn

from ctxwin.batch._conversation import Conversation
from ctxwin.batch._progress import Progress
from ctxwin.cli._bench.chains import DEFAULT_CHAINS, parse_chains
from ctxwin.cli._bench.runner import BenchResult, run_bench
from ctxwin.counters import get_counter
from ctxwin.messages import BaseMessage, HumanMessage, SystemMessage
from ctxwin.planner import Planner

COUNTER = get_counter("tiktoken:o200k_base")
KEYS = {
    "strategy",
    "budget",
    "conversations",
    "seconds_per_conversation",
    "tokens_used",
    "budget_used",
    "budget_used_min",
    "recent_turns_kept",
    "tool_pairs_intact",
    "system_kept",
    "messages_summarized",
}


def conversations(*lists: list[BaseMessage]) -> list[Conversation]:
    return [Conversation("test", i + 1, messages) for i, messages in enumerate(lists)]


def bench(convs: list[Conversation], chains: str, budgets: list[int]) -> tuple[list[BenchResult], str]:
    errors = io.StringIO()
    results = run_bench(
        convs, parse_chains(chains), budgets, counter=COUNTER, progress=Progress("bench", len(convs), stream=errors)
    )
    return results, errors.getvalue()


def pre_flight() -> list[BaseMessage]:
    """A system prompt, four answered turns (two with tool calls) and the question to answer: five user turns."""
    history = [m for i in range(4) for m in turn(i, tool=i % 2 == 1)]
    return [SystemMessage("be brief", id="sys"), *history, HumanMessage("the last question", id="last")]


def test_rows_are_grouped_by_budget_with_the_json_keys() -> None:
    results, _ = bench(conversations(pre_flight()), DEFAULT_CHAINS, [4000, 500])
    assert [(r.strategy, r.budget) for r in results] == [
        (chain, budget)
        for budget in (4000, 500)
        for chain in ("last", "first", "summarize+trim", "truncate-tools+trim", "fit")
    ]
    for row in (r.as_json() for r in results):
        assert set(row) >= KEYS
        assert row["conversations"] == 1 and row["seconds_per_conversation"] > 0


def test_conversations_under_budget_are_kept_whole_by_every_chain() -> None:
    convs = conversations(pre_flight(), pre_flight()[:6], [*pre_flight()[1:4], HumanMessage("no system prompt")])
    results, _ = bench(convs, DEFAULT_CHAINS, [5000])
    largest = max(COUNTER.count_messages(c.messages) for c in convs)
    for row in (r.as_json() for r in results):
        assert row["tokens_used"] == largest
        assert row["recent_turns_kept"] == 1.0 and row["tool_pairs_intact"] == 1.0
        assert row["system_kept"] == 1.0  # over the two conversations that have a system prompt
        assert row["messages_summarized"] == 0 and row["over_budget"] == 0
        assert row["budget_used"] is None and row["budget_used_min"] is None  # no input is over the budget


def test_last_and_first_keep_the_turns_they_promise() -> None:
    messages = pre_flight()
    # room for the system prompt, the last question and exactly two of the four answered turns, either end
    last_two = [messages[0], *messages[7:]]
    first_two = messages[:7] + messages[-1:]
    assert COUNTER.count_messages(last_two) == COUNTER.count_messages(first_two)  # turns 0+1 and 2+3 cost the same
    budget = COUNTER.count_messages(last_two) + 3
    last, first = bench(conversations(messages), "last,first", [budget])[0]
    assert last.recent_turns_kept == pytest.approx(3 / 5)  # turns 2, 3 and the question
    assert first.recent_turns_kept == pytest.approx(1 / 5)  # the question only: turns 0 and 1 are the old ones
    assert last.tokens_used == first.tokens_used == COUNTER.count_messages(last_two)


def test_summaries_are_counted() -> None:
    convs = conversations(*(generated(seed, turns=20) for seed in range(3)))
    (row,) = bench(convs, "summarize+trim", [1500])[0]
    planner = Planner(None, ["summarize", "trim"], counter=COUNTER, context_window=1500, reserve_output=0)
    reported = sum(len(step.summarized_ids) for c in convs for step in planner.plan(c.messages).steps)
    assert row.messages_summarized == reported > 0


def test_a_conversation_the_planner_rejects_is_left_out_of_every_row() -> None:
    convs = conversations(pre_flight(), pre_flight())
    convs[1] = Conversation("test", 2, convs[1].messages, tools=[{"not": "a tool"}])
    results, errors = bench(convs, "last,fit", [4000, 300])
    assert all(r.conversations == 1 for r in results)
    assert errors.count("error: test:2: tools[0]") == 1


@pytest.mark.slow
def test_the_order_of_the_chains_does_not_change_the_figures() -> None:
    convs = conversations(*(generated(seed) for seed in range(6)))
    forward, _ = bench(convs, "last,first,summarize+trim,fit", [800, 3000])
    backward, _ = bench(convs, "fit,summarize+trim,first,last", [800, 3000])

    def figures(results: list[BenchResult]) -> dict[tuple[str, int], dict[str, object]]:
        return {(r.strategy, r.budget): {**r.as_json(), "seconds_per_conversation": None} for r in results}

    assert figures(forward) == figures(backward)


@pytest.mark.slow
def test_built_in_chains_never_go_over_budget() -> None:
    # 30 generated chats (tool calls, outputs up to ~3k tokens, CJK), at budgets where the must-keep part fits
    convs = conversations(*(generated(seed) for seed in range(30)))
    results, errors = bench(convs, DEFAULT_CHAINS, [1000, 2500, 6000])
    assert not errors
    for row in results:
        assert row.over_budget == 0, (row.strategy, row.budget, row.first_warning)
        assert row.tokens_used <= row.budget and row.tool_pairs_intact == 1.0 and row.system_kept == 1.0


def test_summarize_never_makes_a_fitting_conversation_unfittable() -> None:
    convs = conversations(*(generated(seed, turns=15) for seed in range(5)))
    last, summarize = bench(convs, "last,summarize+trim", [300])[0]
    assert last.over_budget == 0  # the must-keep part fits
    assert summarize.over_budget == 0


@pytest.mark.slow
def test_budget_used_is_the_share_of_the_budget_spent_on_conversations_over_it() -> None:
    convs = conversations(*(generated(seed, turns=20) for seed in range(8)), pre_flight())
    budget = 3000
    over = [c for c in convs if COUNTER.count_messages(c.messages) > budget]
    assert 0 < len(over) < len(convs)
    results, _ = bench(convs, "last,truncate-tools+trim", [budget])
    for row in results:
        planner = Planner(None, parse_chains(row.strategy)[0].strategies(), counter=COUNTER, context_window=budget,
                          reserve_output=0)
        shares = [COUNTER.count_messages(planner.plan(c.messages).messages) / budget for c in over]
        assert row.budget_used == pytest.approx(sum(shares) / len(shares))
        assert row.budget_used_min == pytest.approx(min(shares))
    last, truncate = (row.budget_used or 0 for row in results)
    assert truncate >= 0.9 > last  # a plain trim drops a large tool output whole, wasting the budget it held
