"""``convert_to_openai_messages``: ctxwin (or any convertible) messages out as OpenAI chat-completions dicts.

Round trip: an OpenAI dict converted in with ``convert_to_messages`` and back out here is the same dict, including
``name``, ``tool_calls`` (with their original argument strings), tool results, list content and the
``developer`` role. Two deliberate differences from LangChain, both to keep round trips exact and requests valid:
list content stays a list under ``text_format="string"`` (LangChain joins all-text lists with newlines), and
reasoning blocks (which chat completions rejects as input) are left out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal, overload

from ctxwin.messages.ai import AIMessage
from ctxwin.messages.base import BaseMessage
from ctxwin.messages.chat import ChatMessage
from ctxwin.messages.convert import MessageLike, convert_to_messages
from ctxwin.messages.remove import RemoveMessage
from ctxwin.messages.system import SystemMessage
from ctxwin.messages.tool import ToolMessage
from ctxwin.messages.tool_calls import default_tool_parser

# Assistant fields OpenAI accepts as input; kept from additional_kwargs so they survive a round trip.
_ASSISTANT_PASSTHROUGH = ("refusal", "audio", "function_call")
_DROPPED_BLOCKS = frozenset(
    {"reasoning", "thinking", "redacted_thinking", "tool_use", "tool_call", "invalid_tool_call"}
)


# By ``message.type`` (a string compare is much cheaper than isinstance on pydantic classes, and counters ask this
# for every message they count).
_ROLES = {
    "human": "user",
    "HumanMessageChunk": "user",
    "ai": "assistant",
    "AIMessageChunk": "assistant",
    "tool": "tool",
    "ToolMessageChunk": "tool",
}


def openai_role(message: BaseMessage) -> str:
    """The role a provider sees for this message (``developer`` for a system message converted from one)."""
    role = _ROLES.get(message.type)
    if role is not None:
        return role
    if isinstance(message, SystemMessage):
        return str(message.additional_kwargs.get("__openai_role__", "system"))
    if isinstance(message, ChatMessage):
        return message.role
    return message.type


def _data_url(block: dict[str, Any]) -> str:
    return f"data:{block.get('mime_type', '')};base64,{block['base64']}"


def openai_block(block: str | dict[str, Any]) -> dict[str, Any] | None:
    """One content block in OpenAI's input format; ``None`` for blocks chat completions does not take."""
    if isinstance(block, str):
        return {"type": "text", "text": block}
    kind = block.get("type")
    if kind in _DROPPED_BLOCKS:
        return None
    if kind == "text" and isinstance(block.get("text"), str):  # other keys (Anthropic's cache_control) are not OpenAI's
        return {"type": "text", "text": block["text"]}
    extras = block.get("extras") or {}
    if kind == "image" and ("url" in block or "base64" in block):
        image = {"url": block["url"] if "url" in block else _data_url(block)}
        return {
            "type": "image_url",
            "image_url": {**image, **({"detail": extras["detail"]} if "detail" in extras else {})},
        }
    if kind == "image" and isinstance(block.get("source"), dict):  # Anthropic
        source = block["source"]
        url = source.get("url") or f"data:{source.get('media_type', '')};base64,{source.get('data', '')}"
        return {"type": "image_url", "image_url": {"url": url}}
    if kind == "audio" and "base64" in block:
        fmt = str(block.get("mime_type", "audio/wav")).split("/")[-1]
        return {"type": "input_audio", "input_audio": {"data": block["base64"], "format": fmt}}
    if kind == "file" and ("base64" in block or "file_id" in block):
        file: dict[str, Any] = (
            {"file_id": block["file_id"]} if "file_id" in block else {"file_data": _data_url(block)}
        )
        if "filename" in extras:
            file["filename"] = extras["filename"]
        return {"type": "file", "file": file}
    if kind == "text-plain" and "text" in block:
        return {"type": "text", "text": block["text"]}
    if kind == "non_standard" and isinstance(block.get("value"), dict):
        return dict(block["value"])
    return dict(block)


def _content(message: BaseMessage, text_format: str) -> str | list[dict[str, Any]]:
    if isinstance(message.content, str):
        return (
            [{"type": "text", "text": message.content}]
            if text_format == "block" and message.content
            else message.content
        )
    blocks = [b for b in map(openai_block, message.content) if b is not None]
    return blocks if blocks or text_format == "block" else ""


