"""The tool-pair index binds each result to the call it answers: where no call id repeats by a dict, else by
walking the messages in order; both give the same pairs on conversations with unanswered calls, results before
their calls or without one, invalid calls, several calls per message, and (for the walk) repeated ids."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from ctxwin.trim._tool_pairs import ToolPairs


@st.composite
def conversations(draw: st.DrawFn) -> list[BaseMessage]:
    """Ids from a few (repeats: the walk decides) to many (mostly unique: the dict does)."""
    ids = st.integers(0, draw(st.sampled_from([3, 8, 200]))).map(str)
    out: list[BaseMessage] = []
    for _ in range(draw(st.integers(0, 24))):
        kind = draw(st.sampled_from(["human", "call", "result", "invalid"]))
        if kind == "human":
            out.append(HumanMessage("q"))
        elif kind == "call":
            calls = draw(st.lists(ids, min_size=1, max_size=3))
            out.append(AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": i} for i in calls]))
        elif kind == "invalid":
            out.append(AIMessage("", invalid_tool_calls=[{"name": "f", "args": "{", "id": draw(ids), "error": "x"}]))
        else:
            out.append(ToolMessage("r", tool_call_id=draw(ids)))
    return out


def index(messages: list[BaseMessage], start: int, walk: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as patched:
        if walk:
            patched.setattr(ToolPairs, "_bind_unique", lambda *args: False)
        pairs = ToolPairs(messages, suffix_only=True)
        straddling = [pairs.straddling(b) for b in range(start, len(messages) + 1)]
        return pairs.call_of, {k: sorted(v) for k, v in pairs.results_of.items()}, straddling


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(conversations(), st.data())
def test_binding_by_id_gives_the_pairs_the_walk_gives(messages: list[BaseMessage], data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(messages)))
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert index(messages, start, False, monkeypatch) == index(messages, start, True, monkeypatch)


@settings(max_examples=30, deadline=None)
@given(conversations(), st.data())
def test_binding_by_id_gives_the_pairs_the_walk_gives_on_a_few_examples(
    messages: list[BaseMessage], data: st.DataObject
) -> None:
    """The property above on 30 examples (the fast tier's; the slow tier draws 300)."""
    test_binding_by_id_gives_the_pairs_the_walk_gives.hypothesis.inner_test(messages, data)


def test_a_result_answers_its_call_before_it_and_not_one_after_it() -> None:
    messages: list[BaseMessage] = [
        ToolMessage("early", tool_call_id="x"),
        AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "x"}, {"name": "g", "args": {}, "id": "y"}]),
        ToolMessage("late", tool_call_id="x"),
        HumanMessage("q"),
    ]
    pairs = ToolPairs(messages)
    assert pairs.call_of == {2: 1}
    assert [pairs.straddling(b) for b in range(5)] == [0, 0, 1, 0, 0]
