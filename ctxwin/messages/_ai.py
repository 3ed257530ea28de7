"""AIMessage, AIMessageChunk and token-usage metadata."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import PrivateAttr, model_validator
from typing_extensions import NotRequired, TypedDict

from ctxwin.messages._base import BaseMessage, BaseMessageChunk, Content
from ctxwin.messages._content import ContentBlock, to_content_blocks
from ctxwin.messages._merge import merge_lists
from ctxwin.messages._tool_calls import (
    InvalidToolCall,
    ToolCall,
    ToolCallChunk,
    default_tool_chunk_parser,
    default_tool_parser,
    invalid_tool_call,
    tool_call_chunk,
    tool_calls_from_chunks,
)


class InputTokenDetails(TypedDict, total=False):
    audio: int
    cache_creation: int
    cache_read: int


class OutputTokenDetails(TypedDict, total=False):
    audio: int
    reasoning: int


class UsageMetadata(TypedDict):
    """Token usage a provider reported for one call."""

    input_tokens: int
    output_tokens: int
    total_tokens: int
    input_token_details: NotRequired[InputTokenDetails]
    output_token_details: NotRequired[OutputTokenDetails]


def _combine(left: dict[str, Any], right: dict[str, Any], sign: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in left.keys() | right.keys():
        a, b = left.get(key), right.get(key)
        if isinstance(a, dict) or isinstance(b, dict):
            out[key] = _combine(a or {}, b or {}, sign)
        else:
            out[key] = max((a or 0) + sign * (b or 0), 0)
    return out


def add_usage(left: UsageMetadata | None, right: UsageMetadata | None) -> UsageMetadata:
    """Sum two usage records, nested details included."""
    zero = UsageMetadata(input_tokens=0, output_tokens=0, total_tokens=0)
    return _combine(dict(left or zero), dict(right or zero), 1)  # type: ignore[return-value]


def subtract_usage(left: UsageMetadata | None, right: UsageMetadata | None) -> UsageMetadata:
    """``left - right``, floored at zero per field."""
    zero = UsageMetadata(input_tokens=0, output_tokens=0, total_tokens=0)
    return _combine(dict(left or zero), dict(right or zero), -1)  # type: ignore[return-value]


def _normalise_calls(values: dict[str, Any]) -> None:
    """Give every tool call, invalid call and chunk its ``type`` key and all its fields, as LangChain does."""
    if calls := values.get("tool_calls"):
        values["tool_calls"] = [
            {"name": c.get("name"), "args": c.get("args"), "id": c.get("id"), "type": "tool_call"}
            if isinstance(c, dict)
            else c
            for c in calls
        ]
    if invalid := values.get("invalid_tool_calls"):
        values["invalid_tool_calls"] = [
            invalid_tool_call(name=c.get("name"), args=c.get("args"), id=c.get("id"), error=c.get("error"))
            if isinstance(c, dict)
            else c
            for c in invalid
        ]
    if chunks := values.get("tool_call_chunks"):
        values["tool_call_chunks"] = [
            tool_call_chunk(name=c.get("name"), args=c.get("args"), id=c.get("id"), index=c.get("index"))
            if isinstance(c, dict)
            else c
            for c in chunks
        ]


class AIMessage(BaseMessage):
    """A model's reply: text and/or tool calls.

    Raw OpenAI tool calls in ``additional_kwargs["tool_calls"]`` are parsed into ``tool_calls`` when none are
    given, as in LangChain.
    """

    tool_calls: list[ToolCall] = []
    invalid_tool_calls: list[InvalidToolCall] = []
    usage_metadata: UsageMetadata | None = None
    type: Literal["ai"] = "ai"
    # OpenAI tool calls exactly as received, so converting back reproduces the argument text byte for byte.
    # Private: not part of the message's value (equality, serialization), so messages still equal LangChain's.
    _openai_tool_calls: list[dict[str, Any]] | None = PrivateAttr(default=None)

    def __init__(self, content: Content = "", **kwargs: Any) -> None:
        super().__init__(content=content, **kwargs)

    @property
    def content_blocks(self) -> list[ContentBlock]:
        """Content as standard blocks, followed by the tool calls not already among them."""
        return to_content_blocks(self.content, self.tool_calls, self.invalid_tool_calls)

    def pretty_repr(self, html: bool = False) -> str:
        lines: list[str] = []
        for title, calls in (("Tool Calls:", self.tool_calls), ("Invalid Tool Calls:", self.invalid_tool_calls)):
            if calls:
                lines.append(title)
                for call in calls:
                    lines += [f"  {call.get('name', 'Tool')} ({call.get('id')})", f" Call ID: {call.get('id')}"]
                    if call.get("error"):
                        lines.append(f"  Error: {call.get('error')}")
                    lines.append("  Args:")
                    args = call.get("args")
                    if isinstance(args, str):
                        lines.append(f"    {args}")
                    elif isinstance(args, dict):
                        lines += [f"    {key}: {value}" for key, value in args.items()]
        return (super().pretty_repr(html).strip() + "\n" + "\n".join(lines)).strip()

    @model_validator(mode="before")
    @classmethod
    def _backwards_compat_tool_calls(cls, values: Any) -> Any:
        if not isinstance(values, dict):
            return values
        values = dict(values)
        extra = values.get("additional_kwargs")
        raw = extra.get("tool_calls") if isinstance(extra, dict) else None
        given = any(values.get(k) for k in ("tool_calls", "invalid_tool_calls", "tool_call_chunks"))
        if raw and not given and isinstance(raw, list):
            if issubclass(cls, AIMessageChunk):
                values["tool_call_chunks"] = default_tool_chunk_parser(raw)
            else:
                values["tool_calls"], values["invalid_tool_calls"] = default_tool_parser(raw)
        _normalise_calls(values)
        return values


class AIMessageChunk(AIMessage, BaseMessageChunk):
    """A streamed piece of an AIMessage; ``tool_calls`` are parsed from the accumulated ``tool_call_chunks``."""

    type: Literal["AIMessageChunk"] = "AIMessageChunk"  # type: ignore[assignment]
    tool_call_chunks: list[ToolCallChunk] = []
    chunk_position: Literal["last"] | None = None

    @model_validator(mode="after")
    def _init_tool_calls(self) -> AIMessageChunk:
        if self.tool_call_chunks:
            self.tool_calls, self.invalid_tool_calls = tool_calls_from_chunks(self.tool_call_chunks)
        elif self.tool_calls or self.invalid_tool_calls:
            self.tool_call_chunks = [
                tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"])
                for c in self.tool_calls
            ] + [tool_call_chunk(name=c["name"], args=c["args"], id=c["id"]) for c in self.invalid_tool_calls]
        return self

    def _merged_fields(self, others: Sequence[BaseMessageChunk]) -> dict[str, Any]:
        ai_others = [o for o in others if isinstance(o, AIMessageChunk)]
        chunks = merge_lists(self.tool_call_chunks, *(o.tool_call_chunks for o in ai_others)) or []
        usages = [m.usage_metadata for m in (self, *ai_others) if m.usage_metadata is not None]
        usage: UsageMetadata | None = None
        for item in usages:
            usage = add_usage(usage, item)
        last = self.chunk_position == "last" or any(o.chunk_position == "last" for o in ai_others)
        return {
            **super()._merged_fields(others),
            "tool_call_chunks": chunks,
            "usage_metadata": usage,
            "chunk_position": "last" if last else None,
        }
