"""add_messages against LangGraph's documented behaviour, its edge cases, and invariants."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.history._reducer import add_messages
from ctxwin.messages import (
    REMOVE_ALL_MESSAGES,
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)


def contents(messages: list[BaseMessage]) -> list[Any]:
    return [m.content for m in messages]


def test_documented_basic_usage_appends() -> None:
    result = add_messages([HumanMessage("Hello", id="1")], [AIMessage("Hi there!", id="2")])
    assert result == [HumanMessage("Hello", id="1"), AIMessage("Hi there!", id="2")]


def test_documented_overwrite_existing_message() -> None:
    assert add_messages([HumanMessage("Hello", id="1")], [HumanMessage("Hello again", id="1")]) == [
        HumanMessage("Hello again", id="1")
    ]


def test_replacement_keeps_the_left_position() -> None:
    left = [HumanMessage("a", id="1"), AIMessage("b", id="2"), HumanMessage("c", id="3")]
    result = add_messages(left, [HumanMessage("new", id="4"), AIMessage("B", id="2")])
    assert [m.id for m in result] == ["1", "2", "3", "4"]
    assert contents(result) == ["a", "B", "c", "new"]
    assert isinstance(result[1], AIMessage)


def test_single_messages_and_message_likes_on_either_side() -> None:
    result = add_messages(("user", "hi"), {"role": "assistant", "content": "hello"})
    assert [type(m) for m in result] == [HumanMessage, AIMessage]
    assert contents(add_messages(HumanMessage("x", id="1"), "plain string")) == ["x", "plain string"]
    assert contents(add_messages([], [("system", "s"), "u"])) == ["s", "u"]


def test_missing_ids_are_uuid4_on_copies_and_inputs_are_not_mutated() -> None:
    left = [HumanMessage("a")]
    right = [AIMessage("b")]
    snapshot = [m.model_copy(deep=True) for m in left + right]
    result = add_messages(left, right)
    assert all(uuid.UUID(str(m.id)).version == 4 for m in result)
    assert result[0].id != result[1].id
    assert left + right == snapshot and left[0].id is None and right[0].id is None


def test_same_id_less_object_on_both_sides_is_one_message() -> None:
    message = HumanMessage("hi")
    assert contents(add_messages([message], [message])) == ["hi"]


def test_remove_message_deletes() -> None:
    left = [HumanMessage("a", id="1"), AIMessage("b", id="2")]
    assert add_messages(left, [RemoveMessage(id="1")]) == [AIMessage("b", id="2")]


def test_removing_an_unknown_id_raises() -> None:
    with pytest.raises(ValueError, match="Attempting to delete a message with an ID that doesn't exist"):
        add_messages([HumanMessage("a", id="1")], [RemoveMessage(id="nope")])


def test_removal_of_an_id_added_earlier_in_the_same_right_list() -> None:
    right = [HumanMessage("new", id="n"), RemoveMessage(id="n"), AIMessage("kept", id="k")]
    assert add_messages([HumanMessage("a", id="1")], right) == [HumanMessage("a", id="1"), AIMessage("kept", id="k")]


def test_removal_before_the_addition_in_right_raises() -> None:
    with pytest.raises(ValueError, match="doesn't exist"):
        add_messages([], [RemoveMessage(id="n"), HumanMessage("new", id="n")])


def test_operations_in_right_apply_in_order() -> None:
    left = [HumanMessage("a", id="1"), HumanMessage("b", id="2")]
    assert add_messages(left, [HumanMessage("A", id="1"), RemoveMessage(id="1")]) == [HumanMessage("b", id="2")]
    # remove then re-add the same id: the message comes back, at its original position
    result = add_messages(left, [RemoveMessage(id="1"), HumanMessage("again", id="1")])
    assert contents(result) == ["again", "b"]


def test_duplicate_ids_within_right_later_wins_at_the_first_position() -> None:
    right = [HumanMessage("first", id="x"), AIMessage("other", id="y"), HumanMessage("second", id="x")]
    result = add_messages([], right)
    assert contents(result) == ["second", "other"]


def test_remove_all_keeps_only_what_follows_the_last_marker() -> None:
    left = [HumanMessage("a", id="1"), AIMessage("b", id="2")]
    right = [
        HumanMessage("dropped", id="3"),
        RemoveMessage(id=REMOVE_ALL_MESSAGES),
        HumanMessage("also dropped", id="4"),
        RemoveMessage(id=REMOVE_ALL_MESSAGES),
        HumanMessage("kept", id="5"),
        AIMessage("kept too", id="1"),
    ]
    assert add_messages(left, right) == [HumanMessage("kept", id="5"), AIMessage("kept too", id="1")]
    assert add_messages(left, [RemoveMessage(id=REMOVE_ALL_MESSAGES)]) == []


def test_chunks_become_messages() -> None:
    result = add_messages([], [AIMessageChunk("partial", id="c")])
    assert type(result[0]) is AIMessage and result[0] == AIMessage("partial", id="c")


@pytest.mark.parametrize("fmt", ["openai", "langchain-openai"])
def test_openai_format_returns_openai_shaped_content_and_keeps_ids(fmt: Any) -> None:
    anthropic_image = {
        "role": "user",
        "id": "img",
        "content": [
            {"type": "text", "text": "Here's an image:"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "1234"}},
        ],
    }
    result = add_messages([SystemMessage("sys", id="s")], [anthropic_image], format=fmt)
    assert [m.id for m in result] == ["s", "img"]
    assert result[1].content == [
        {"type": "text", "text": "Here's an image:"},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,1234"}},
    ]


def test_openai_format_splits_anthropic_tool_results_into_tool_messages() -> None:
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "f", "input": {"x": 1}}]}
    result_turn = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "42"}]}
    result = add_messages([], [call, result_turn], format="openai")
    assert isinstance(result[0], AIMessage) and result[0].tool_calls[0]["args"] == {"x": 1}
    assert isinstance(result[1], ToolMessage) and result[1].tool_call_id == "c1" and result[1].content == "42"


def test_partial_reducer_and_argument_errors() -> None:
    reducer = add_messages(format="openai")
    assert contents(reducer([], [("user", "hi")])) == ["hi"]
    with pytest.raises(ValueError, match="Unrecognized format"):
        add_messages([], [], format="anthropic")  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="both 'left' and 'right'"):
        add_messages([HumanMessage("a")])  # type: ignore[call-overload]
    with pytest.raises(ValueError, match=r"right: messages\[0\]"):
        add_messages([], [{"no_role": 1}])
    with pytest.raises(TypeError, match=r"left: messages\[0\]"):
        add_messages([object()], [])


ids = st.sampled_from(["a", "b", "c", "d", None])
plain = st.builds(lambda i, t: HumanMessage(t, id=i), ids, st.text(max_size=3))
# A state the reducer produced never holds an id twice; id-less messages are distinct.
state = st.lists(plain, max_size=6, unique_by=lambda m: m.id if m.id is not None else str(uuid.uuid4()))


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(state, st.lists(plain, max_size=6))
def test_invariants_of_merging_without_removals(left: list[BaseMessage], right: list[BaseMessage]) -> None:
    snapshot = [m.model_copy(deep=True) for m in left + right]
    result = add_messages(left, right)
    assert left + right == snapshot  # nothing mutated
    assert all(m.id is not None for m in result)
    assert len({m.id for m in result}) == len(result)
    last_by_id = {m.id: m for m in right if m.id is not None}
    for message in result:  # a right message with a known id is the one that survives
        if message.id in last_by_id:
            assert message == last_by_id[message.id]
    for before, after in zip(left, result, strict=False):  # left messages keep their positions
        assert before.id is None or after.id == before.id
    new_ids = {m.id for m in right if m.id is not None} - {m.id for m in left}
    assert len(result) == len(left) + len(new_ids) + sum(m.id is None for m in right)
    assert add_messages(result, result) == result  # re-applying a state to itself changes nothing


def _shape(messages: list[Any], known: set[str]) -> list[tuple[str, str, Any, Any]]:
    """What LangGraph's and ctxwin's results must agree on: class, module, content, the caller's ids (generated ids
    are uuids on both sides, checked apart)."""
    return [(type(m).__name__, type(m).__module__, m.content, m.id if m.id in known else "uuid") for m in messages]


def test_message_likes_and_chunks_are_converted_on_both_sides() -> None:
    """LangGraph's reducer (installed here) on LangChain messages mixed with dicts, tuples and chunks, on both
    sides: ctxwin gives the same LangChain messages, the caller's own objects where kept."""
    import langchain_core.messages as lc
    from langgraph.graph.message import add_messages as langgraph_add_messages

    left = [lc.SystemMessage("Be brief.", id="s"), {"role": "user", "content": "hi", "id": "u1"},
            ("ai", "hello"), lc.AIMessageChunk(content="partial ", id="c0")]
    right = [lc.AIMessageChunk(content="answer", id="c1"), {"role": "user", "content": "thanks"},
             ("human", "again"), lc.HumanMessage("replaced", id="u1"), lc.ToolMessage("ok", tool_call_id="t1")]
    ours = add_messages(left, right)
    theirs = langgraph_add_messages(list(left), list(right))
    known = {"s", "u1", "c0", "c1"}
    assert _shape(ours, known) == _shape(theirs, known)
    assert all(isinstance(m, lc.BaseMessage) and not isinstance(m, lc.BaseMessageChunk) for m in ours)
    assert ours[0] is left[0] and ours[1] is right[3]  # the caller's own objects, the replacement in place
    assert all(uuid.UUID(str(m.id)) for m in ours if m.id not in known)
    assert add_messages(left[1:3], [("ai", "x")])[0].__class__ is HumanMessage  # no LangChain message: ctxwin's
