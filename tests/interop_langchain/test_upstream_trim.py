"""LangChain's own ``trim_messages`` tests, run through ctxwin with LangChain messages: LangChain's expected
results, as LangChain objects (the caller's own where unchanged), the caller's counter seeing LangChain objects.

Upstream: ``libs/core/tests/unit_tests/messages/test_utils.py`` (commit in ``upstream_support``); each case names
the test it ports. Where ctxwin deliberately differs (docs/trim.md, "Guarantees"), the port asserts ctxwin's
documented behaviour and says which upstream assertion differs and why.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pytest
from upstream_support import (
    assert_langchain,
    assert_langchain_out,
    deep_copies,
    dummy_token_counter,
    messages_to_trim,
    tool_call_messages,
)

import ctxwin
from ctxwin.trim._tool_pairs import ToolPairs

lc = pytest.importorskip("langchain_core.messages")
lc_utils = pytest.importorskip("langchain_core.messages.utils")
fake_models = pytest.importorskip("langchain_core.language_models.fake_chat_models")

TRIM = messages_to_trim()
SYSTEM, FIRST, SECOND, THIRD, FOURTH = TRIM
SECOND_FIRST_BLOCK = lc.AIMessage([{"type": "text", "text": "This is the FIRST 4 token block."}], id="second")
SECOND_SECOND_BLOCK = lc.AIMessage([{"type": "text", "text": "This is the SECOND 4 token block."}], id="second")


def count_lengths(messages: Sequence[Any]) -> int:
    """Upstream's ``lambda messages: sum(len(m.content) for m in messages)``, refusing non-LangChain messages."""
    for m in messages:
        assert_langchain(m)
    return sum(len(m.content) for m in messages)


def count_words(msgs: Sequence[Any]) -> int:
    """Upstream's ``count_words`` (test_trim_messages_allow_partial_text_splitter)."""
    count = 0
    for msg in msgs:
        assert_langchain(msg)
        if isinstance(msg.content, str):
            count += len(msg.content.split(" "))
        else:
            count += len(" ".join(block["text"] for block in msg.content).split(" "))
    return count


def split_on_space(text: str) -> list[str]:
    splits = text.split(" ")
    return [s + " " for s in splits[:-1]] + splits[-1:]


# (upstream test, messages, trim_messages arguments, expected): the upstream tests that assert one expected list.
EXPECTED_CASES: list[tuple[str, list[Any], dict[str, Any], list[Any]]] = [
    (
        "test_trim_messages_first_30",
        TRIM,
        {"max_tokens": 30, "token_counter": dummy_token_counter, "strategy": "first"},
        [SYSTEM, FIRST],
    ),
    (
        "test_trim_messages_first_30_allow_partial",
        TRIM,
        {"max_tokens": 30, "token_counter": dummy_token_counter, "strategy": "first", "allow_partial": True},
        [SYSTEM, FIRST, SECOND_FIRST_BLOCK],
    ),
    (
        "test_trim_messages_first_30_allow_partial_end_on_human",
        TRIM,
        {
            "max_tokens": 30,
            "token_counter": dummy_token_counter,
            "strategy": "first",
            "allow_partial": True,
            "end_on": "human",
        },
        [SYSTEM, FIRST],
    ),
    (
        "test_trim_messages_last_30_include_system",
        TRIM,
        {"max_tokens": 30, "include_system": True, "token_counter": dummy_token_counter, "strategy": "last"},
        [SYSTEM, THIRD, FOURTH],
    ),
    (
        "test_trim_messages_last_40_include_system_allow_partial",
        TRIM,
        {
            "max_tokens": 40,
            "token_counter": dummy_token_counter,
            "strategy": "last",
            "allow_partial": True,
            "include_system": True,
        },
        [SYSTEM, SECOND_SECOND_BLOCK, THIRD, FOURTH],
    ),
    (
        "test_trim_messages_last_30_include_system_allow_partial_end_on_human",
        TRIM,
        {
            "max_tokens": 30,
            "token_counter": dummy_token_counter,
            "strategy": "last",
            "allow_partial": True,
            "include_system": True,
            "end_on": "human",
        },
        [SYSTEM, SECOND_SECOND_BLOCK, THIRD],
    ),
    (
        "test_trim_messages_last_40_include_system_allow_partial_start_on_human",
        TRIM,
        {
            "max_tokens": 30,
            "token_counter": dummy_token_counter,
            "strategy": "last",
            "allow_partial": True,
            "include_system": True,
            "start_on": "human",
        },
        [SYSTEM, THIRD, FOURTH],
    ),
    (
        "test_trim_messages_allow_partial_one_message",
        [lc.HumanMessage("This is a funky text.", id="third")],
        {
            "max_tokens": 2,
            "token_counter": count_lengths,
            "text_splitter": list,
            "strategy": "first",
            "allow_partial": True,
        },
        [lc.HumanMessage("Th", id="third")],
    ),
    (
        "test_trim_messages_last_allow_partial_one_message",
        [lc.HumanMessage("This is a funky text.", id="third")],
        {
            "max_tokens": 2,
            "token_counter": count_lengths,
            "text_splitter": list,
            "strategy": "last",
            "allow_partial": True,
        },
        [lc.HumanMessage("t.", id="third")],
    ),
    (
        "test_trim_messages_allow_partial_text_splitter",
        TRIM,
        {
            "max_tokens": 10,
            "token_counter": count_words,
            "strategy": "last",
            "allow_partial": True,
            "text_splitter": split_on_space,
        },
        [lc.HumanMessage("a 4 token text.", id="third"), FOURTH],
    ),
]