def openai_tool_calls(message: AIMessage) -> list[dict[str, Any]]:
    """Tool calls in OpenAI form, reusing the original argument text when the parsed arguments are unchanged."""
    raw_by_id: dict[Any, dict[str, Any]] = {}
    order: dict[Any, int] = {}
    received = message._openai_tool_calls or message.additional_kwargs.get("tool_calls") or []
    for position, raw in enumerate(received):
        if isinstance(raw, dict) and isinstance(raw.get("function"), dict):
            raw_by_id.setdefault(raw.get("id"), raw["function"])
            order.setdefault(raw.get("id"), position)
    out: list[tuple[int, dict[str, Any]]] = []
    for position, call in enumerate([*message.tool_calls, *message.invalid_tool_calls]):
        raw_function = raw_by_id.get(call.get("id"), {})
        raw_args = raw_function.get("arguments")
        if "error" in call:  # InvalidToolCall: the text the model produced, as it was
            arguments = call.get("args") or ""
        elif isinstance(raw_args, str) and _parses_to(raw_args, call.get("args")):
            arguments = raw_args
        else:
            arguments = json.dumps(call.get("args"), ensure_ascii=False)
        entry = {
            "type": "function",
            "id": call.get("id"),
            "function": {"name": call.get("name"), "arguments": arguments},
        }
        out.append((order.get(call.get("id"), len(order) + position), entry))
    return [entry for _, entry in sorted(out, key=lambda pair: pair[0])]


def _parses_to(text: str, value: Any) -> bool:
    """Whether ``text`` is what the input parser would read as ``value`` (so it can be sent back verbatim)."""
    valid, _ = default_tool_parser([{"function": {"name": "", "arguments": text}}])
    return bool(valid) and valid[0]["args"] == value


def _to_openai(message: BaseMessage, text_format: str, include_id: bool) -> dict[str, Any]:
    if isinstance(message, RemoveMessage):
        raise ValueError("RemoveMessage is an instruction to a history reducer and has no OpenAI form")
    out: dict[str, Any] = {"role": openai_role(message), "content": _content(message, text_format)}
    if message.name is not None and not isinstance(message, ToolMessage):
        out["name"] = message.name
    if include_id and message.id is not None:
        out["id"] = message.id
    if isinstance(message, AIMessage):
        if message.tool_calls or message.invalid_tool_calls:
            out["tool_calls"] = openai_tool_calls(message)
        for key in _ASSISTANT_PASSTHROUGH:
            if key in message.additional_kwargs:
                out[key] = message.additional_kwargs[key]
    if isinstance(message, ToolMessage):
        out["tool_call_id"] = message.tool_call_id
    return out


@overload
def convert_to_openai_messages(  # type: ignore[overload-overlap]  # a str is also a Sequence
    messages: BaseMessage | dict[str, Any] | str,
    *,
    text_format: Literal["string", "block"] = "string",
    include_id: bool = False,
) -> dict[str, Any]: ...


@overload
def convert_to_openai_messages(
    messages: Sequence[MessageLike],
    *,
    text_format: Literal["string", "block"] = "string",
    include_id: bool = False,
) -> list[dict[str, Any]]: ...


def convert_to_openai_messages(
    messages: MessageLike | Sequence[MessageLike],
    *,
    text_format: Literal["string", "block"] = "string",
    include_id: bool = False,
) -> dict[str, Any] | list[dict[str, Any]]:
    """OpenAI chat-completions dicts for a message (-> dict) or a sequence of them (-> list).

    ``text_format="block"`` turns string content into a single text block. ``include_id`` adds message ids (off by
    default: OpenAI rejects unknown message keys).
    """
    if text_format not in ("string", "block"):
        raise ValueError(f"Unrecognized text_format={text_format!r}, expected one of 'string' or 'block'.")
    single = isinstance(messages, (BaseMessage, dict, str)) or (
        isinstance(messages, tuple) and len(messages) == 2 and isinstance(messages[0], str)
    )
    converted = convert_to_messages([messages] if single else messages)
    out = []
    for index, message in enumerate(converted):
        try:
            out.append(_to_openai(message, text_format, include_id))
        except ValueError as exc:
            raise ValueError(f"messages[{index}]: {exc}") from None
    return out[0] if single and len(out) == 1 else out
