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

    Each run is collected first and merged in one step, in time linear in its size (LangChain merges each message
    into the growing result, which is quadratic in the run's length).
    """
    if not isinstance(chunk_separator, str):
        raise TypeError(f"chunk_separator must be a string, got {type(chunk_separator).__name__}")
    merged: list[BaseMessage] = []
    run: list[BaseMessage] = []
    run_class: type[BaseMessage] = BaseMessage
    for message in convert_to_messages(messages):
        if run and _joins(run_class, message):
            if len(run) == 1:  # merged, the run is a message of the plain class its first message converts to
                run_class = next(cls for cls, _ in _CHUNK_CLASSES if isinstance(run[0], cls))
            run.append(message)
            continue
        if run:
            merged.append(_merge_run(run, chunk_separator))
        run, run_class = [message], message.__class__
    if run:
        merged.append(_merge_run(run, chunk_separator))
    return merged


def _joins(run_class: type[BaseMessage], message: BaseMessage) -> bool:
    return (
        not isinstance(message, (ToolMessage, RemoveMessage))
        and not issubclass(run_class, RemoveMessage)
        and isinstance(message, run_class)
    )


def _merge_run(run: list[BaseMessage], chunk_separator: str) -> BaseMessage:
    if len(run) == 1:
        return run[0]
    first, *rest = map(_to_chunk, run)
    # The separator goes between string contents while the merged content is still a non-empty string.
    still_text, has_text = isinstance(first.content, str), bool(first.content)
    for chunk in rest:
        chunk.response_metadata = {}
        if not still_text:
            continue
        if not isinstance(chunk.content, str):
            still_text = False
        elif chunk.content:
            if has_text:
                chunk.content = chunk_separator + chunk.content
            has_text = True
    return message_chunk_to_message(first + rest)