@pytest.mark.parametrize(
    ("upstream", "messages", "kwargs", "expected"), EXPECTED_CASES, ids=[c[0] for c in EXPECTED_CASES]
)
def test_trim_messages_expected(
    upstream: str, messages: list[Any], kwargs: dict[str, Any], expected: list[Any]
) -> None:
    copies = deep_copies(messages)
    actual = ctxwin.trim_messages(messages, **kwargs)
    assert actual == expected
    assert messages == copies
    assert_langchain_out(actual, messages, expected)
    # the reusable form gives the same
    assert ctxwin.trim_messages(**kwargs).invoke(messages) == expected


def test_trim_messages_include_system_strategy_last_empty_messages() -> None:
    trimmer = ctxwin.trim_messages(
        max_tokens=10, token_counter=dummy_token_counter, strategy="last", include_system=True
    )
    assert trimmer.invoke([]) == []


def test_trim_messages_invoke() -> None:
    messages = messages_to_trim()
    actual = ctxwin.trim_messages(max_tokens=10, token_counter=dummy_token_counter).invoke(messages)
    expected = ctxwin.trim_messages(messages, max_tokens=10, token_counter=dummy_token_counter)
    assert actual == expected
    # and both are LangChain's answer (the last message), the caller's own object
    assert actual == lc_utils.trim_messages(messages, max_tokens=10, token_counter=dummy_token_counter) == [FOURTH]
    assert_langchain_out(actual, messages)
    assert actual[0] is messages[-1]


class FakeTokenCountingModel(fake_models.FakeChatModel):  # type: ignore[misc]
    """Upstream's FakeTokenCountingModel: a real LangChain chat model counting with ``dummy_token_counter``."""

    def get_num_tokens_from_messages(self, messages: list[Any], tools: Sequence[Any] | None = None) -> int:
        return dummy_token_counter(messages)


def test_trim_messages_bound_model_token_counter() -> None:
    trimmer = ctxwin.trim_messages(max_tokens=10, token_counter=FakeTokenCountingModel().bind(foo="bar"))
    messages = [lc.HumanMessage("foobar")]
    # upstream only asserts that this runs; the one 10-token message fits, and comes back as the caller's object
    result = trimmer.invoke(messages)
    assert result == messages and result[0] is messages[0]


def test_trim_messages_bad_token_counter() -> None:
    # Upstream builds the trimmer and gets this error from ``.invoke``; ctxwin checks arguments when the trimmer is
    # built (docs/trim.md, "Stricter arguments": argument errors are raised when the call is made, also in the
    # reusable form). Same type, same text.
    with pytest.raises(
        ValueError,
        match=re.escape(
            "'token_counter' expected to be a model that implements "
            "'get_num_tokens_from_messages()' or a function. "
            "Received object of type <class 'dict'>."
        ),
    ):
        ctxwin.trim_messages(max_tokens=10, token_counter={})


def test_trim_messages_partial_text_splitting() -> None:
    messages = [lc.HumanMessage(content="This is a long message that needs trimming")]
    messages_copy = deep_copies(messages)

    def count_characters(msgs: list[Any]) -> int:
        for m in msgs:
            assert_langchain(m)
        return sum(len(m.content) if isinstance(m.content, str) else 0 for m in msgs)

    result = ctxwin.trim_messages(
        messages,
        max_tokens=10,  # only 10 characters
        token_counter=count_characters,
        strategy="first",
        allow_partial=True,
        text_splitter=list,
    )
    assert len(result) == 1
    assert result[0].content == "This is a "
    assert messages == messages_copy
    assert_langchain_out(result, messages, messages)


