"""A one-off plan's recall source indexes only the left-out messages that hold a query word as a word: "order" is not
in "border", and CJK text written against a word bounds it."""

from __future__ import annotations

from ctxwin.messages import HumanMessage
from ctxwin.recall._inject import InputRecall


def test_only_messages_holding_a_query_word_as_a_word_are_indexed() -> None:
    messages = [
        HumanMessage("The border crossing at Basel reorders its queue at ten; borders close at noon."),
        HumanMessage("仓库确认order已发货，明天到。"),
        HumanMessage("Order 4471 left the dock; the order-tracking page lags."),
        HumanMessage("Unrelated: the nightly export is slow again."),
        HumanMessage("Where is my order?"),
    ]
    source = InputRecall(messages)
    source.search("Where is my order?", messages[-1:], limit=5, min_score=0.0)
    assert [position for position in range(4) if position in source.store] == [1, 2]
