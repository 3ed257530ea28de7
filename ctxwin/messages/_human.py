"""HumanMessage: what the user said."""

from __future__ import annotations

from typing import Any, Literal

from ctxwin.messages._base import BaseMessage, BaseMessageChunk, Content


class HumanMessage(BaseMessage):
    type: Literal["human"] = "human"

    def __init__(self, content: Content = "", **kwargs: Any) -> None:
        super().__init__(content=content, **kwargs)


class HumanMessageChunk(HumanMessage, BaseMessageChunk):
    type: Literal["HumanMessageChunk"] = "HumanMessageChunk"  # type: ignore[assignment]
