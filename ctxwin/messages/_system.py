"""SystemMessage: instructions that prime the model. OpenAI's ``developer`` role maps here."""

from __future__ import annotations

from typing import Any, Literal

from ctxwin.messages._base import BaseMessage, BaseMessageChunk, Content


class SystemMessage(BaseMessage):
    type: Literal["system"] = "system"

    def __init__(self, content: Content = "", **kwargs: Any) -> None:
        super().__init__(content=content, **kwargs)


class SystemMessageChunk(SystemMessage, BaseMessageChunk):
    type: Literal["SystemMessageChunk"] = "SystemMessageChunk"  # type: ignore[assignment]
