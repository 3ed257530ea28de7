"""``filter_messages``: keep messages by name, type or id, and drop tool calls together with their results."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ctxwin.engine.message_types import is_message_type, parse_type_spec
from ctxwin.engine.tool_calls import keep_tool_calls
from ctxwin.messages import AIMessage, BaseMessage, ToolMessage, convert_to_messages


def _id_set(value: Any, argument: str) -> set[Any] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"{argument} must be a sequence of strings, got {type(value).__name__}")
    return set(value)


def filter_messages(
    messages: Iterable[Any],
    *,
    include_names: Sequence[str] | None = None,
    exclude_names: Sequence[str] | None = None,
    include_types: Sequence[str | type[BaseMessage]] | None = None,
    exclude_types: Sequence[str | type[BaseMessage]] | None = None,
    include_ids: Sequence[str] | None = None,
    exclude_ids: Sequence[str] | None = None,
    exclude_tool_calls: Sequence[str] | bool | None = None,
) -> list[BaseMessage]:
    """Messages matching at least one ``include_*`` condition (all, if none is given) and no ``exclude_*`` one.

    LangChain's semantics: types are strings (``"human"``) or classes; ``exclude_tool_calls=True`` drops every
    AIMessage with tool calls and every ToolMessage; a sequence of call ids drops those ToolMessages and those calls
    from their AIMessage (the message goes when no call is left). ctxwin also removes the calls' raw OpenAI entries
    from ``additional_kwargs``. Unlike LangChain, an unknown type string or a bare string where a sequence of
    names or ids is expected raises, instead of silently matching by substring.
    """
    include_name_set = _id_set(include_names, "include_names")
    exclude_name_set = _id_set(exclude_names, "exclude_names")
    include_id_set = _id_set(include_ids, "include_ids")
    exclude_id_set = _id_set(exclude_ids, "exclude_ids")
    include_type_spec = parse_type_spec(include_types, "include_types") if include_types else None
    exclude_type_spec = parse_type_spec(exclude_types, "exclude_types") if exclude_types else None
    drop_all_calls = exclude_tool_calls is True
    drop_calls = (
        _id_set(exclude_tool_calls, "exclude_tool_calls")
        if exclude_tool_calls is not None and not isinstance(exclude_tool_calls, bool)
        else None
    )
    excluded_calls = drop_calls or set()
    any_include = bool(include_name_set or include_id_set or include_type_spec)
    kept: list[BaseMessage] = []
    for message in convert_to_messages(messages):
        if (
            (exclude_name_set and message.name in exclude_name_set)
            or (exclude_type_spec and is_message_type(message, exclude_type_spec))
            or (exclude_id_set and message.id in exclude_id_set)
        ):
            continue
        if drop_all_calls and (
            isinstance(message, ToolMessage) or (isinstance(message, AIMessage) and message.tool_calls)
        ):
            continue
        if drop_calls:
            if isinstance(message, AIMessage) and message.tool_calls:
                message = keep_tool_calls(message, lambda call_id: call_id not in excluded_calls)
                if not message.tool_calls:
                    continue
            elif isinstance(message, ToolMessage) and message.tool_call_id in drop_calls:
                continue
        if (
            not any_include
            or (include_name_set and message.name in include_name_set)
            or (include_type_spec and is_message_type(message, include_type_spec))
            or (include_id_set and message.id in include_id_set)
        ):
            kept.append(message)
    return kept
