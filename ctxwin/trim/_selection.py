"""Choosing and combining messages: the type specs of ``start_on``/``end_on``/``include_types``, ``filter_messages``
and ``merge_message_runs``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ctxwin._errors import InvalidInputError, InvalidTypeError
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
from ctxwin.messages._serialize import MESSAGE_TYPES
from ctxwin.trim._tool_pairs import keep_tool_calls

TypeSpec = tuple[frozenset[str], tuple[type[BaseMessage], ...]]


def parse_type_spec(value: Any, argument: str) -> TypeSpec:
    """Validate and normalise a type spec once, so matching is two cheap checks per message.

    Unlike LangChain, an unknown type string is an error rather than a filter that silently matches nothing. A
    message class from another library (LangChain's ``HumanMessage``) stands for its ``type`` string.
    """
    items = [value] if isinstance(value, (str, type)) else value
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        raise InvalidTypeError(f"{argument} must be a message type string, a message class or a sequence of them")
    names: set[str] = set()
    classes: list[type[BaseMessage]] = []
    for item in items:
        if isinstance(item, str):
            if item not in MESSAGE_TYPES:
                raise InvalidInputError(
                    f"{argument}: unknown message type {item!r}; expected one of {', '.join(sorted(MESSAGE_TYPES))}"
                )
            names.add(item)
        elif isinstance(item, type) and issubclass(item, BaseMessage):
            classes.append(item)
        elif isinstance(item, type) and isinstance(_foreign_type(item), str):
            names.add(_foreign_type(item))
        else:
            raise InvalidTypeError(
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


def _id_set(value: Any, argument: str) -> set[Any] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidTypeError(f"{argument} must be a sequence of strings, got {type(value).__name__}")
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
    raise InvalidInputError(f"cannot merge a {type(message).__name__}")


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
        raise InvalidTypeError(f"chunk_separator must be a string, got {type(chunk_separator).__name__}")
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
