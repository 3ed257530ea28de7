"""DeepSeek-V4: its ``tokenizer.json`` through ``tokenizers``, framed as DeepSeek's published Python reference
(``encoding_dsv4.py``) encodes a conversation, since V4 has no Jinja chat template (docs/counters.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import tokenizers

from ctxwin.counters._errors import TokenizerDataError
from ctxwin.counters._families.chat_template import ChatTemplate
from ctxwin.counters._families.hf_counter import HFCounter
from ctxwin.counters._families.hf_sources import deepseek_v4_json
from ctxwin.messages import AIMessage, BaseMessage

BOS, EOS = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
USER, ASSISTANT = "<｜User｜>", "<｜Assistant｜>"
THINK, END_THINK = "<think>", "</think>"
DSML = "｜DSML｜"
TOOLS_TEMPLATE = """## Tools

You have access to a set of tools to help answer the user's question. You can invoke tools by writing a \
"<{dsml}tool_calls>" block like the following:

<{dsml}tool_calls>
<{dsml}invoke name="$TOOL_NAME">
<{dsml}parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</{dsml}parameter>
...
</{dsml}invoke>
<{dsml}invoke name="$TOOL_NAME2">
...
</{dsml}invoke>
</{dsml}tool_calls>

String parameters should be specified as is and set `string="true"`. For all other types (numbers, booleans, \
arrays, objects), pass the value in JSON format and set `string="false"`.

If thinking_mode is enabled (triggered by {think}), you MUST output your complete reasoning inside \
{think}...{end_think} BEFORE any tool calls or final response.

Otherwise, output directly after {end_think} with tool calls or final response.

### Available Tool Schemas

{schemas}

You MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.
"""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def render_tools(tools: Sequence[Mapping[str, Any]]) -> str:
    """The tools section of the system prompt: the functions of OpenAI-style tools, one JSON object a line."""
    schemas = "\n".join(_json(tool.get("function", tool)) for tool in tools)
    return TOOLS_TEMPLATE.format(dsml=DSML, think=THINK, end_think=END_THINK, schemas=schemas)


def _arguments(arguments: Any) -> str:
    """DSML parameters for a call's arguments: strings as they are, other values as JSON; unparsable text as is."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return str(arguments)
    if not isinstance(arguments, dict):
        return _json(arguments)
    return "\n".join(
        f'<{DSML}parameter name="{key}" string="{"true" if isinstance(value, str) else "false"}">'
        f"{value if isinstance(value, str) else _json(value)}</{DSML}parameter>"
        for key, value in arguments.items()
    )


def _tool_calls(calls: Sequence[Mapping[str, Any]]) -> str:
    invokes = "\n".join(
        f'<{DSML}invoke name="{call["function"]["name"]}">\n{_arguments(call["function"]["arguments"])}\n'
        f"</{DSML}invoke>"
        for call in calls
    )
    return f"\n\n<{DSML}tool_calls>\n{invokes}\n</{DSML}tool_calls>"


