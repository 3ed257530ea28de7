"""``convert_to_anthropic``: messages out as an Anthropic Messages request (``client.messages.create(model=...,
max_tokens=..., **request)``).

Anthropic holds a conversation differently from chat completions, so the request is reshaped the way the API
requires: the leading system messages become the top-level ``system`` (a string, or text blocks when there are
several or they carry blocks); a tool result is a ``tool_result`` block in a user message; an assistant's tool calls
are ``tool_use`` blocks; consecutive messages of one role are merged into one message (Anthropic requires turns to
alternate), their content as blocks in order. Thinking blocks read from Anthropic go back as received (signature
included); reasoning read from elsewhere (OpenAI Responses) has no Anthropic form and is left out.
"""

from __future__ import annotations

from typing import Any, cast

from ctxwin.messages._ai import AIMessage
from ctxwin.messages._base import BaseMessage
from ctxwin.messages._convert import MessageLike, read_messages
from ctxwin.messages._data_url import is_data_url, parse_data_url
from ctxwin.messages._human import HumanMessage
from ctxwin.messages._openai_format import openai_role
from ctxwin.messages._sdk_types import AnthropicRequest
from ctxwin.messages._system import SystemMessage
from ctxwin.messages._tool import ToolMessage

_DROPPED = frozenset({"reasoning", "tool_call", "invalid_tool_call"})


def _media_source(url: str) -> dict[str, Any]:
    """An image URL as an Anthropic source: a base64 ``data:`` URL as base64 data, any other as a URL; ValueError for
    a ``data:`` URL that holds no base64 data (Anthropic's URL sources are fetched, so they take web URLs only)."""
    inline = parse_data_url(url)
    if inline is not None:
        return {"type": "base64", "media_type": inline.media_type, "data": inline.data}
    if is_data_url(url):
        raise ValueError(f"an image data URL must be base64, 'data:<media type>;base64,<data>', to be sent to "
                         f"Anthropic; got {url[:60]!r}")
    return {"type": "url", "url": url}


def _block(block: str | dict[str, Any]) -> dict[str, Any] | None:
    """One content block in Anthropic's form; None for an empty text (Anthropic rejects those) or a block with no
    Anthropic form that is safe to leave out (reasoning from another provider)."""
    if isinstance(block, str):
        return {"type": "text", "text": block} if block else None
    kind = block.get("type")
    if kind in _DROPPED:
        return None
    if kind == "text":
        return dict(block) if block.get("text") else None
    if kind == "refusal":
        return {"type": "text", "text": str(block.get("refusal") or "")}
    if kind == "image_url" and isinstance(block.get("image_url"), dict):  # OpenAI chat
        return {"type": "image", "source": _media_source(str(block["image_url"].get("url") or ""))}
    if kind == "image" and "source" not in block and ("url" in block or "base64" in block):  # ctxwin / LangChain
        if "url" in block:
            return {"type": "image", "source": _media_source(str(block["url"]))}
        source = {"type": "base64", "media_type": block.get("mime_type", ""), "data": block["base64"]}
        return {"type": "image", "source": source}
    if kind in ("input_audio", "audio"):
        raise ValueError(f"an {kind!r} block has no Anthropic form (Anthropic takes no audio input)")
    return dict(block)  # Anthropic's own blocks (image/document sources, thinking, redacted_thinking), as given


def _blocks(content: str | list[Any]) -> list[dict[str, Any]]:
    items = [content] if isinstance(content, str) else content
    return [b for b in map(_block, items) if b is not None]


def _tool_use(message: AIMessage) -> list[dict[str, Any]]:
    uses = []
    for call in message.tool_calls:
        if not call.get("id"):
            raise ValueError(f"tool call {call['name']!r} has no id; Anthropic's tool_use blocks need one")
        uses.append({"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["args"]})
    for bad in message.invalid_tool_calls:
        raise ValueError(
            f"tool call {bad.get('name')!r} has arguments that are not a JSON object ({bad.get('args')!r}); "
            "Anthropic's tool_use blocks need a dict input"
        )
    return uses


def _turn(message: BaseMessage) -> tuple[str, str | list[dict[str, Any]]]:
    """The role and content of one message as Anthropic holds it."""
    if isinstance(message, ToolMessage):
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
        content = message.content if isinstance(message.content, str) else _blocks(message.content)
        if content:
            result["content"] = content
        if message.status == "error":
            result["is_error"] = True
        return "user", [result]
    if isinstance(message, AIMessage):
        blocks = _blocks(message.content) + _tool_use(message)
        if isinstance(message.content, str) and not message.tool_calls:
            return "assistant", message.content
        return "assistant", blocks
    if isinstance(message, HumanMessage) or openai_role(message) == "user":
        return "user", message.content if isinstance(message.content, str) else _blocks(message.content)
    if isinstance(message, SystemMessage):
        raise ValueError("a system message after the conversation started has no Anthropic form (Anthropic takes "
                         "one top-level system; put system messages first)")
    raise ValueError(f"a {message.type} message with role {openai_role(message)!r} has no Anthropic form")


def _system(messages: list[BaseMessage]) -> str | list[dict[str, Any]]:
    if len(messages) == 1 and isinstance(messages[0].content, str):
        return messages[0].content
    blocks: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        for block in _blocks(message.content):
            if block.get("type") != "text":
                raise ValueError(f"messages[{index}]: Anthropic's system takes text only, got a "
                                 f"{block.get('type')!r} block")
            blocks.append(block)
    return blocks


def convert_to_anthropic(messages: MessageLike) -> AnthropicRequest:
    """An Anthropic request's ``system`` and ``messages`` for ``messages`` (anything ``convert_to_messages``
    reads); ``system`` is left out when there is no system message."""
    converted = read_messages(messages)
    lead = 0
    while lead < len(converted) and isinstance(converted[lead], SystemMessage):
        lead += 1
    out: list[dict[str, Any]] = []
    for index in range(lead, len(converted)):
        try:
            role, content = _turn(converted[index])
        except ValueError as exc:
            raise ValueError(f"messages[{index}]: {exc}") from None
        if out and out[-1]["role"] == role:  # Anthropic requires alternating turns: merge into the previous one
            previous = out[-1]["content"]
            if isinstance(previous, str):  # the lists in ``out`` are this function's own: extended in place
                previous = out[-1]["content"] = _blocks(previous)
            previous.extend(_blocks(content) if isinstance(content, str) else content)
        else:
            out.append({"role": role, "content": content})
    request: dict[str, Any] = {"messages": out}
    if lead:
        request["system"] = _system(converted[:lead])
    return cast("AnthropicRequest", request)