def test_trim_messages_mixed_content_with_partial() -> None:
    messages = [
        lc.AIMessage(
            content=[
                {"type": "text", "text": "First part of text."},
                {"type": "text", "text": "Second part that should be trimmed."},
            ]
        )
    ]
    messages_copy = deep_copies(messages)

    def count_text_length(msgs: list[Any]) -> int:
        total = 0
        for msg in msgs:
            assert_langchain(msg)
            if isinstance(msg.content, list):
                total += sum(
                    len(block["text"])
                    for block in msg.content
                    if isinstance(block, dict) and block.get("type") == "text"
                )
            elif isinstance(msg.content, str):
                total += len(msg.content)
        return total

    result = ctxwin.trim_messages(
        messages, max_tokens=20, token_counter=count_text_length, strategy="first", allow_partial=True
    )
    assert len(result) == 1
    assert len(result[0].content) == 1
    content = result[0].content[0]
    assert isinstance(content, dict)
    assert content["text"] == "First part of text."
    assert messages == messages_copy
    assert_langchain_out(result, messages, messages)


def test_trim_messages_exact_token_boundary() -> None:
    messages = [lc.SystemMessage(content="10 tokens exactly."), lc.HumanMessage(content="Another 10 tokens.")]
    result1 = ctxwin.trim_messages(messages, max_tokens=10, token_counter=dummy_token_counter, strategy="first")
    assert len(result1) == 1
    assert result1[0].content == "10 tokens exactly."
    assert_langchain_out(result1, messages, messages[:1])
    assert result1[0] is messages[0]

    result2 = ctxwin.trim_messages(messages, max_tokens=20, token_counter=dummy_token_counter, strategy="first")
    assert len(result2) == 2
    assert result2 == messages
    assert all(r is m for r, m in zip(result2, messages, strict=True))


def test_trim_messages_start_on_with_allow_partial() -> None:
    messages = [
        lc.HumanMessage(content="First human message"),
        lc.AIMessage(content="AI response"),
        lc.HumanMessage(content="Second human message"),
    ]
    messages_copy = deep_copies(messages)
    result = ctxwin.trim_messages(
        messages,
        max_tokens=20,
        token_counter=dummy_token_counter,
        strategy="last",
        allow_partial=True,
        start_on="human",
    )
    assert len(result) == 1
    assert result[0].content == "Second human message"
    assert messages == messages_copy
    assert result[0] is messages[2]


def test_trim_messages_token_counter_shortcut_approximate() -> None:
    # ``"approximate"`` is ctxwin's own estimator, not LangChain's count_tokens_approximately (docs/trim.md,
    # "Counters"); upstream's assertion (same result as count_tokens_approximately) holds here all the same.
    messages = [
        lc.SystemMessage("This is a test message"),
        lc.HumanMessage("Another test message", id="first"),
        lc.AIMessage("AI response here", id="second"),
    ]
    messages_copy = deep_copies(messages)
    result_shortcut = ctxwin.trim_messages(messages, max_tokens=50, token_counter="approximate", strategy="last")
    result_direct = ctxwin.trim_messages(
        messages, max_tokens=50, token_counter=lc_utils.count_tokens_approximately, strategy="last"
    )
    assert result_shortcut == result_direct
    assert messages == messages_copy
    assert_langchain_out(result_shortcut, messages)
    assert_langchain_out(result_direct, messages)


def test_trim_messages_token_counter_shortcut_invalid() -> None:
    messages = [lc.SystemMessage("This is a test message"), lc.HumanMessage("Another test message")]
    with pytest.raises(ValueError, match="Invalid token_counter shortcut 'invalid'"):
        ctxwin.trim_messages(messages, max_tokens=50, token_counter="invalid", strategy="last")


def test_trim_messages_token_counter_shortcut_with_options() -> None:
    messages = [
        lc.SystemMessage("System instructions"),
        lc.HumanMessage("First human message", id="first"),
        lc.AIMessage("First AI response", id="ai1"),
        lc.HumanMessage("Second human message", id="second"),
        lc.AIMessage("Second AI response", id="ai2"),
    ]
    messages_copy = deep_copies(messages)
    result = ctxwin.trim_messages(
        messages, max_tokens=100, token_counter="approximate", strategy="last", include_system=True, start_on="human"
    )
    assert len(result) >= 2
    assert isinstance(result[0], lc.SystemMessage)
    assert any(isinstance(msg, lc.HumanMessage) for msg in result[1:])
    assert messages == messages_copy
    assert_langchain_out(result, messages)


# ---------- upstream's tests for tool-call group-aware trim_messages (LangChain issue #29637) ----------
# ctxwin keeps tool pairs whole by default (docs/trim.md, "Tool pairs stay together"), so these hold as written.