def _merge_tool_results(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """User and tool messages in a row become one user message of parts; tool results follow the call order."""
    merged: list[dict[str, Any]] = []
    call_order: dict[str, int] = {}
    for message in messages:
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            call_order = {call["id"]: i for i, call in enumerate(message["tool_calls"]) if call.get("id")}
        if role not in ("user", "tool"):
            merged.append(dict(message))
            continue
        content = message.get("content") or ""
        part = (0, 0, content) if role == "user" else (1, call_order.get(message.get("tool_call_id") or "", 0),
                                                         f"<tool_result>{content}</tool_result>")
        if merged and "parts" in merged[-1]:
            merged[-1]["parts"].append(part)
        else:
            merged.append({"role": "user", "parts": [part]})
    for message in merged:  # tool results sorted among themselves; text parts keep their places
        parts = message.get("parts")
        if parts:
            results = iter(sorted((p for p in parts if p[0]), key=lambda p: p[1]))
            message["content"] = "\n\n".join(next(results)[2] if p[0] else p[2] for p in parts)
    return merged


def render(messages: Sequence[Mapping[str, Any]], *, tools: Sequence[Mapping[str, Any]] | None = None,
           thinking: bool = False) -> str:
    """The DeepSeek-V4 prompt for OpenAI-style message dicts (``reasoning_content`` on assistant messages)."""
    items = _merge_tool_results(messages)
    if tools:
        first_system = next((i for i, m in enumerate(items) if m.get("role") == "system"), None)
        if first_system is None:
            items.insert(0, {"role": "system", "content": ""})
            first_system = 0
        items[first_system]["content"] = f"{items[first_system].get('content') or ''}\n\n{render_tools(tools)}"
    last_user = max((i for i, m in enumerate(items) if m.get("role") == "user"), default=-1)
    drop = thinking and not tools  # reasoning before the last user message is dropped
    out = [BOS]
    for index, message in enumerate(items):
        role = message.get("role")
        if role == "assistant":
            reasoning = ""
            if thinking and (not drop or index > last_user):
                reasoning = f"{message.get('reasoning_content') or ''}{END_THINK}"
            calls = message.get("tool_calls") or []
            if not calls and isinstance(message.get("function_call"), dict):
                calls = [{"function": message["function_call"]}]
            out.append(f"{reasoning}{message.get('content') or ''}{_tool_calls(calls) if calls else ''}{EOS}")
        elif role == "user":
            out.append(f"{USER}{message.get('content') or ''}")
        else:  # system (developer is rendered as system by HFCounter)
            out.append(str(message.get("content") or ""))
        following = items[index + 1].get("role") if index + 1 < len(items) else None
        if role == "user" and following in (None, "assistant"):
            out.append(ASSISTANT + (THINK if thinking and (not drop or index >= last_user) else END_THINK))
    return "".join(out)


class DeepSeekV4Format(ChatTemplate):
    """DeepSeek-V4's published encoding in the place of a chat template (``HFCounter`` renders through it)."""

    def __init__(self, *, thinking: bool) -> None:
        self.thinking = thinking
        self.uses_tools = True
        self.source = "DeepSeek-V4 encoding_dsv4.py"
        self.special_tokens = {}

    def render(self, messages: Sequence[Mapping[str, Any]], *, add_generation_prompt: bool = False,
               tools: Sequence[Mapping[str, Any]] | None = None) -> str:
        # The reference primes the reply after a final user message whether asked or not.
        return render(messages, tools=tools, thinking=self.thinking)


class DeepSeekV4Counter(HFCounter):
    """DeepSeek-V4 (Flash and Pro) in chat mode, or in thinking mode; see docs/counters.md. Its template joins
    neighbouring turns, so a request's count is not the sum of its messages' counts."""

    additive = False

    def __init__(self, *, thinking: bool = False, engine: str = "auto") -> None:
        text, origin = deepseek_v4_json()
        try:
            tokenizer = tokenizers.Tokenizer.from_str(text)
        except Exception as exc:  # tokenizers raises a bare Exception for unreadable files
            raise TokenizerDataError(f"{origin}: not a loadable tokenizer.json: {exc}") from exc
        name = "deepseek:v4-thinking" if thinking else "deepseek:v4"
        super().__init__(tokenizer, chat_template=DeepSeekV4Format(thinking=thinking), name=name,
                         tokenizer_json=text.encode("utf-8"), engine=engine)

    def __repr__(self) -> str:
        return f"DeepSeekV4Counter(name={self.name!r})"

    def template_messages(self, messages: Sequence[BaseMessage]) -> tuple[list[dict[str, Any]], int]:
        """HFCounter's dicts, with an assistant message's ``reasoning_content`` kept (thinking mode renders it)."""
        items, fixed = super().template_messages(messages)
        for message, item in zip(messages, items, strict=True):
            reasoning = message.additional_kwargs.get("reasoning_content") if isinstance(message, AIMessage) else None
            if isinstance(reasoning, str):
                item["reasoning_content"] = reasoning
            legacy = message.additional_kwargs.get("function_call") if isinstance(message, AIMessage) else None
            if isinstance(legacy, dict) and not item.get("tool_calls"):
                item["function_call"] = legacy
        return items, fixed
