"""``start_on`` / ``end_on`` / ``include_types`` values: type strings, message classes, or sequences of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxwin.messages import BaseMessage
from ctxwin.messages.serialize import MESSAGE_TYPES

TypeSpec = tuple[frozenset[str], tuple[type[BaseMessage], ...]]


def parse_type_spec(value: Any, argument: str) -> TypeSpec:
    """Validate and normalise a type spec once, so matching is two cheap checks per message.

    Unlike LangChain, an unknown type string is an error rather than a filter that silently matches nothing. A
    message class from another library (LangChain's ``HumanMessage``) stands for its ``type`` string.
    """
    items = [value] if isinstance(value, (str, type)) else value
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        raise TypeError(f"{argument} must be a message type string, a message class or a sequence of them")
    names: set[str] = set()
    classes: list[type[BaseMessage]] = []
    for item in items:
        if isinstance(item, str):
            if item not in MESSAGE_TYPES:
                raise ValueError(
                    f"{argument}: unknown message type {item!r}; expected one of {', '.join(sorted(MESSAGE_TYPES))}"
                )
            names.add(item)
        elif isinstance(item, type) and issubclass(item, BaseMessage):
            classes.append(item)
        elif isinstance(item, type) and isinstance(_foreign_type(item), str):
            names.add(_foreign_type(item))
        else:
            raise TypeError(
                f"{argument}: expected a message type string or a message class, got {item!r} ({type(item).__name__})"
            )
    return frozenset(names), tuple(classes)


def _foreign_type(cls: type) -> Any:
    fields = getattr(cls, "model_fields", None)
    field = fields.get("type") if isinstance(fields, dict) else None
    return getattr(field, "default", None)


def is_message_type(message: BaseMessage, spec: TypeSpec) -> bool:
    names, classes = spec
    return message.type in names or isinstance(message, classes)
