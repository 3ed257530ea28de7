"""``merge_message_runs``: merge consecutive messages of the same class into one."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ctxwin.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    BaseMessageChunk,
    ChatMessage,
    ChatMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    RemoveMessage,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    convert_to_messages,
    message_chunk_to_message,
)

_CHUNK_CLASSES: tuple[tuple[type[BaseMessage], type[BaseMessageChunk]], ...] = (
    (AIMessage, AIMessageChunk),
    (HumanMessage, HumanMessageChunk),
    (SystemMessage, SystemMessageChunk),
    (ChatMessage, ChatMessageChunk),
)


def _to_chunk(message: BaseMessage) -> BaseMessageChunk:
    for message_cls, chunk_cls in _CHUNK_CLASSES:
        if isinstance(message, message_cls):
            return chunk_cls.model_validate(message.model_dump(exclude={"type"}))
    raise ValueError(f"cannot merge a {type(message).__name__}")


def merge_message_runs(messages: Iterable[Any], *, chunk_separator: str = "\n") -> list[BaseMessage]:
    """Merge each run of consecutive messages of the same class, as LangChain does.

    String contents are joined with ``chunk_separator`` (when both are non-empty); if either content is a list,
    the result is a list of blocks. Tool calls, ``additional_kwargs`` and ids merge as chunks do; the later
    message's ``response_metadata`` is dropped. ToolMessages are never merged (each answers its own call), nor
    are RemoveMessages (LangChain raises on two in a row; they are instructions, not content).
    """
    if not isinstance(chunk_separator, str):
        raise TypeError(f"chunk_separator must be a string, got {type(chunk_separator).__name__}")
    merged: list[BaseMessage] = []
    for message in convert_to_messages(messages):
        last = merged[-1] if merged else None
        if (
            last is None
            or isinstance(message, (ToolMessage, RemoveMessage))
            or isinstance(last, RemoveMessage)
            or not isinstance(message, last.__class__)
        ):
            merged.append(message)
            continue
        last_chunk, chunk = _to_chunk(last), _to_chunk(message)
        chunk.response_metadata = {}
        both_text = isinstance(last_chunk.content, str) and isinstance(chunk.content, str)
        if both_text and last_chunk.content and chunk.content:
            last_chunk.content = f"{last_chunk.content}{chunk_separator}"
        merged[-1] = message_chunk_to_message(last_chunk + chunk)
    return merged
