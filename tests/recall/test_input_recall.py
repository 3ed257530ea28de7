"""A one-off plan's recall source indexes only the left-out messages that hold a distinctive query word as a word:
"order" is not in "border", CJK text written against a word bounds it, and a word most messages hold indexes
nothing (no search returns an excerpt for it alone); it reads back as far as the plan's budget says."""

from __future__ import annotations

from ctxwin.counters import get_counter
from ctxwin.messages import HumanMessage
from ctxwin.recall._inject import MIN_REACH, InputRecall, input_reach
from ctxwin.recall._step import RecallStep
from ctxwin.strategies._base import Budget
from ctxwin.strategies._meter import Meter
from ctxwin.strategies._trim import TrimToBudget


def test_only_messages_holding_a_query_word_as_a_word_are_indexed() -> None:
    messages = [
        HumanMessage("The border crossing at Basel reorders its queue at ten; borders close at noon."),
        HumanMessage("仓库确认order已发货，明天到。"),
        HumanMessage("Order 4471 left the dock; the order-tracking page lags."),
        *(HumanMessage(f"Unrelated {n}: the nightly export is slow again.") for n in range(20)),
        HumanMessage("Where is my order?"),
    ]
    source = InputRecall(messages)
    found = source.search("Where is my order?", messages[-1:], limit=5, min_score=0.0)
    assert [position for position in range(len(messages)) if position in source.store] == [1, 2]
    assert {e.position for e in found} == {1, 2}


def test_a_word_most_left_out_messages_hold_indexes_nothing() -> None:
    messages = [HumanMessage(f"Export {n} of the nightly batch is slow again.") for n in range(12)]
    messages += [HumanMessage("Ticket LY-2231 is about the export."), HumanMessage("Why is the export slow?")]
    source = InputRecall(messages)
    source.search("Why is the export slow?", messages[-1:], limit=5, min_score=0.0)
    assert not any(position in source.store for position in range(len(messages)))
    source.search("What was ticket LY-2231 about? the export", messages[-1:], limit=5, min_score=0.0)
    assert [position for position in range(len(messages)) if position in source.store] == [12]


def test_a_one_off_plan_reaches_back_as_far_as_its_budget_says() -> None:
    """The fact is 300,000 characters back: past what a 2,000-token plan reads (``MIN_REACH``), within what a
    40,000-token plan reads (two windows); what it left out is read newest first."""
    filler = "The nightly export ran again and the dashboard stayed green for the whole shift. " * 12
    messages = [HumanMessage("Ticket LY-2231 is about the Lyon warehouse lease."),
                *(HumanMessage(f"{n}: {filler}") for n in range(300)),
                HumanMessage("What was ticket LY-2231 about?")]
    assert input_reach(2_000) == MIN_REACH < sum(len(m.text) for m in messages[1:-1]) < input_reach(40_000)
    step = RecallStep(0.1, [TrimToBudget()])
    for budget, found in ((2_000, False), (40_000, True)):
        _, source = step.source(messages, Meter(get_counter("gpt-4o")), True, False, Budget(budget, 0))
        assert source is not None
        excerpts = source.search(messages[-1].text, messages[-1:], limit=5, min_score=0.0)
        assert any(e.position == 0 for e in excerpts) is found
