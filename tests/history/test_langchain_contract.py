"""A history written to LangChain's contract (overriding ``messages``, ``add_messages`` and ``clear``) still works
with the base class that now asks for ``stored_messages``, ``store_messages`` and ``clear_stored``."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ctxwin.history._base import BaseChatMessageHistory
from ctxwin.history._windowed import WindowedHistory
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage


class ListHistory(BaseChatMessageHistory):
    """A user's own store, as LangChain's docs show one: a list behind the three LangChain methods."""

    def __init__(self) -> None:
        self.items: list[BaseMessage] = []

    @property
    def messages(self) -> list[BaseMessage]:
        return list(self.items)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        self.items.extend(messages)

    def clear(self) -> None:
        self.items = []


def test_a_langchain_contract_history_works_alone_and_under_a_window() -> None:
    history = ListHistory()
    history.add_user_message("hello")
    history.add_ai_message("hi there")
    assert history.messages == [HumanMessage("hello"), AIMessage("hi there")]
    assert history.stored_messages() == history.messages and "hello" in str(history)
    window = WindowedHistory(history, max_messages=2)
    window.add_messages([HumanMessage("second question"), AIMessage("second answer")])
    assert [m.content for m in history.messages][-2:] == ["second question", "second answer"]
    assert [m.content for m in window.messages] == ["second question", "second answer"]
    window.clear()
    assert history.messages == [] and window.messages == []


def test_a_history_implementing_nothing_says_what_is_missing() -> None:
    class Empty(BaseChatMessageHistory):
        pass

    with pytest.raises(NotImplementedError, match=r"Empty implements neither stored_messages\(\) nor messages"):
        _ = Empty().messages
    with pytest.raises(NotImplementedError, match=r"neither store_messages\(\) nor add_messages"):
        Empty().add_message(HumanMessage("hello"))
