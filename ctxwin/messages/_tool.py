"""ToolMessage: the result of a tool call sent back to the model (the tool calls are in ``tool_calls``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal
from uuid import UUID

from pydantic import model_validator

from ctxwin._errors import InvalidInputError
from ctxwin.messages._base import BaseMessage, BaseMessageChunk, Content
from ctxwin.messages._merge import merge_obj


def _coerce_tool_fields(values: Any) -> Any:
    """ToolMessage accepts any tool output: non-text content is stringified, ids may be ints or UUIDs."""
    if not isinstance(values, dict):
        return values
    values = dict(values)
    content = values.get("content")
    if isinstance(content, tuple):
        content = list(content)
    if content is not None and not isinstance(content, (str, list)):
        content = str(content)
    elif isinstance(content, list):
        content = [item if isinstance(item, (str, dict)) else str(item) for item in content]
    values["content"] = content
    call_id = values.get("tool_call_id")
    if isinstance(call_id, (UUID, int, float)) and not isinstance(call_id, bool):
        values["tool_call_id"] = str(call_id)
    return values


class ToolMessage(BaseMessage):
    """The result of a tool call, sent back to the model; ``artifact`` holds what the model should not see."""

    tool_call_id: str
    artifact: Any = None
    status: Literal["success", "error"] = "success"
    type: Literal["tool"] = "tool"

    def __init__(self, content: Content | Any = "", **kwargs: Any) -> None:
        super().__init__(content=content, **kwargs)

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, values: Any) -> Any:
        return _coerce_tool_fields(values)


class ToolMessageChunk(ToolMessage, BaseMessageChunk):
    type: Literal["ToolMessageChunk"] = "ToolMessageChunk"  # type: ignore[assignment]

    def _merged_fields(self, others: Sequence[BaseMessageChunk]) -> dict[str, Any]:
        tool_others = [o for o in others if isinstance(o, ToolMessageChunk)]
        if any(other.tool_call_id != self.tool_call_id for other in tool_others):
            raise InvalidInputError("Cannot concatenate ToolMessageChunks with different names.")
        artifact = merge_obj(self.artifact, *(other.artifact for other in tool_others))
        statuses = {self.status, *(o.status for o in tool_others)}
        return {
            **super()._merged_fields(others),
            "tool_call_id": self.tool_call_id,
            "artifact": artifact,
            "status": "error" if "error" in statuses else "success",
        }
