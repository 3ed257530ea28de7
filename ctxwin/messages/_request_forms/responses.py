"""OpenAI Responses (``output="responses"``): ``client.responses.create(**plan.request)``, its items, ``instructions``,
flat function tools, media and reply limit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from ctxwin._errors import InvalidInputError
from ctxwin.messages._ai import AIMessage
from ctxwin.messages._base import BaseMessage
from ctxwin.messages._convert import INSTRUCTIONS, MessageLike, read_messages
from ctxwin.messages._forms import CallerForms
from ctxwin.messages._openai_cache import OpenAIPromptCache
from ctxwin.messages._openai_format import openai_block, openai_role, openai_tool_calls
from ctxwin.messages._placement import AUDIO, VIDEO
from ctxwin.messages._request_forms.form import MediaRules
from ctxwin.messages._sdk_types import ResponsesItem
from ctxwin.messages._system import SystemMessage
from ctxwin.messages._tool import ToolMessage
from ctxwin.messages._tool_forms import chosen_tool, functions_as

_ROLES = frozenset({"user", "assistant", "system", "developer"})
ITEM_TYPES = frozenset({"message", "function_call", "function_call_output", "reasoning", "compaction"})
def _part(block: str | dict[str, Any]) -> dict[str, Any] | None:
    """One content part as a Responses input part; None for a part Responses does not take as input."""
    chat = openai_block(block)  # the chat-completions form first: it already reads every ctxwin and provider block
    if chat is None:
        return None
    kind = chat.get("type")
    if kind == "text":
        return {"type": "input_text", "text": chat["text"]}
    if kind == "image_url":
        image = chat["image_url"]
        return {"type": "input_image", "image_url": image["url"], "detail": image.get("detail", "auto")}
    if kind == "file":
        return {"type": "input_file", **chat["file"]}
    return chat


def _parts(content: str | list[Any]) -> str | list[dict[str, Any]]:
    return content if isinstance(content, str) else [p for p in map(_part, content) if p is not None]


def _output(content: str | list[Any]) -> str | list[dict[str, Any]]:
    """A tool result's ``output``: text as a string (what every Responses version takes), else its parts."""
    parts = _parts(content)
    if isinstance(parts, list) and all(p.get("type") == "input_text" for p in parts):
        return "".join(p["text"] for p in parts)
    return parts


def _assistant_items(message: AIMessage) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for block in [message.content] if isinstance(message.content, str) else message.content:
        if isinstance(block, dict) and block.get("type") == "reasoning":
            if "summary" in block:  # a Responses reasoning item, as received
                items.append(block)
            continue
        if isinstance(block, dict) and block.get("type") == "compaction" and "encrypted_content" in block:
            items.append(block)  # a Responses compaction item, as received: the provider checks it byte for byte
            continue
        text = block if isinstance(block, str) else _assistant_text(block)
        if text:
            items.append({"type": "message", "role": "assistant", "content": text})
    for call in openai_tool_calls(message):
        function = call["function"]
        items.append(
            {"type": "function_call", "call_id": call["id"], "name": function["name"],
             "arguments": function["arguments"]}
        )
    return items


def _assistant_text(block: dict[str, Any]) -> str | None:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text") or "")
    if kind == "refusal":
        return str(block.get("refusal") or "")
    return None  # thinking, tool_use (read as tool calls), images: nothing an assistant message item holds


def _items(message: BaseMessage) -> list[dict[str, Any]]:
    if isinstance(message, AIMessage):
        return _assistant_items(message)
    if isinstance(message, ToolMessage):
        return [{"type": "function_call_output", "call_id": message.tool_call_id,
                 "output": _output(message.content)}]
    role = openai_role(message)
    if role not in _ROLES:
        raise InvalidInputError(f"a {message.type} message with role {role!r} has no Responses form")
    return [{"type": "message", "role": role, "content": _parts(message.content)}]


def convert_to_responses_items(messages: MessageLike) -> list[ResponsesItem]:
    """Responses API input items for ``messages`` (anything ``convert_to_messages`` reads). An assistant turn
    becomes its items in the order Responses wants them: the ``reasoning`` items it was read from (kept whole, so
    their ids and encrypted content go back as received), an assistant ``message`` per text part, then a
    ``function_call`` per tool call (the argument text as received when unchanged). A tool result is a
    ``function_call_output``; other messages are ``message`` items with ``input_text`` / ``input_image`` /
    ``input_file`` parts. Reasoning that did not come from Responses (Anthropic thinking) has no Responses form
    and is left out, as chat completions leave it out."""
    out: list[dict[str, Any]] = []
    for index, message in enumerate(read_messages(messages)):
        try:
            out.extend(_items(message))
        except ValueError as exc:
            raise InvalidInputError(f"messages[{index}]: {exc}") from None
    return cast("list[ResponsesItem]", out)


def responses_tools(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI chat function tools as Responses' flat function tools (``strict`` as given, else false: chat
    completions' default, where Responses' own default is true)."""
    def convert(function: dict[str, Any]) -> dict[str, Any]:
        converted = {"type": "function", "name": function["name"],
                     "parameters": function.get("parameters") or {"type": "object", "properties": {}},
                     "strict": bool(function.get("strict", False))}
        if function.get("description"):
            converted["description"] = function["description"]
        return converted

    return functions_as(tools, convert)


class Responses(OpenAIPromptCache):
    name = "responses"
    items_key = "input"
    system_key = "instructions"
    limit_key = "max_output_tokens"
    media = MediaRules(frozenset({"user", "tool"}), VIDEO | AUDIO)
    passes = ("context_management",)  # server-side compaction's threshold

    def claims(self, request: Any) -> bool:
        """A request with ``input`` (and no ``messages``: a request with ``messages`` is read and written under
        them, whatever its items), or a list holding Responses items."""
        if isinstance(request, Mapping):
            return "input" in request and "messages" not in request
        return isinstance(request, (list, tuple)) and any(
            isinstance(item, Mapping) and item.get("type") in ITEM_TYPES for item in request)

    def write(self, messages: list[BaseMessage], forms: CallerForms | None) -> tuple[list[Any], Any]:
        if messages and messages[0].additional_kwargs.get(INSTRUCTIONS) and isinstance(messages[0], SystemMessage):
            return list(convert_to_responses_items(messages[1:])), messages[0].text
        return list(convert_to_responses_items(messages)), None

    def tools(self, tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        return responses_tools(tools)

    def tool_choice(self, choice: Any) -> Any:
        mode, name = chosen_tool(choice)
        return mode if name is None else {"type": "function", "name": name}


RESPONSES = Responses()
