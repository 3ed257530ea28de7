"""ctxwin's trim_messages, filter_messages and merge_message_runs against langchain_core's on random conversations,
with the real o200k tokenizer, wherever LangChain's answer is correct."""

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core import messages as lc
from trim_support import (
    conversations,
    ctxwin_counter,
    from_langchain,
    langchain_counter,
    o200k_tokens,
    pairs_intact,
    to_langchain,
    trim_args,
)

from ctxwin.messages import AIMessage, BaseMessage
from ctxwin.trim import filter_messages, merge_message_runs, trim_messages

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def char_counter(message: BaseMessage) -> int:
    return len(message.text) + 1


def lc_char_counter(message: lc.BaseMessage) -> int:
    return len(message.text) + 1


@pytest.mark.slow
@SETTINGS
@given(conversations(), trim_args())
def test_same_result_as_langchain_when_pairs_are_ignored(messages: list[BaseMessage], args: dict[str, Any]) -> None:
    if args["strategy"] == "last" and args["allow_partial"]:
        # LangChain measures the partial's pieces reversed; with o200k that is a different count.
        ours = trim_messages(messages, token_counter=char_counter, tool_pairs="ignore", **args)
        theirs = lc.trim_messages(to_langchain(messages), token_counter=lc_char_counter, **args)
    else:
        ours = trim_messages(messages, token_counter=ctxwin_counter, tool_pairs="ignore", **args)
        theirs = lc.trim_messages(to_langchain(messages), token_counter=langchain_counter, **args)
    assert ours == from_langchain(theirs)


@pytest.mark.slow
@SETTINGS
@given(conversations(), trim_args())
def test_same_result_as_langchain_when_its_result_keeps_tool_pairs(
    messages: list[BaseMessage], args: dict[str, Any]
) -> None:
    args["allow_partial"] = args["allow_partial"] and args["strategy"] == "first"
    theirs = from_langchain(lc.trim_messages(to_langchain(messages), token_counter=langchain_counter, **args))
    if not pairs_intact(theirs, messages):
        return
    ours = trim_messages(messages, token_counter=ctxwin_counter, **args)
    if ours != theirs:
        # The one allowed difference: the partial message. ctxwin's drops the calls whose results are not kept
        # (here: never answered), so it may keep more text than LangChain's, or exist where LangChain's did not fit
        # (and then, with end_on, LangChain may also drop the messages before it to end on an earlier one).
        assert args["allow_partial"]
        if args["end_on"] is not None and len(theirs) < len(ours) - 1:
            assert ours[: len(theirs)] == theirs
        else:
            assert ours[:-1] == theirs[: len(ours) - 1] and len(theirs) in (len(ours) - 1, len(ours))
        source = next(m for m in messages if m.id == ours[-1].id)
        assert isinstance(source, AIMessage) and len(ours[-1].tool_calls) < len(source.tool_calls)


def test_langchain_partial_can_go_over_budget_and_ctxwin_does_not() -> None:
    """LangChain measures the pieces of a partial message reversed for strategy='last'. Split into characters, the
    reversed text of reversed English is English, which costs far fewer tokens than what is returned."""
    text = "the quick brown fox jumps over the lazy dog and keeps running " * 4
    messages = [lc.HumanMessage(text[::-1])]
    over = []
    for budget in range(10, 60, 5):
        args: dict[str, Any] = {"max_tokens": budget, "allow_partial": True, "text_splitter": list}
        theirs = lc.trim_messages(messages, token_counter=langchain_counter, **args)
        ours = trim_messages(from_langchain(messages), token_counter=ctxwin_counter, **args)
        assert ours and sum(map(o200k_tokens, ours)) <= budget
        over += [budget] if sum(map(o200k_tokens, theirs)) > budget else []
    assert over  # the case this guards against really happens with LangChain


@pytest.mark.slow
@SETTINGS
@given(
    conversations(),
    st.fixed_dictionaries(
        {},
        optional={
            "include_types": st.sampled_from([["human"], ["ai", "system"], ["tool"]]),
            "exclude_types": st.sampled_from([["human"], ["tool"]]),
            "include_ids": st.sampled_from([["h1", "a2"], ["t3"]]),
            "exclude_ids": st.sampled_from([["h0"], ["a1", "t2"]]),
            "exclude_tool_calls": st.sampled_from([True, ["call_0"], ["call_1", "call_2"]]),
        },
    ),
)
def test_filter_messages_matches_langchain(messages: list[BaseMessage], args: dict[str, Any]) -> None:
    assert filter_messages(messages, **args) == from_langchain(lc.filter_messages(to_langchain(messages), **args))


@pytest.mark.slow
@SETTINGS
@given(conversations(tools=True), st.sampled_from(["\n", "", " | "]))
def test_merge_message_runs_matches_langchain(messages: list[BaseMessage], separator: str) -> None:
    theirs = lc.merge_message_runs(to_langchain(messages), chunk_separator=separator)
    assert merge_message_runs(messages, chunk_separator=separator) == from_langchain(theirs)


@pytest.mark.parametrize("counter", ["len", "per-message"])
def test_langchain_docstring_example(counter: str) -> None:
    messages = [
        lc.SystemMessage("you're a good assistant, you always respond with a joke."),
        lc.HumanMessage("i wonder why it's called langchain"),
        lc.AIMessage(
            'Well, I guess they thought "WordRope" and "SentenceString" just didn\'t have the same ring to it!'
        ),
        lc.HumanMessage("and who is harrison chasing anyways"),
        lc.AIMessage("Hmmm let me think.\n\nWhy, he's probably chasing after the last cup of coffee in the office!"),
        lc.HumanMessage("what do you call a speechless parrot"),
    ]
    args = {"max_tokens": 4 if counter == "len" else 45, "start_on": "human", "include_system": True}
    theirs = lc.trim_messages(messages, token_counter=len if counter == "len" else langchain_counter, **args)
    ours = trim_messages(messages, token_counter=len if counter == "len" else ctxwin_counter, **args)
    assert ours == theirs  # LangChain messages in: the caller's own objects out
    assert all(a is b for a, b in zip(ours, theirs, strict=True)) and len(ours) >= 2