def _assert_no_orphans(result: list[Any]) -> None:
    for i, msg in enumerate(result):
        if isinstance(msg, lc.ToolMessage):
            assert i > 0 and isinstance(result[i - 1], lc.AIMessage)


def test_trim_messages_tool_group_never_split_first() -> None:
    messages = tool_call_messages()
    result = ctxwin.trim_messages(messages, max_tokens=35, token_counter=dummy_token_counter, strategy="first")
    assert len(result) == 3
    assert isinstance(result[0], lc.HumanMessage)
    assert isinstance(result[2], lc.HumanMessage)
    for msg in result:
        if isinstance(msg, lc.AIMessage) and msg.tool_calls:
            idx = result.index(msg)
            assert idx + 1 < len(result)
            assert isinstance(result[idx + 1], lc.ToolMessage)
    assert_langchain_out(result, messages, messages[:3])


def test_trim_messages_tool_group_never_split_last() -> None:
    messages = tool_call_messages()
    result = ctxwin.trim_messages(messages, max_tokens=15, token_counter=dummy_token_counter, strategy="last")
    if result:
        assert not isinstance(result[0], lc.ToolMessage)
    # upstream allows "nothing or an earlier valid group"; the last message alone is an orphan, the group is 24
    assert result == []


def test_trim_messages_tool_group_included_together_last() -> None:
    messages = tool_call_messages()
    result = ctxwin.trim_messages(messages, max_tokens=25, token_counter=dummy_token_counter, strategy="last")
    assert len(result) == 2
    assert isinstance(result[0], lc.AIMessage)
    assert result[0].tool_calls
    assert isinstance(result[1], lc.ToolMessage)
    assert_langchain_out(result, messages, messages[3:])
    assert result[0] is messages[3] and result[1] is messages[4]


def test_trim_messages_tool_group_included_together_first() -> None:
    messages = tool_call_messages()
    result = ctxwin.trim_messages(messages, max_tokens=55, token_counter=dummy_token_counter, strategy="first")
    assert len(result) == 5
    assert isinstance(result[3], lc.AIMessage)
    assert result[3].tool_calls
    assert isinstance(result[4], lc.ToolMessage)
    assert all(r is m for r, m in zip(result, messages, strict=True))


def test_trim_messages_no_reversed_messages_sent_to_counter() -> None:
    call_log: list[list[Any]] = []

    def tracking_counter(messages: list[Any]) -> int:
        call_log.append(list(messages))
        return len(messages) * 10

    ctxwin.trim_messages(tool_call_messages(), max_tokens=30, token_counter=tracking_counter, strategy="last")
    assert call_log
    for call_msgs in call_log:
        for i, msg in enumerate(call_msgs):
            assert_langchain(msg)
            if isinstance(msg, lc.ToolMessage):
                assert i > 0, "ToolMessage at index 0: reversed sequence detected"
                prev = call_msgs[i - 1]
                assert isinstance(prev, lc.AIMessage) and prev.tool_calls, (
                    f"ToolMessage at index {i} not preceded by AIMessage(tool_calls)"
                )


def test_trim_messages_tool_group_with_include_system() -> None:
    messages = [lc.SystemMessage("You are a helpful assistant."), *tool_call_messages()]
    result = ctxwin.trim_messages(
        messages, max_tokens=35, token_counter=dummy_token_counter, strategy="last", include_system=True
    )
    assert isinstance(result[0], lc.SystemMessage)
    _assert_no_orphans(result[1:])
    assert_langchain_out(result, messages)


def test_trim_messages_tool_group_start_on_human() -> None:
    messages = tool_call_messages()
    result = ctxwin.trim_messages(
        messages, max_tokens=25, token_counter=dummy_token_counter, strategy="last", start_on="human"
    )
    if result:
        assert isinstance(result[0], lc.HumanMessage)
    assert_langchain_out(result, messages)


def test_trim_messages_multiple_tool_groups() -> None:
    messages = [
        lc.HumanMessage("query 1"),
        lc.AIMessage("calling tool A", tool_calls=[{"name": "A", "args": {}, "id": "a1", "type": "tool_call"}]),
        lc.ToolMessage("result A", tool_call_id="a1"),
        lc.HumanMessage("query 2"),
        lc.AIMessage("calling tool B", tool_calls=[{"name": "B", "args": {}, "id": "b1", "type": "tool_call"}]),
        lc.ToolMessage("result B", tool_call_id="b1"),
    ]
    result = ctxwin.trim_messages(messages, max_tokens=35, token_counter=dummy_token_counter, strategy="last")
    assert len(result) == 3
    assert isinstance(result[0], lc.HumanMessage)
    assert result[0].content == "query 2"
    assert isinstance(result[1], lc.AIMessage) and result[1].tool_calls
    assert isinstance(result[2], lc.ToolMessage)
    assert all(r is m for r, m in zip(result, messages[3:], strict=True))


