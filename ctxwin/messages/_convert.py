"""``convert_to_messages``: every common chat shape in (LangChain objects, OpenAI chat and Responses items, Anthropic
blocks, whole requests, pairs, strings), ctxwin messages out; anything else is refused naming its index.
The accepted shapes: docs/interop.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

from pydantic import ValidationError

from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin.messages._ai import AIMessage
from ctxwin.messages._base import BaseMessage, BaseMessageChunk
from ctxwin.messages._chat import ChatMessage
from ctxwin.messages._human import HumanMessage
from ctxwin.messages._remove import RemoveMessage
from ctxwin.messages._serialize import MESSAGE_TYPES, message_from_dict, validation_detail
from ctxwin.messages._system import SystemMessage
from ctxwin.messages._tool import ToolMessage
from ctxwin.messages._tool_calls import InvalidToolCall, ToolCall, default_tool_parser, tool_call
from ctxwin.messages._tool_forms import openai_tools

MessageLike = BaseMessage | str | tuple[str, Any] | list[Any] | dict[str, Any] | Any

ROLE_NAMES = "'human', 'user', 'ai', 'assistant', 'function', 'tool', 'system', 'developer' or 'remove'"
_ROLE_CLASSES: dict[str, type[BaseMessage]] = {
    "human": HumanMessage,
    "user": HumanMessage,
    "ai": AIMessage,
    "assistant": AIMessage,
    "system": SystemMessage,
    "developer": SystemMessage,
    "tool": ToolMessage,
    "remove": RemoveMessage,
}


class _ItemError(Exception):
    """An error inside one item, re-raised with the item's index by ``convert_to_messages``."""

    def __init__(self, kind: type[Exception], detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


def convert_to_messages(messages: Iterable[MessageLike] | MessageLike) -> list[BaseMessage]:
    """Convert a sequence of message-like items (or a single one) into ctxwin messages.

    Messages are returned as they are (never copied or mutated), in a new list. An Anthropic user turn holding
    several ``tool_result`` blocks becomes one ToolMessage per result, followed by a HumanMessage for any other
    blocks.
    """
    converted = read_messages(messages)
    return list(converted) if converted is messages else converted


def read_messages(messages: Iterable[MessageLike] | MessageLike) -> list[BaseMessage]:
    """``convert_to_messages`` for a caller that only reads the result during the call: a list that already holds
    only messages is returned itself, checked by class (one ``issubclass`` per distinct class: ``isinstance`` with a
    pydantic class costs about 40 ns a message), so a long history costs no copy."""
    if isinstance(messages, list) and all(issubclass(kind, BaseMessage) for kind in set(map(type, messages))):
        return messages
    result: list[BaseMessage] = []
    request = False
    if is_request(messages):
        request = True
        result.extend(_request_system(messages))
        messages = request_messages(messages)
    if isinstance(messages, (str, BaseMessage, Mapping)) or is_langchain_message(messages) or (
        not request and _is_sdk_object(messages)
    ):
        messages = [messages]
    elif hasattr(messages, "to_messages") and callable(messages.to_messages):  # LangChain PromptValue
        messages = messages.to_messages()
    if not isinstance(messages, Iterable):
        what = "a request's 'messages'" if request else "a sequence of messages"
        raise InvalidTypeError(f"expected {what}, got {type(messages).__name__}")
    turn = _ResponsesTurn()
    for index, item in enumerate(messages):
        try:
            if _is_sdk_object(item):
                item = sdk_fields(item)
            if turn.takes(item):
                turn.add(item, index)
                continue
        except _ItemError as exc:
            raise exc.kind(f"messages[{index}]: {exc.detail}") from None
        result.extend(turn.flush())
        try:
            result.extend(_convert_item(item, index))
        except _ItemError as exc:
            raise exc.kind(f"messages[{index}]: {exc.detail}") from None
    result.extend(turn.flush())
    return result


def is_request(obj: Any) -> TypeGuard[Mapping[str, Any]]:
    """Whether ``obj`` is a whole chat request rather than one message: Anthropic's ``{"system", "messages",
    "tools"}``, OpenAI's ``{"model", "messages", ...}`` or a Responses request ``{"input", "instructions", ...}``."""
    return (
        isinstance(obj, Mapping)
        and ("messages" in obj or ("input" in obj and "type" not in obj))
        and "role" not in obj
        and "content" not in obj
    )


def request_messages(request: Mapping[str, Any]) -> Any:
    """A request's messages: ``messages``, or a Responses request's ``input`` (a string is one user message)."""
    if "messages" in request:
        return request["messages"]
    found = request["input"]
    return [found] if isinstance(found, str) else found


def request_tools(obj: Any) -> list[dict[str, Any]] | None:
    """The tool definitions a request (``is_request``) sends, in OpenAI's function form (Anthropic's ``name`` /
    ``description`` / ``input_schema`` tools and Responses' flat function tools translated; server tools kept as
    given); None for anything else."""
    if not is_request(obj) or not obj.get("tools"):
        return None
    tools = obj["tools"]
    if not isinstance(tools, (list, tuple)):
        raise InvalidTypeError(f"a request's 'tools' must be a list of tool definition dicts, got "
                               f"{type(tools).__name__}")
    return openai_tools(tools)


# Marks the system message read from a Responses request's ``instructions``, so it goes back as ``instructions``.
INSTRUCTIONS = "__responses_instructions__"


def _request_system(request: Mapping[str, Any]) -> list[BaseMessage]:
    """A request's top-level ``system`` (a string or text blocks), or Responses ``instructions``, as its first
    message."""
    key = "system" if "messages" in request else "instructions"
    system = request.get(key)
    if system is None or system == "" or system == []:
        return []
    try:
        fields: dict[str, Any] = {"content": _check_content(system)}
        if key == "instructions":
            fields["additional_kwargs"] = {INSTRUCTIONS: True}
        return [_build(SystemMessage, fields)]
    except _ItemError as exc:
        raise exc.kind(f"{key}: {exc.detail}") from None


def _is_sdk_object(obj: Any) -> bool:
    """A pydantic object of a provider SDK (``openai``'s ``ChatCompletionMessage``, a Responses item)."""
    return (
        not isinstance(obj, (BaseMessage, Mapping, str, tuple, list))
        and callable(getattr(obj, "model_dump", None))
        and not is_langchain_message(obj)
    )


def sdk_fields(obj: Any) -> dict[str, Any]:
    """An SDK object's fields as JSON (null fields left out, as the API omits most of them, but a null ``content``
    kept as null)."""
    fields: dict[str, Any] = obj.model_dump(mode="json", exclude_none=True)
    if "role" in fields and "content" not in fields:
        fields["content"] = None
    if "usage" in fields and fields.get("type") == "message":  # an Anthropic response: its assistant message
        return {key: fields[key] for key in ("role", "content", "id")}
    return fields


_KNOWN_KINDS = frozenset({*MESSAGE_TYPES, *_ROLE_CLASSES, "function"})
# A ``compaction`` item (server-side compaction) comes first in a response's output: read into the assistant turn
# it opens, kept whole like a reasoning item.
_RESPONSES_ASSISTANT = frozenset({"reasoning", "function_call", "compaction"})


class _ResponsesTurn:
    """Consecutive Responses items of one assistant turn, read into one AIMessage when the turn ends."""

    __slots__ = ("calls", "content", "id", "invalid", "raw_calls", "start")

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.start = -1
        self.id: Any = None  # the assistant message item's
        self.content: list[Any] = []
        self.calls: list[ToolCall] = []
        self.invalid: list[InvalidToolCall] = []
        self.raw_calls: list[dict[str, Any]] = []

    @staticmethod
    def takes(item: Any) -> TypeGuard[Mapping[str, Any]]:
        if not isinstance(item, Mapping):
            return False
        kind = item.get("type")
        return isinstance(kind, str) and (
            kind in _RESPONSES_ASSISTANT or (kind == "message" and item.get("role") == "assistant")
        )

    def add(self, item: Mapping[str, Any], index: int) -> None:
        if self.start < 0:
            self.start = index
        kind = item["type"]
        if kind in ("reasoning", "compaction"):
            self.content.append(dict(item))  # kept whole: Responses needs it back as sent (id, encrypted content)
        elif kind == "message":
            self.id = self.id or item.get("id")
            content = _check_content(item.get("content"))
            self.content.extend([{"type": "text", "text": content}] if isinstance(content, str) else content)
        else:
            call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments")
            if not isinstance(call_id, str) or not call_id or not isinstance(name, str):
                raise _ItemError(InvalidInputError, "a 'function_call' item needs a string 'call_id' and 'name'")
            if not isinstance(arguments, str):
                raise _ItemError(InvalidTypeError, "a 'function_call' item's 'arguments' must be a JSON string")
            raw = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            valid, bad = default_tool_parser([raw])
            self.calls.extend(valid)
            self.invalid.extend(bad)
            self.raw_calls.append(raw)

    def flush(self) -> list[BaseMessage]:
        """The turn read so far as one AIMessage (none when empty); an error names the turn's first item."""
        if self.start < 0:
            return []
        fields = {"content": self.content, "tool_calls": self.calls, "invalid_tool_calls": self.invalid, "id": self.id}
        raw_calls, start = self.raw_calls, self.start
        self._reset()
        try:
            message = _build(AIMessage, fields)
        except _ItemError as exc:
            raise exc.kind(f"messages[{start}]: {exc.detail}") from None
        if raw_calls and isinstance(message, AIMessage):
            message._openai_tool_calls = raw_calls
        return [message]


def is_responses_assistant_item(item: Any) -> bool:
    """Whether ``item`` belongs to an assistant turn in Responses form (reasoning, an assistant ``message`` item, a
    ``function_call``): ``convert_to_messages`` reads consecutive ones into one AIMessage."""
    return _ResponsesTurn.takes(sdk_fields(item) if _is_sdk_object(item) else item)


def _convert_item(item: Any, index: int) -> list[BaseMessage]:
    if isinstance(item, BaseMessage):
        return [item]
    if isinstance(item, str):
        return [HumanMessage(item)]
    if isinstance(item, Mapping):
        return _from_dict(dict(item), index)
    if isinstance(item, (tuple, list)):
        if len(item) != 2 or not isinstance(item[0], str):
            raise _ItemError(
                InvalidTypeError, f"expected a (role, content) pair, got a {type(item).__name__} of {len(item)}"
            )
        return _from_role(item[0], {"content": item[1]})
    if is_langchain_message(item):
        return [_from_langchain(item)]
    raise _ItemError(
        InvalidTypeError,
        f"cannot convert {type(item).__name__} to a message; expected a message, a dict with 'role' and 'content', "
        "a (role, content) pair or a string",
    )


def is_langchain_message(obj: Any) -> bool:
    return (
        not isinstance(obj, (BaseMessage, Mapping, str, tuple, list))
        and isinstance(kind := getattr(obj, "type", None), str)
        and (kind in MESSAGE_TYPES or kind == "function")
        and hasattr(obj, "content")
    )


def _from_langchain(obj: Any) -> BaseMessage:
    fields = obj.model_dump() if callable(getattr(obj, "model_dump", None)) else dict(vars(obj))
    kind = fields.get("type")
    if kind == "function":  # LangChain's FunctionMessage: OpenAI's legacy function role
        fields["role"], kind = "function", "chat"
    cls = MESSAGE_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise _ItemError(InvalidInputError, f"unsupported LangChain message type {kind!r}")
    fields["type"] = kind
    return _build(cls, fields)


def _from_dict(item: dict[str, Any], index: int) -> list[BaseMessage]:
    kind = item.get("type")
    if "role" not in item and isinstance(item.get("data"), dict) and isinstance(kind, str) and kind in MESSAGE_TYPES:
        return [message_from_dict(item, index)]
    if kind == "function_call_output":  # OpenAI Responses: a tool result
        if not isinstance(item.get("call_id"), str) or not item["call_id"]:
            raise _ItemError(InvalidInputError, "a 'function_call_output' item needs a string 'call_id'")
        output = _check_content(item.get("output"))
        return [_build(ToolMessage, {"content": output, "tool_call_id": item["call_id"]})]
    given = f"keys {sorted(map(str, item))}" if item else "no keys"  # named in errors, before any key is taken
    if kind == "message" and "role" in item:  # OpenAI Responses: a user, system or developer message
        del item["type"]
    kind, role = item.pop("type", None), item.pop("role", None)
    if kind in ("chat", "ChatMessageChunk") and isinstance(role, str):  # a dumped ChatMessage keeps its role
        item["content"] = _check_content(item.get("content"))
        return [_build(MESSAGE_TYPES[kind], {**item, "role": role})]
    unknown = isinstance(kind, str) and kind not in _KNOWN_KINDS
    if role is None and unknown and "content" not in item and "data" not in item:
        raise _ItemError(
            InvalidInputError,
            f"cannot read an item of type {kind!r}: ctxwin reads messages and the Responses items 'message', "
            "'function_call', 'function_call_output', 'reasoning' and 'compaction'",
        )
    role = kind if role is None else role
    needs = "message dict must contain 'role' and 'content' keys"  # LangChain's sentence, then what is missing
    if role is None:
        raise _ItemError(InvalidInputError, f"{needs}: it has no 'role' ({given})")
    if not isinstance(role, str):
        raise _ItemError(InvalidTypeError, f"'role' must be a string, got {type(role).__name__}")
    if "content" not in item and not (role in ("assistant", "ai") and item.get("tool_calls")):
        calls = " (or 'tool_calls')" if role in ("assistant", "ai") else ""
        raise _ItemError(InvalidInputError, f"{needs}{calls}: this {role!r} message has no 'content' ({given})")
    return _from_role(role, item)


def _check_content(content: Any) -> str | list[Any]:
    """Content checked, Responses parts (``input_text``, ``output_text``, ``input_image`` with a URL) read as the
    chat blocks they stand for (``text``, ``image_url``), so they are counted and sent as what they are."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _ItemError(
            InvalidTypeError,
            f"content must be a string, a list of content blocks or None, got {type(content).__name__}",
        )
    translated: list[Any] | None = None
    for j, block in enumerate(content):
        if isinstance(block, dict):
            kind = block.get("type")
            if not isinstance(kind, str):
                raise _ItemError(InvalidInputError, f"content[{j}] must be a content block with a string 'type' key")
            if kind in _RESPONSES_PARTS:
                translated = translated if translated is not None else list(content[:j])
                translated.append(_RESPONSES_PARTS[kind](block, j))
                continue
        elif not isinstance(block, str):
            raise _ItemError(
                InvalidTypeError,
                f"content[{j}] must be a string or a content block dict, got {type(block).__name__}",
            )
        if translated is not None:
            translated.append(block)
    return content if translated is None else translated


def _text_part(block: dict[str, Any], j: int) -> dict[str, Any]:
    if not isinstance(block.get("text"), str):
        raise _ItemError(InvalidInputError, f"content[{j}]: a {block['type']!r} part needs a string 'text'")
    return {"type": "text", "text": block["text"]}


def _image_part(block: dict[str, Any], j: int) -> dict[str, Any]:
    if not isinstance(block.get("image_url"), str):  # a file_id image: kept as given
        return block
    image = {"url": block["image_url"], **({"detail": block["detail"]} if block.get("detail") else {})}
    return {"type": "image_url", "image_url": image}


_RESPONSES_PARTS = {"input_text": _text_part, "output_text": _text_part, "input_image": _image_part}


def _from_role(role: str, fields: dict[str, Any]) -> list[BaseMessage]:
    cls = MESSAGE_TYPES.get(role) or _ROLE_CLASSES.get(role)
    if role == "function":
        cls, fields = ChatMessage, {**fields, "role": "function"}
    if cls is None:
        raise _ItemError(
            InvalidInputError,
            f"unexpected message type: {role!r}. Use one of {ROLE_NAMES} (ChatMessage(role=...) for custom roles)",
        )
    fields["content"] = _check_content(fields.get("content"))
    if issubclass(cls, SystemMessage) and role == "developer":
        fields["additional_kwargs"] = {**_additional_kwargs(fields), "__openai_role__": "developer"}
    raw_calls = _assistant_tool_calls(fields) if issubclass(cls, AIMessage) else None
    if cls is HumanMessage and isinstance(fields["content"], list):
        return _split_tool_results(fields)
    message = _build(cls, fields)
    if raw_calls and isinstance(message, AIMessage):
        message._openai_tool_calls = raw_calls
    return [message]


def _assistant_tool_calls(fields: dict[str, Any]) -> list[dict[str, Any]] | None:
    """OpenAI ``tool_calls`` and Anthropic ``tool_use`` blocks -> ``tool_calls``; returns the OpenAI calls as given."""
    raw = fields.pop("tool_calls", None)
    calls: list[ToolCall] = []
    invalid: list[InvalidToolCall] = []
    if raw is not None:
        if not isinstance(raw, list):
            raise _ItemError(InvalidTypeError, f"'tool_calls' must be a list, got {type(raw).__name__}")
        for j, call in enumerate(raw):
            if not isinstance(call, dict):
                raise _ItemError(InvalidTypeError, f"tool_calls[{j}] must be a dict, got {type(call).__name__}")
            if "function" in call:  # OpenAI: arguments are JSON text; bad JSON becomes an InvalidToolCall
                valid, bad = default_tool_parser([call])
                calls.extend(valid)
                invalid.extend(bad)
            elif isinstance(call.get("name"), str) and isinstance(call.get("args"), dict):  # LangChain
                calls.append(tool_call(name=call["name"], args=call["args"], id=call.get("id")))
            else:
                raise _ItemError(
                    InvalidInputError,
                    f"tool_calls[{j}] needs 'function' (OpenAI) or a string 'name' and dict 'args'",
                )
        if invalid:
            fields["invalid_tool_calls"] = invalid
    content = fields["content"]
    if isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_use" for b in content
    ):
        kept: list[Any] = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                args = block.get("input")
                if not isinstance(args, dict):
                    raise _ItemError(InvalidInputError, "a 'tool_use' block needs a dict 'input'")
                calls.append(tool_call(name=str(block.get("name") or ""), args=args, id=block.get("id")))
            else:
                kept.append(block)
        fields["content"] = kept
    if calls:
        fields["tool_calls"] = calls
    openai_raw = [c for c in raw or [] if "function" in c]
    return openai_raw or None


def _split_tool_results(fields: dict[str, Any]) -> list[BaseMessage]:
    """An Anthropic user turn: each ``tool_result`` block becomes a ToolMessage, the rest a HumanMessage."""
    results = [b for b in fields["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    if not results:
        return [_build(HumanMessage, fields)]
    out: list[BaseMessage] = []
    for block in results:
        if not block.get("tool_use_id"):
            raise _ItemError(InvalidInputError, "a 'tool_result' block needs a 'tool_use_id'")
        content = _check_content(block.get("content"))
        out.append(
            _build(
                ToolMessage,
                {
                    "content": content,
                    "tool_call_id": block["tool_use_id"],
                    "status": "error" if block.get("is_error") else "success",
                },
            )
        )
    rest = [b for b in fields["content"] if not (isinstance(b, dict) and b.get("type") == "tool_result")]
    if rest:
        out.append(_build(HumanMessage, {**fields, "content": rest}))
    return out


def _additional_kwargs(fields: dict[str, Any]) -> dict[str, Any]:
    value = fields.get("additional_kwargs", {})
    if not isinstance(value, dict):
        raise _ItemError(InvalidTypeError, f"'additional_kwargs' must be a dict, got {type(value).__name__}")
    return value


def _build(cls: type[BaseMessage], fields: dict[str, Any]) -> BaseMessage:
    """Construct ``cls`` from a dict: its own fields as fields, any other keys into ``additional_kwargs``."""
    known = {k: v for k, v in fields.items() if k in cls.model_fields}
    extra = {k: v for k, v in fields.items() if k not in cls.model_fields}
    if extra:
        known["additional_kwargs"] = {**_additional_kwargs(known), **extra}
    if cls is ToolMessage and not known.get("tool_call_id"):
        raise _ItemError(InvalidInputError, "a tool message needs a 'tool_call_id'")
    if cls is RemoveMessage and known.get("id") is None:
        raise _ItemError(InvalidInputError, "a remove message needs the 'id' of the message to remove")
    known.pop("type", None)
    try:
        return cls.model_validate(known)
    except ValidationError as exc:
        raise _ItemError(InvalidInputError, validation_detail(exc, f"invalid {cls.__name__}")) from None


def message_chunk_to_message(chunk: BaseMessage) -> BaseMessage:
    """The complete message a chunk stands for (``AIMessageChunk`` -> ``AIMessage``); non-chunks pass through."""
    if not isinstance(chunk, BaseMessageChunk):
        return chunk
    target = next(
        c for c in type(chunk).__mro__ if issubclass(c, BaseMessage) and not issubclass(c, BaseMessageChunk)
    )
    fields = {k: v for k, v in dict(chunk).items() if k not in ("type", "tool_call_chunks", "chunk_position")}
    return target.model_validate(fields)
