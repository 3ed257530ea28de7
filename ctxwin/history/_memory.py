"""InMemoryChatMessageHistory: a history held in a list, for tests and short-lived sessions."""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence
from typing import Any, ClassVar

from ctxwin.history._base import BaseChatMessageHistory
from ctxwin.messages import BaseMessage


class InMemoryChatMessageHistory(BaseChatMessageHistory):
    """Messages kept in memory; safe to share between threads and asyncio tasks.

    LangChain's class is a pydantic model with a mutable ``messages`` field; here ``messages`` returns a copy so a
    caller cannot change the store behind its back, and messages may be passed to the constructor (LangChain
    messages there read back as the caller's own objects, as if added).
    """

    copies_on_read: ClassVar[bool] = False

    def __init__(self, messages: Sequence[Any] = ()) -> None:
        self._lock = threading.Lock()
        self._messages: list[BaseMessage] = []
        self._writes = 0  # add_messages and clear calls, for revision()
        self.add_messages(messages)
        self._writes = 0

    def stored_messages(self) -> list[BaseMessage]:
        with self._lock:
            return list(self._messages)

    def store_messages(self, batch: list[BaseMessage]) -> None:
        with self._lock:
            self._messages.extend(batch)
            self._writes += 1

    def clear_stored(self) -> None:
        with self._lock:
            self._messages.clear()
            self._writes += 1

    def revision(self) -> tuple[Hashable, int]:
        """Only this object writes its list, so its write count says it all."""
        with self._lock:
            return None, self._writes

    async def aget_messages(self) -> list[Any]:
        return self.messages

    async def aadd_messages(self, messages: Sequence[Any]) -> None:
        self.add_messages(messages)

    async def aclear(self) -> None:
        self.clear()
