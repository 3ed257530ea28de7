"""ChatMessage: a message with an arbitrary role, for roles the other classes do not name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from ctxwin._errors import InvalidInputError
from ctxwin.messages._base import BaseMessage, BaseMessageChunk, Content


class ChatMessage(BaseMessage):
    role: str
    type: Literal["chat"] = "chat"

    def __init__(self, content: Content = "", **kwargs: Any) -> None:
        super().__init__(content=content, **kwargs)


class ChatMessageChunk(ChatMessage, BaseMessageChunk):
    type: Literal["ChatMessageChunk"] = "ChatMessageChunk"  # type: ignore[assignment]

    def _merged_fields(self, others: Sequence[BaseMessageChunk]) -> dict[str, Any]:
        if any(isinstance(o, ChatMessageChunk) and o.role != self.role for o in others):
            raise InvalidInputError("Cannot concatenate ChatMessageChunks with different roles.")
        return {**super()._merged_fields(others), "role": self.role}
