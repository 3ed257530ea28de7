"""gpt-oss: the o200k_harmony encoding with OpenAI's harmony chat framing, exact and offline (docs/counters.md)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ctxwin.counters._families.openai_tools import function_of
from ctxwin.counters._families.tiktoken_counter import TiktokenCounter
from ctxwin.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from ctxwin.messages._convert import MessageLike, read_messages, request_tools
from ctxwin.messages._openai_format import openai_role, sent_arguments

SYSTEM_PROMPT = (
    "You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\n\nReasoning: medium\n\n"
    "# Valid channels: analysis, commentary, final. Channel must be included for every message."
)
INSTRUCTIONS_HEADER = "# Instructions\n\n"
TOOLS_SYSTEM_LINE = "\nCalls to these tools must go to the commentary channel: 'functions'."
_SCALARS = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"}
# <|start|> <|message|> <|end|>; a channel adds <|channel|>; a tool call adds <|constrain|> (and ends in <|call|>
# instead of <|end|>).
FRAME_TOKENS = 3
CHANNEL_TOKENS = 1
CONSTRAIN_TOKENS = 1


class HarmonyCounter(TiktokenCounter):
    """Counts gpt-oss requests exactly as harmony renders them (docs/counters.md)."""

    def __init__(self) -> None:
        super().__init__("o200k_harmony")
        self.name = "harmony"
        # The system message, and ``<|start|>assistant`` priming the reply.
        self.reply_priming = (FRAME_TOKENS + self.count_text("system") + self.count_text(SYSTEM_PROMPT)
                              + 1 + self.count_text("assistant"))

    def __repr__(self) -> str:
        return "HarmonyCounter()"

    def message_texts(self, message: BaseMessage) -> tuple[list[str], int]:
        texts, fixed = self.content_parts(message.content)
        label = self.label_tokens
        if message.name and not isinstance(message, ToolMessage):
            fixed += label(message.name)  # harmony has no author names for these roles: counted as sent
        if isinstance(message, SystemMessage):
            return ["".join((INSTRUCTIONS_HEADER, *texts))], fixed + FRAME_TOKENS + label("developer")
        if isinstance(message, ToolMessage):
            header = f"functions.{message.name or 'tool'} to=assistant"
            return texts, fixed + FRAME_TOKENS + CHANNEL_TOKENS + label(header) + label("commentary")
        if not isinstance(message, AIMessage):
            return texts, fixed + FRAME_TOKENS + label(openai_role(message))
        calls = [(call["name"], text) for call, text in zip(message.tool_calls, sent_arguments(message), strict=True)]
        calls += [(bad.get("name") or "", bad.get("args") or "") for bad in message.invalid_tool_calls]
        legacy = message.additional_kwargs.get("function_call")
        if not calls and isinstance(legacy, dict):
            calls.append((str(legacy.get("name") or ""), str(legacy.get("arguments") or "")))
        if any(texts) or not calls:
            fixed += FRAME_TOKENS + CHANNEL_TOKENS + label("assistant") + label("final")
        else:
            texts = []
        for name, arguments in calls:
            fixed += FRAME_TOKENS + CHANNEL_TOKENS + CONSTRAIN_TOKENS + label(f"assistant to=functions.{name}")
            fixed += label("commentary ") + label("json")
            texts.append(arguments)
        return texts, fixed

    def count_tools(self, tools: Sequence[dict[str, Any]]) -> int:
        """The tools' own developer message, and the line they add to the system message."""
        if not tools:
            return 0
        system_line = self.count_text(SYSTEM_PROMPT + TOOLS_SYSTEM_LINE) - self.count_text(SYSTEM_PROMPT)
        return system_line + FRAME_TOKENS + self.label_tokens("developer") + self.count_text(render_tools(tools))

    def count_messages(self, messages: Sequence[MessageLike], *,
                       tools: Sequence[dict[str, Any]] | None = None) -> int:
        tools = request_tools(messages) if tools is None else tools
        messages = read_messages(messages)
        total = super().count_messages(messages, tools=tools)
        system = next((message for message in messages if isinstance(message, SystemMessage)), None)
        if tools and system is not None:
            # Joined to the first system message's instructions by a blank line instead of a message of their own
            # (the blank line may merge with the instructions' last characters, so both are tokenized together).
            instructions = "".join((INSTRUCTIONS_HEADER, *self.content_parts(system.content)[0]))
            blank_line = self.count_text(instructions + "\n\n") - self.count_text(instructions)
            total += blank_line - FRAME_TOKENS - self.label_tokens("developer")
        return total


def _type(schema: Any, depth: int) -> str:
    """A JSON schema as harmony writes it in TypeScript: scalars, enums as unions, arrays, nested objects."""
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema and isinstance(schema["enum"], list):
        return " | ".join(json.dumps(item, ensure_ascii=False) for item in schema["enum"]) or "any"
    kind = schema.get("type")
    if kind == "array":
        return f"{_type(schema.get('items'), depth)}[]"
    if kind == "object" and isinstance(schema.get("properties"), dict):
        return _object(schema, depth + 1)
    return _SCALARS.get(kind, "any") if isinstance(kind, str) else "any"


def _object(schema: dict[str, Any], depth: int) -> str:
    indent = "    " * (depth - 1)
    required = schema.get("required")
    required = required if isinstance(required, list) else []
    lines = ["{"]
    for key, prop in schema["properties"].items():
        prop = prop if isinstance(prop, dict) else {}
        if prop.get("description"):
            lines.append(f"{indent}// {prop['description']}")
        line = f"{indent}{key}{'' if key in required else '?'}: {_type(prop, depth)},"
        if "default" in prop:
            default = prop["default"]
            line += f" // default: {default if isinstance(default, str) else json.dumps(default)}"
        lines.append(line)
    lines.append(f"{indent}}}")
    return "\n".join(lines)


def render_tools(tools: Sequence[Any]) -> str:
    """The ``# Tools`` section harmony writes into the developer message for OpenAI-style function tools."""
    parts = ["# Tools\n\n## functions\n\nnamespace functions {\n\n"]
    for index, tool in enumerate(tools):
        function = function_of(tool, index)
        if function.get("description"):
            parts.append(f"// {function['description']}\n")
        parameters = function.get("parameters") or function.get("input_schema")
        if isinstance(parameters, dict) and isinstance(parameters.get("properties"), dict):
            parts.append(f"type {function['name']} = (_: {_object(parameters, 1)}) => any;\n\n")
        else:
            parts.append(f"type {function['name']} = () => any;\n\n")
    parts.append("} // namespace functions")
    return "".join(parts)
