"""Message <-> plain dict, for JSON storage: ``{"type": ..., "data": {...}}``. Deserialization is allow-list only:
nothing named in the data is ever imported, so a stored conversation cannot make ctxwin load code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin.messages._ai import AIMessage, AIMessageChunk
from ctxwin.messages._base import BaseMessage
from ctxwin.messages._chat import ChatMessage, ChatMessageChunk
from ctxwin.messages._human import HumanMessage, HumanMessageChunk
from ctxwin.messages._limits import NestingError
from ctxwin.messages._remove import RemoveMessage
from ctxwin.messages._system import SystemMessage, SystemMessageChunk
from ctxwin.messages._tool import ToolMessage, ToolMessageChunk

MESSAGE_TYPES: dict[str, type[BaseMessage]] = {
    cls.model_fields["type"].default: cls
    for cls in (
        HumanMessage,
        AIMessage,
        SystemMessage,
        ToolMessage,
        ChatMessage,
        RemoveMessage,
        HumanMessageChunk,
        AIMessageChunk,
        SystemMessageChunk,
        ToolMessageChunk,
        ChatMessageChunk,
    )
}


def message_to_dict(message: BaseMessage) -> dict[str, Any]:
    """``{"type": message.type, "data": <all fields>}``; JSON-safe when the content and artifact are."""
    return {"type": message.type, "data": message.model_dump()}


def messages_to_dict(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    return [message_to_dict(m) for m in messages]


def message_from_dict(item: Any, index: int | None = None) -> BaseMessage:
    """Rebuild one message from ``message_to_dict`` output; errors name the item's index."""
    where = f"messages[{index}]" if index is not None else "message"
    if not isinstance(item, dict):
        raise InvalidTypeError(f"{where}: expected a dict with 'type' and 'data', got {type(item).__name__}")
    kind, data = item.get("type"), item.get("data")
    if not isinstance(kind, str) or not isinstance(data, dict):
        raise InvalidInputError(
            f"{where}: expected a dict with a string 'type' and a dict 'data', got keys {sorted(item)}"
        )
    cls = MESSAGE_TYPES.get(kind)
    if cls is RemoveMessage and data.get("id") is None:
        raise InvalidInputError(f"{where}: a remove message needs the 'id' of the message to remove")
    if cls is None:
        raise InvalidInputError(
            f"{where}: got unexpected message type: {kind!r}; expected one of {sorted(MESSAGE_TYPES)}"
        )
    try:
        return cls.model_validate({**data, "type": kind})
    except ValidationError as exc:
        raise InvalidInputError(f"{where}: {validation_detail(exc, f'invalid {kind} message')}") from None


def messages_from_dict(messages: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """Inverse of ``messages_to_dict``."""
    return [message_from_dict(item, i) for i, item in enumerate(messages)]


def validation_detail(exc: ValidationError, what: str) -> str:
    """The first error of a failed validation on one line: ``<what>: <field>: <problem>``, or the NestingError's
    own text when the message was refused for its nesting (``model_validate`` wraps what ``__init__`` raises)."""
    err = exc.errors()[0]
    cause = err.get("ctx", {}).get("error")
    if isinstance(cause, NestingError):
        return str(cause)
    location = ".".join(str(p) for p in err["loc"]) or "message"
    return f"{what}: {location}: {err['msg']}"
