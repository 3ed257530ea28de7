"""BaseChatMessageHistory: the interface every chat history shares (LangChain's names and signatures).

Subclasses implement ``messages``, ``add_messages`` and ``clear``. Unlike LangChain, ``add_messages`` is the
primitive (so a batch can be stored atomically) and ``add_message`` calls it. The async twins run the blocking
methods in a worker thread (``asyncio.to_thread``), which is right for file and database stores.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Sequence

from ctxwin.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    MessageLike,
    RemoveMessage,
    convert_to_messages,
    get_buffer_string,
)


class BaseChatMessageHistory(ABC):
    """A stored conversation: read it with ``messages``, append with ``add_message(s)``, empty it with ``clear``."""

    @property
    @abstractmethod
    def messages(self) -> list[BaseMessage]:
        """Every stored message, oldest first (a fresh list; changing it does not change the store)."""

    @abstractmethod
    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append ``messages`` in order; when this returns they are stored (durably, for persistent stores)."""

    @abstractmethod
    def clear(self) -> None:
        """Remove every message of this history."""

    def revision(self) -> tuple[Hashable, int] | None:
        """A cheap mark of the stored messages' state, so a reader can tell whether it must read them again.

        ``(others, writes)``: ``others`` changes whenever anyone but this object changes the stored messages, and
        ``writes`` counts this object's writes (a non-empty ``add_messages``, a ``clear``); so after one
        ``add_messages`` of at least one message through this object and no other change, it is
        ``(others, writes + 1)``. None (the default) when the store cannot
        tell cheaply; readers then read everything every time.
        """
        return None

    def add_message(self, message: BaseMessage) -> None:
        self.add_messages([message])

    def add_user_message(self, message: HumanMessage | str) -> None:
        self.add_message(HumanMessage(message) if isinstance(message, str) else message)

    def add_ai_message(self, message: AIMessage | str) -> None:
        self.add_message(AIMessage(message) if isinstance(message, str) else message)

    async def aget_messages(self) -> list[BaseMessage]:
        return await asyncio.to_thread(lambda: self.messages)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await asyncio.to_thread(self.add_messages, messages)

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)

    def __str__(self) -> str:
        return get_buffer_string(self.messages)


def checked_messages(messages: Iterable[MessageLike]) -> list[BaseMessage]:
    """The messages to store: message-like items converted, RemoveMessage refused.

    A history is an append-only log of what was said; deleting by id is the job of the ``add_messages`` reducer,
    so storing a RemoveMessage (as LangChain would) is refused rather than kept as a phantom message.
    """
    if isinstance(messages, (BaseMessage, str, dict)):
        raise TypeError(
            f"add_messages expects a sequence of messages, got a single {type(messages).__name__}; "
            "use add_message for one message"
        )
    converted = convert_to_messages(list(messages))
    for index, message in enumerate(converted):
        if isinstance(message, RemoveMessage):
            raise ValueError(
                f"messages[{index}]: a RemoveMessage (id={message.id!r}) cannot be stored; chat histories are "
                "append-only. "
                "Apply removals with ctxwin.history.add_messages and store the result after clear()"
            )
    return converted
