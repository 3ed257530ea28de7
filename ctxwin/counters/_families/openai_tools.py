"""Token cost of tool definitions in an OpenAI chat request, by the method of OpenAI's cookbook
(``num_tokens_for_tools``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxwin._errors import InvalidInputError, InvalidTypeError


@dataclass(frozen=True)
class ToolOverheads:
    """Fixed token costs of the hidden tool-definition preamble, per model family."""

    function_start: int
    properties: int = 3
    property_key: int = 3
    enum: int = -3
    enum_item: int = 3
    closing: int = 12


# Cookbook values: gpt-4o / gpt-4o-mini (o200k_base), and gpt-4 / gpt-3.5-turbo (cl100k_base).
GPT4O_TOOL_OVERHEADS = ToolOverheads(function_start=7)
GPT4_TOOL_OVERHEADS = ToolOverheads(function_start=10)


def function_of(tool: Any, index: int) -> dict[str, Any]:
    """The function definition inside an OpenAI tool (``{"type": "function", "function": {...}}``) or a bare one."""
    if not isinstance(tool, dict):
        raise InvalidTypeError(f"tools[{index}]: expected a dict tool definition, got {type(tool).__name__}")
    function = tool.get("function", tool)
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise InvalidInputError(
            f"tools[{index}]: expected {{'type': 'function', 'function': {{'name': ..., 'description': ..., "
            f"'parameters': ...}}}} or a bare function definition with a string 'name'"
        )
    return function


def _without_period(value: Any) -> str:
    text = "" if value is None else str(value)
    return text[:-1] if text.endswith(".") else text


def tool_definition_lines(tools: Sequence[Any], overheads: ToolOverheads) -> tuple[list[str], int]:
    """The strings to tokenize for ``tools`` and the sum of the fixed overheads around them."""
    texts: list[str] = []
    fixed = 0
    for index, tool in enumerate(tools):
        function = function_of(tool, index)
        fixed += overheads.function_start
        texts.append(f"{function['name']}:{_without_period(function.get('description'))}")
        parameters = function.get("parameters") or function.get("input_schema") or {}
        properties = parameters.get("properties") if isinstance(parameters, dict) else None
        if not properties:
            continue
        if not isinstance(properties, dict):
            raise InvalidInputError(f"tools[{index}]: 'parameters.properties' must be an object, got {properties!r}")
        fixed += overheads.properties
        for key, schema in properties.items():
            schema = schema if isinstance(schema, dict) else {}
            fixed += overheads.property_key
            if "enum" in schema:
                fixed += overheads.enum
                for item in schema["enum"] or []:
                    fixed += overheads.enum_item
                    texts.append(str(item))
            texts.append(f"{key}:{schema.get('type', '')}:{_without_period(schema.get('description'))}")
    if tools:
        fixed += overheads.closing
    return texts, fixed


def count_tool_definitions(
    tools: Sequence[Any], count_texts: Callable[[Sequence[str]], list[int]], overheads: ToolOverheads
) -> int:
    """Tokens the ``tools`` parameter adds to a request, counting strings with ``count_texts``."""
    texts, fixed = tool_definition_lines(tools, overheads)
    return fixed + sum(count_texts(texts))
