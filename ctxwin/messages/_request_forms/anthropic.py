"""Anthropic Messages (``output="anthropic"``): ``client.messages.create(**plan.request)``, its conversion
(``convert_to_anthropic``), tools, media, reply limit, ``cache_control`` breakpoints and what its SDK refuses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from ctxwin._errors import InvalidInputError
from ctxwin.messages._ai import AIMessage
from ctxwin.messages._base import BaseMessage
from ctxwin.messages._convert import MessageLike, read_messages
from ctxwin.messages._data_url import is_data_url, parse_data_url
from ctxwin.messages._forms import CallerForms
from ctxwin.messages._human import HumanMessage
from ctxwin.messages._openai_format import openai_role, without_received_calls
from ctxwin.messages._placement import AUDIO, VIDEO
from ctxwin.messages._request_forms.form import MediaRules, RequestForm
from ctxwin.messages._sdk_types import AnthropicRequest
from ctxwin.messages._system import SystemMessage
from ctxwin.messages._tool import ToolMessage
from ctxwin.messages._tool_forms import chosen_tool, functions_as

_DROPPED = frozenset({"reasoning", "tool_call", "invalid_tool_call"})


def _media_source(url: str) -> dict[str, Any]:
    """An image URL as an Anthropic source: a base64 ``data:`` URL as base64 data, any other as a URL; ValueError for
    a ``data:`` URL that holds no base64 data (Anthropic's URL sources are fetched, so they take web URLs only)."""
    inline = parse_data_url(url)
    if inline is not None:
        return {"type": "base64", "media_type": inline.media_type, "data": inline.data}
    if is_data_url(url):
        raise InvalidInputError(f"an image data URL must be base64, 'data:<media type>;base64,<data>', to be sent to "
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
        raise InvalidInputError(f"an {kind!r} block has no Anthropic form (Anthropic takes no audio input)")
    return dict(block)  # Anthropic's own blocks (image/document sources, thinking, redacted_thinking), as given


def _blocks(content: str | list[Any]) -> list[dict[str, Any]]:
    items = [content] if isinstance(content, str) else content
    return [b for b in map(_block, items) if b is not None]


def _tool_use(message: AIMessage) -> list[dict[str, Any]]:
    uses = []
    for call in message.tool_calls:
        if not call.get("id"):
            raise InvalidInputError(f"tool call {call['name']!r} has no id; Anthropic's tool_use blocks need one")
        uses.append({"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["args"]})
    for bad in message.invalid_tool_calls:
        raise InvalidInputError(
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
        raise InvalidInputError("a system message after the conversation started has no Anthropic form (Anthropic "
                                "takes "
                                "one top-level system; put system messages first)")
    raise InvalidInputError(f"a {message.type} message with role {openai_role(message)!r} has no Anthropic form")


def _system(messages: list[BaseMessage]) -> str | list[dict[str, Any]]:
    if len(messages) == 1 and isinstance(messages[0].content, str):
        return messages[0].content
    blocks: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        for block in _blocks(message.content):
            if block.get("type") != "text":
                raise InvalidInputError(f"messages[{index}]: Anthropic's system takes text only, got a "
                                        f"{block.get('type')!r} block")
            blocks.append(block)
    return blocks


def convert_to_anthropic(messages: MessageLike) -> AnthropicRequest:
    """An Anthropic request's ``system`` and ``messages`` for ``messages`` (anything ``convert_to_messages``
    reads), reshaped as the API requires: the leading system messages become the top-level ``system`` (a string,
    or text blocks when there are several or they carry blocks; left out when there is none); a tool result is a
    ``tool_result`` block in a user message; an assistant's tool calls are ``tool_use`` blocks; a turn left with no
    content (``""``, no blocks) is left out, since the API refuses it, and consecutive messages of one role are
    merged into one (turns must alternate), their content as blocks in order. Thinking blocks read from Anthropic
    go back as received (signature included); reasoning read from elsewhere (OpenAI Responses) has no Anthropic
    form and is left out."""
    converted = read_messages(messages)
    lead = 0
    while lead < len(converted) and isinstance(converted[lead], SystemMessage):
        lead += 1
    out: list[dict[str, Any]] = []
    for index in range(lead, len(converted)):
        try:
            role, content = _turn(converted[index])
        except ValueError as exc:
            raise InvalidInputError(f"messages[{index}]: {exc}") from None
        if not content:  # the API refuses an empty turn; its neighbours of one role merge below
            continue
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


MAX_BREAKPOINTS = 4  # Anthropic's limit per request
EPHEMERAL = {"type": "ephemeral"}


def _control(ttl: str | None) -> dict[str, str]:
    return {**EPHEMERAL, **({"ttl": ttl} if ttl else {})}


# Blocks Anthropic refuses a cache_control on: thinking blocks (cached with their turn, never marked) and, below, an
# empty text block.
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


def _markable(block: Any) -> bool:
    if not isinstance(block, Mapping):
        return False
    kind = block.get("type")
    return kind not in _UNMARKABLE and not (kind == "text" and not block.get("text"))


def _copied_blocks(content: Any) -> list[dict[str, Any]]:
    """``content`` (a string or a list of blocks) as copies of its blocks."""
    return [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content]


def caller_marks(request: Mapping[str, Any]) -> int:
    """The ``cache_control`` breakpoints ``request`` already has: on tools, system blocks, message blocks and the
    blocks of a ``tool_result``'s content (each counts against ``MAX_BREAKPOINTS``)."""
    system = request.get("system")
    blocks: list[Any] = [*(request.get("tools") or []), *(system if isinstance(system, list) else [])]
    for message in request.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        for block in content if isinstance(content, list) else []:
            blocks.append(block)
            nested = block.get("content") if isinstance(block, Mapping) else None
            blocks += nested if isinstance(nested, list) else []
    return sum(isinstance(block, Mapping) and "cache_control" in block for block in blocks)


def _place(listed: list[Any], index: int) -> tuple[int, int] | None:
    """Where a breakpoint for message ``index`` goes: its last block Anthropic takes a mark on, else the nearest
    such block before it (in that message or an earlier one); None when there is none."""
    for i in range(index, -1, -1):
        content = listed[i]["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for j in range(len(blocks) - 1, -1, -1):
            if _markable(blocks[j]):
                return i, j
    return None


def mark_cache_breakpoints(
    request: Mapping[str, Any], messages: Sequence[int] = (-1,), *, ttl: str | None = None
) -> dict[str, Any]:
    """A copy of the Anthropic ``request`` with breakpoints on its last tool definition, its system prompt and the
    messages at the indexes ``messages`` (the last one by default), at most ``MAX_BREAKPOINTS`` in all, the
    request's own ``cache_control`` marks included (``caller_marks``). The newest message index comes first, then
    the tools, the system prompt and the other indexes, newest first (the newest prefix is the one the next request
    reads). A message's mark goes on its last block Anthropic takes one on, never on an empty text or a thinking
    block: else on the nearest such block before it.

    A chat loop marks the last message (what the next request reads) and the last message of the previous request
    (what this one reads). ``ttl`` is ``"1h"`` for Anthropic's one-hour cache, else the default five minutes.
    ValueError for a request without messages or an index outside them."""
    out = dict(request)
    listed = list(out.get("messages") or [])
    if not listed:
        raise InvalidInputError("mark_cache_breakpoints: the request has no messages")
    indexes = sorted({i % len(listed) if -len(listed) <= i < len(listed) else _out_of_range(i, listed)
                      for i in messages}, reverse=True)
    room = MAX_BREAKPOINTS - caller_marks(request)
    places = [place for place in (_place(listed, i) for i in indexes) if place is not None]
    wanted: list[Any] = [*places[:1], "tools", "system", *places[1:]]
    marked: set[tuple[int, int]] = set()
    control = _control(ttl)
    for target in wanted:
        if room <= 0:
            break
        if target == "tools":
            tools = list(out.get("tools") or [])
            if tools and "cache_control" not in tools[-1]:
                tools[-1] = {**tools[-1], "cache_control": control}
                out["tools"] = tools
                room -= 1
        elif target == "system":
            system = out.get("system")
            blocks = _copied_blocks(system) if system else []
            last = next((j for j in range(len(blocks) - 1, -1, -1) if _markable(blocks[j])), None)
            if last is not None and "cache_control" not in blocks[last]:
                blocks[last] = {**blocks[last], "cache_control": control}
                out["system"] = blocks
                room -= 1
        elif target not in marked:
            marked.add(target)
            i, j = target
            blocks = _copied_blocks(listed[i]["content"])
            if "cache_control" not in blocks[j]:
                blocks[j] = {**blocks[j], "cache_control": control}
                listed[i] = {**listed[i], "content": blocks}
                room -= 1
    out["messages"] = listed
    return out


def _out_of_range(index: int, listed: list[Any]) -> int:
    raise InvalidInputError(f"mark_cache_breakpoints: message index {index} is outside the request's {len(listed)} "
                            f"messages")


def anthropic_tools(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI function tools as Anthropic tools (``name``, ``input_schema``, and ``description`` unless it is empty:
    Anthropic's is optional); tools with no function form (Anthropic's server tools such as
    ``web_search_20250305``, tools already in Anthropic's form) as given. The one conversion: the request bodies
    and the ``anthropic-api`` counter both send it."""
    def convert(function: dict[str, Any]) -> dict[str, Any]:
        schema = function.get("parameters") or {"type": "object", "properties": {}}
        converted = {"name": function["name"], "input_schema": schema}
        if function.get("description"):
            converted["description"] = function["description"]
        return converted

    return functions_as(tools, convert)


# Anthropic's Python SDK refuses a non-streaming ``messages.create`` whose ``max_tokens`` could take over ten minutes
# to generate ("Streaming is required ..."): at the 128,000 tokens an hour it assumes, above 21,333
# (``Anthropic._calculate_nonstreaming_timeout``), and above the lower limit ``anthropic._constants
# .MODEL_NONSTREAMING_TOKENS`` sets for Claude Opus 4 and 4.1 (by its model ids; here by ctxwin's model names).
NONSTREAMING_MAX_TOKENS = 128_000 * 10 // 60
_NONSTREAMING_BY_MODEL = {"claude-opus-4": 8_192, "claude-opus-4-1": 8_192}
_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "document", "compaction"})


def _anthropic_block(block: Any) -> bool:
    return isinstance(block, Mapping) and (
        block.get("type") in _BLOCKS or (block.get("type") == "image" and "source" in block)
    )


class Anthropic(RequestForm):
    name = "anthropic"
    system_key = "system"
    limit_key = "max_tokens"
    requires_limit = True
    media = MediaRules(frozenset({"user", "tool"}), VIDEO | AUDIO, image_detail=False)
    later_system = False
    marks_cache = True
    explicit_cache = True
    # Context editing and compaction (``clear_tool_uses``, ``clear_thinking``, ``compact``, on-demand ``compaction``:
    # beta features, sent with ``client.beta.messages.create`` and the ``betas`` that turn them on).
    passes = ("context_management", "compaction", "betas")

    def claims(self, request: Any) -> bool:
        """A request with a top-level ``system``, ``input_schema`` tools, ``betas``, ``compaction`` or an object of
        ``context_management`` edits (Responses' is a list), or messages holding Anthropic blocks."""
        if isinstance(request, Mapping):
            tools = request.get("tools") or []
            if "system" in request or any(isinstance(t, Mapping) and "input_schema" in t for t in tools):
                return True
            if "betas" in request or "compaction" in request or isinstance(request.get("context_management"), Mapping):
                return True
            request = request.get("messages")
        items = request if isinstance(request, (list, tuple)) else []
        return any(isinstance(item, Mapping) and isinstance(item.get("content"), list)
                   and any(map(_anthropic_block, item["content"])) for item in items)

    def as_sent(
        self, given: Any, items: list[BaseMessage], forms: CallerForms | None
    ) -> tuple[list[BaseMessage], CallerForms | None]:
        # Tool-call arguments go as an object: counted as that, not as the text they were received as.
        stripped = list(map(without_received_calls, items))
        if any(new is not old for new, old in zip(stripped, items, strict=True)):
            items = stripped
        return items, forms

    def write(self, messages: list[BaseMessage], forms: CallerForms | None) -> tuple[list[Any], Any]:
        request = convert_to_anthropic(messages)
        return list(request["messages"]), request.get("system")

    def tools(self, tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        return anthropic_tools(tools)

    def tool_choice(self, choice: Any) -> Any:
        """Anthropic's ``disable_parallel_tool_use`` is kept."""
        mode, name = chosen_tool(choice)
        kind = {"required": "any", "name": "tool"}.get(mode, mode)
        out: dict[str, Any] = {"type": kind, **({"name": name} if name is not None else {})}
        if isinstance(choice, Mapping) and "disable_parallel_tool_use" in choice and kind != "none":
            out["disable_parallel_tool_use"] = choice["disable_parallel_tool_use"]
        return out

    def mark_cache(
        self, body: dict[str, Any], breakpoints: tuple[int, ...] | None, *, ttl: str | None, key: str | None
    ) -> dict[str, Any]:
        if breakpoints is None or not body["messages"]:
            return body
        return mark_cache_breakpoints(body, breakpoints, ttl=ttl)

    def nonstreaming_limit(self, model: str | None) -> int | None:
        return _NONSTREAMING_BY_MODEL.get(model or "", NONSTREAMING_MAX_TOKENS)

    def refusals(
        self, messages: Sequence[BaseMessage], tools: Sequence[Mapping[str, Any]] | None, reserve: int,
        model: str | None,
    ) -> list[str]:
        found = []
        limit = self.nonstreaming_limit(model)
        if limit is not None and reserve > limit:
            found.append(
                f"max_tokens {reserve} is above the {limit} Anthropic's SDK sends without streaming"
                f"{f' for {model}' if model else ''}: send plan.request with client.messages.stream(...) "
                f"(or create(..., stream=True)), as the SDK documents for long requests, or give reserve_output <= "
                f"{limit}"
            )
        if not tools and any(isinstance(m, AIMessage) and m.tool_calls for m in messages):
            found.append("the conversation has tool calls but no tools were given: Anthropic rejects tool_use "
                         "blocks in a request without tools (pass tools=)")
        return found


ANTHROPIC = Anthropic()
