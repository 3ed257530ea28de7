"""``add_messages``: LangGraph's message-list reducer, without LangGraph. Where it differs (the caller's messages never
mutated, ids kept under ``format="openai"``...), it avoids a surprise LangGraph has (docs/history.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import partial
from typing import Any, Literal, overload

from ctxwin._errors import InvalidInputError
from ctxwin.messages import (
    REMOVE_ALL_MESSAGES,
    BaseMessage,
    BaseMessageChunk,
    MessageLike,
    RemoveMessage,
    convert_to_messages,
    convert_to_openai_messages,
    message_chunk_to_message,
)
from ctxwin.messages._convert import is_langchain_message
from ctxwin.messages._forms import CallerForms

Messages = list[MessageLike] | MessageLike
Format = Literal["openai", "langchain-openai"]
_FORMATS = ("openai", "langchain-openai")
Reducer = Callable[[Messages, Messages], list[BaseMessage]]


@overload
def add_messages(left: Messages, right: Messages, *, format: Format | None = None) -> list[BaseMessage]: ...


@overload
def add_messages(left: None = None, right: None = None, *, format: Format | None = None) -> Reducer: ...


def add_messages(
    left: Messages | None = None, right: Messages | None = None, *, format: Format | None = None
) -> list[BaseMessage] | Reducer:
    """Merge ``right`` into ``left`` by message id and return the new list.

    Called with neither list, returns the reducer itself with ``format`` bound, as LangGraph allows in
    ``Annotated[list, add_messages(format="openai")]``.

    >>> from ctxwin.messages import AIMessage, HumanMessage
    >>> msgs = add_messages([HumanMessage("Hello", id="1")], [AIMessage("Hi!", id="2")])
    >>> [m.content for m in add_messages(msgs, HumanMessage("Hello again", id="1"))]
    ['Hello again', 'Hi!']
    """
    if format is not None and format not in _FORMATS:
        raise InvalidInputError(f"Unrecognized format={format!r}. Expected one of 'openai', 'langchain-openai' or "
                                f"None.")
    if left is None and right is None:
        return partial(_reduce, format=format)
    if left is None or right is None:
        raise InvalidInputError(
            "Must specify non-null arguments for both 'left' and 'right' (or neither, to get a configured "
            f"reducer). Only received: '{'left' if left is not None else 'right'}'."
        )
    return _reduce(left, right, format=format)


def _reduce(left: Messages, right: Messages, *, format: Format | None) -> list[Any]:
    # The same id-less object passed twice gets one id, as with LangGraph's in-place ids. Keyed by id(), with the
    # object kept alive so that no other object can reuse its address during the call.
    assigned: dict[int, tuple[BaseMessage, str]] = {}
    forms = None
    if format is None:  # with LangChain messages on either side, the result is LangChain messages
        lefts = left if isinstance(left, list) else [left]
        everything = [*lefts, *(right if isinstance(right, list) else [right])]
        caller = [i for i, item in enumerate(everything) if is_langchain_message(item)]
        found = CallerForms.read_langchain([everything[i] for i in caller]) if caller else None
        if found is not None:
            items, forms = found
            for i, item in zip(caller, items, strict=True):
                everything[i] = item
            left, right = everything[: len(lefts)], everything[len(lefts) :]
    old = _with_ids(left, "left", assigned)
    new = _with_ids(right, "right", assigned)
    remove_all = max((i for i, m in enumerate(new) if _is_remove_all(m)), default=None)
    if remove_all is not None:
        old, new = [], new[remove_all + 1 :]
    merged = list(old)
    position = {m.id: i for i, m in enumerate(merged)}
    removed: set[str | None] = set()
    for message in new:
        index = position.get(message.id)
        if index is not None:
            if isinstance(message, RemoveMessage):
                removed.add(message.id)
            else:
                removed.discard(message.id)
                merged[index] = message
        elif isinstance(message, RemoveMessage):
            raise InvalidInputError(f"Attempting to delete a message with an ID that doesn't exist ('{message.id}')")
        else:
            position[message.id] = len(merged)
            merged.append(message)
    if removed:
        merged = [m for m in merged if m.id not in removed]
    if format is not None:
        merged = convert_to_messages(convert_to_openai_messages(merged, include_id=True))
    return merged if forms is None else forms.back_all(merged)


def _with_ids(messages: Any, side: str, assigned: dict[int, tuple[BaseMessage, str]]) -> list[BaseMessage]:
    """Messages (chunks merged into messages), each with an id; items without one are copied, never mutated."""
    items = messages if isinstance(messages, list) else [messages]
    if all(issubclass(t, BaseMessage) and not issubclass(t, BaseMessageChunk) for t in set(map(type, items))):
        converted: list[BaseMessage] = items  # a long state is all plain messages: nothing to convert
    else:
        try:
            converted = [message_chunk_to_message(m) for m in convert_to_messages(items)]
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"add_messages: {side}: {exc}") from None
    out: list[BaseMessage] = []
    for message in converted:
        if message.id is None:
            _, new_id = assigned.setdefault(id(message), (message, str(uuid.uuid4())))
            message = message.model_copy(update={"id": new_id})
        out.append(message)
    return out


def _is_remove_all(message: BaseMessage) -> bool:
    return isinstance(message, RemoveMessage) and message.id == REMOVE_ALL_MESSAGES