def test_trim_messages_tool_group_boundary_exact_fit() -> None:
    messages = tool_call_messages()
    result = ctxwin.trim_messages(messages, max_tokens=24, token_counter=dummy_token_counter, strategy="last")
    assert len(result) == 2
    assert isinstance(result[0], lc.AIMessage) and result[0].tool_calls
    assert isinstance(result[1], lc.ToolMessage)
    assert_langchain_out(result, messages, messages[3:])


def test_get_message_group_boundaries() -> None:
    # Upstream tests its private ``_get_message_group_boundaries`` (the cut points that split no tool group);
    # ctxwin's counterpart is ``ToolPairs.straddling``: a cut is allowed where it separates no pair.
    def boundaries(messages: list[Any]) -> list[int]:
        pairs = ToolPairs(ctxwin.convert_to_messages(messages))
        return [b for b in range(len(messages) + 1) if pairs.straddling(b) == 0]

    assert boundaries(tool_call_messages()) == [0, 1, 2, 3, 5]
    assert boundaries([]) == [0]
    assert boundaries([lc.HumanMessage("a"), lc.AIMessage("b"), lc.HumanMessage("c")]) == [0, 1, 2, 3]


def test_trim_messages_tool_forward_bound_tools() -> None:
    received_kwargs: dict[str, Any] = {}

    class _MockLLM:
        """Records what ``get_num_tokens_from_messages`` receives; ``kwargs`` is what ``bind_tools()`` binds."""

        kwargs: dict[str, Any] = {"tools": ["tool_a", "tool_b"]}

        def get_num_tokens_from_messages(self, messages: list[Any], tools: list[str] | None = None) -> int:
            received_kwargs["tools"] = tools
            return len(messages) * 10

    ctxwin.trim_messages([lc.HumanMessage("hi")], max_tokens=100, token_counter=_MockLLM())
    assert received_kwargs.get("tools") == ["tool_a", "tool_b"]


def test_trim_messages_tool_forward_bound_tools_of_a_real_binding() -> None:
    """The same with a real ``bind_tools`` binding (not upstream): the bound tools reach the counting model."""
    seen: list[Any] = []

    class ToolCountingModel(FakeTokenCountingModel):
        def get_num_tokens_from_messages(self, messages: list[Any], tools: Sequence[Any] | None = None) -> int:
            seen.append(tools)
            return dummy_token_counter(messages) + 5 * len(tools or ())

        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
            return self.bind(tools=list(tools), **kwargs)

    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
    messages = [lc.HumanMessage("one"), lc.HumanMessage("two")]
    result = ctxwin.trim_messages(messages, max_tokens=20, token_counter=ToolCountingModel().bind_tools([tool]))
    assert seen and all(tools == [tool] for tools in seen)
    assert result == messages[1:] and result[0] is messages[1]  # 2 x 10 + 5 > 20: the tool schema is counted


@pytest.mark.parametrize("strategy", ["first", "last"])
@pytest.mark.parametrize("allow_partial", [False, True])
def test_list_counter_never_sees_a_split_tool_pair(strategy: str, allow_partial: bool) -> None:
    """Not upstream: test_trim_messages_no_reversed_messages_sent_to_counter's rule at every budget, both ways: no
    list shown to the counter holds a result without its call or a call without its result (a provider's
    count-tokens endpoint rejects either)."""
    messages = [*tool_call_messages(), lc.HumanMessage("and tomorrow?"), *tool_call_messages()[3:]]
    messages[-2] = messages[-2].model_copy(update={"tool_calls": [{**messages[-2].tool_calls[0], "id": "x"}]})
    messages[-1] = lc.ToolMessage("Rain.", tool_call_id="x")
    seen: list[list[Any]] = []

    def counter(batch: list[Any]) -> int:
        seen.append(batch)
        return dummy_token_counter(batch)

    for max_tokens in range(0, 90, 3):
        ctxwin.trim_messages(
            messages, max_tokens=max_tokens, token_counter=counter, strategy=strategy, allow_partial=allow_partial
        )
    assert seen
    for batch in seen:
        calls = {c["id"] for m in batch if isinstance(m, lc.AIMessage) for c in m.tool_calls}
        results = {m.tool_call_id for m in batch if isinstance(m, lc.ToolMessage)}
        assert calls == results, [m.type for m in batch]
