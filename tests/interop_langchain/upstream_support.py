"""What the ports of LangChain's own ``test_utils.py`` share: its fixtures and the assertions that make every
port check LangChain objects in and out.

Upstream: langchain-ai/langchain at commit 00632a94a97058d85a82e06099994b3c0ea8d3ce,
``libs/core/tests/unit_tests/messages/test_utils.py`` (the newest stored snapshot; it is a little newer than the
installed langchain-core 1.7.2 and adds the tool-group tests of issue #29637 and the bound-tools test). Each port
names the upstream test it runs; the inputs and expected values are LangChain's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

lc = pytest.importorskip("langchain_core.messages")


def dummy_token_counter(messages: Sequence[Any]) -> int:
    """LangChain's ``dummy_token_counter``: 3 + 4 per text (a string is one, a list one per block) + 3 per message.

    Unlike upstream's it refuses anything but LangChain messages, so a port fails if ctxwin hands the caller's
    counter its own objects."""
    count = 0
    for message in messages:
        assert_langchain(message)
        texts = len(message.content) if isinstance(message.content, list) else 1
        count += 3 + 4 * texts + 3
    return count


def assert_langchain(message: Any) -> None:
    if not isinstance(message, lc.BaseMessage):
        raise TypeError(f"expected a LangChain message, got a {type(message).__module__}.{type(message).__name__}")


def assert_langchain_out(result: Any, given: Sequence[Any], expected: Sequence[Any] | None = None) -> None:
    """``result`` is a list of LangChain messages (of ``expected``'s classes, when given), and a result equal to a
    message the caller gave is that very object (unchanged messages are the caller's own)."""
    assert isinstance(result, list)
    for message in result:
        assert_langchain(message)
        equal = [g for g in given if g == message]
        assert not equal or any(message is g for g in equal), f"{message!r} is a copy of the caller's message"
    if expected is not None:
        assert [type(m) for m in result] == [type(m) for m in expected]


def deep_copies(messages: Sequence[Any]) -> list[Any]:
    """Upstream's ``[m.model_copy(deep=True) for m in messages]``: what the inputs must still equal afterwards."""
    return [m.model_copy(deep=True) for m in messages]


def messages_to_trim() -> list[Any]:
    """Upstream's ``_MESSAGES_TO_TRIM``."""
    return [
        lc.SystemMessage("This is a 4 token text."),
        lc.HumanMessage("This is a 4 token text.", id="first"),
        lc.AIMessage(
            [
                {"type": "text", "text": "This is the FIRST 4 token block."},
                {"type": "text", "text": "This is the SECOND 4 token block."},
            ],
            id="second",
        ),
        lc.HumanMessage("This is a 4 token text.", id="third"),
        lc.AIMessage("This is a 4 token text.", id="fourth"),
    ]


def tool_call_messages() -> list[Any]:
    """Upstream's ``_TOOL_CALL_MESSAGES``: a conversation with one tool-call exchange."""
    return [
        lc.HumanMessage("hi"),
        lc.AIMessage("hello"),
        lc.HumanMessage("what's the weather in florida?"),
        lc.AIMessage(
            [
                {"type": "text", "text": "let's check the weather in florida"},
                {"type": "tool_use", "id": "abc123", "name": "get_weather", "input": {"location": "florida"}},
            ],
            tool_calls=[
                {"name": "get_weather", "args": {"location": "florida"}, "id": "abc123", "type": "tool_call"},
            ],
        ),
        lc.ToolMessage("It's sunny.", name="get_weather", tool_call_id="abc123"),
    ]
