"""Tool calls: the TypedDicts, their factories, and the parsers of OpenAI raw tool calls and streamed chunks; apart from
``ToolMessage`` so that the message modules import each other in one direction only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from typing_extensions import NotRequired, TypedDict

from ctxwin.messages._limits import MAX_TOOL_ARGS_DEPTH, NestingError, json_too_deep
from ctxwin.messages._partial_json import partial_arguments


class ToolCall(TypedDict):
    """A request from the model to call a tool; ``args`` is already parsed."""

    name: str
    args: dict[str, Any]
    id: str | None
    type: NotRequired[Literal["tool_call"]]


class ToolCallChunk(TypedDict):
    """A streamed piece of a tool call; ``args`` is a fragment of the JSON text."""

    name: str | None
    args: str | None
    id: str | None
    index: int | None
    type: NotRequired[Literal["tool_call_chunk"]]


class InvalidToolCall(TypedDict):
    """A tool call whose arguments could not be parsed; kept so nothing the model said is lost."""

    name: str | None
    args: str | None
    id: str | None
    error: str | None
    type: NotRequired[Literal["invalid_tool_call"]]


def tool_call(*, name: str, args: dict[str, Any], id: str | None) -> ToolCall:
    return ToolCall(name=name, args=args, id=id, type="tool_call")


def tool_call_chunk(
    *, name: str | None = None, args: str | None = None, id: str | None = None, index: int | None = None
) -> ToolCallChunk:
    return ToolCallChunk(name=name, args=args, id=id, index=index, type="tool_call_chunk")


def invalid_tool_call(
    *, name: str | None = None, args: str | None = None, id: str | None = None, error: str | None = None
) -> InvalidToolCall:
    return InvalidToolCall(name=name, args=args, id=id, error=error, type="invalid_tool_call")


def load_arguments(text: str) -> Any:
    """``json.loads`` of tool-call arguments, refusing (ValueError) text nested deeper than a message may hold
    them (``MAX_TOOL_ARGS_DEPTH``) before the parser recurses into it."""
    if json_too_deep(text, MAX_TOOL_ARGS_DEPTH):
        raise NestingError(f"nested deeper than {MAX_TOOL_ARGS_DEPTH} levels")
    return json.loads(text)


def _parse_one(raw: Any) -> ToolCall | InvalidToolCall:
    if not isinstance(raw, dict) or not isinstance(raw.get("function"), dict):
        return invalid_tool_call(args=json.dumps(raw, default=str), error="expected {'function': {...}}")
    function = raw["function"]
    name = function.get("name")
    name = str(name) if name is not None else None
    raw_id = raw.get("id")
    call_id = str(raw_id) if raw_id is not None else None
    arguments = function.get("arguments")
    if isinstance(arguments, dict):
        return tool_call(name=name or "", args=arguments, id=call_id)
    if arguments is None or arguments == "":
        return tool_call(name=name or "", args={}, id=call_id)
    if not isinstance(arguments, str):
        return invalid_tool_call(
            name=name, args=str(arguments), id=call_id, error="arguments must be a string"
        )
    try:
        args = load_arguments(arguments)
    except ValueError as exc:  # bad JSON, nested too deep, an integer past Python's digit limit
        return invalid_tool_call(name=name, args=arguments, id=call_id, error=f"invalid JSON: {exc}")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return invalid_tool_call(
            name=name, args=arguments, id=call_id, error="arguments must be a JSON object"
        )
    return tool_call(name=name or "", args=args, id=call_id)


def default_tool_parser(raw_tool_calls: Sequence[Any]) -> tuple[list[ToolCall], list[InvalidToolCall]]:
    """Parse OpenAI-style raw tool calls (``{"id", "function": {"name", "arguments"}}``).

    Arguments that are not a JSON object become an ``InvalidToolCall`` carrying the raw text; this never raises.
    """
    valid: list[ToolCall] = []
    invalid: list[InvalidToolCall] = []
    for raw in raw_tool_calls:
        parsed = _parse_one(raw)
        if parsed.get("type") == "tool_call":
            valid.append(parsed)  # type: ignore[arg-type]
        else:
            invalid.append(parsed)  # type: ignore[arg-type]
    return valid, invalid


def default_tool_chunk_parser(raw_tool_calls: Sequence[Any]) -> list[ToolCallChunk]:
    """Parse OpenAI-style streamed raw tool calls into chunks; arguments stay unparsed text."""
    chunks: list[ToolCallChunk] = []
    for raw in raw_tool_calls:
        if not isinstance(raw, dict):
            continue
        function: dict[str, Any] = raw["function"] if isinstance(raw.get("function"), dict) else {}
        index = raw.get("index")
        chunks.append(
            tool_call_chunk(
                name=function.get("name"),
                args=function.get("arguments"),
                id=raw.get("id"),
                index=index if isinstance(index, int) else None,
            )
        )
    return chunks


def tool_calls_from_chunks(chunks: Sequence[ToolCallChunk]) -> tuple[list[ToolCall], list[InvalidToolCall]]:
    """Parse accumulated tool-call chunks; arguments still cut off mid-JSON are closed leniently."""
    valid: list[ToolCall] = []
    invalid: list[InvalidToolCall] = []
    for chunk in chunks:
        raw_args = chunk.get("args")
        try:
            args = partial_arguments(raw_args) if raw_args else {}
        except ValueError:  # not JSON even when closed, or nested too deep
            args = None
        if isinstance(args, dict):
            valid.append(tool_call(name=chunk.get("name") or "", args=args, id=chunk.get("id")))
        else:
            invalid.append(invalid_tool_call(name=chunk.get("name"), args=raw_args, id=chunk.get("id")))
    return valid, invalid
