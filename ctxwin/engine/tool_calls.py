"""Copy an AIMessage keeping only some of its tool calls, in every place a call is recorded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ctxwin.messages import AIMessage

_AI = TypeVar("_AI", bound=AIMessage)


def call_ids(message: AIMessage) -> list[str]:
    """The ids of the message's tool calls, valid and invalid, in order (calls without an id are skipped)."""
    return [c["id"] for c in (*message.tool_calls, *message.invalid_tool_calls) if c["id"]]


def keep_tool_calls(message: _AI, keep: Callable[[str | None], bool]) -> _AI:
    """A copy of ``message`` without the tool calls whose id ``keep`` rejects; the input is never mutated.

    Calls are removed from ``tool_calls``, ``invalid_tool_calls``, the raw OpenAI entries in
    ``additional_kwargs["tool_calls"]`` (kept by ctxwin for exact round trips; the key is dropped when empty, as
    providers reject an empty list) and Anthropic ``tool_use`` content blocks.
    """
    update: dict[str, Any] = {
        "tool_calls": [c for c in message.tool_calls if keep(c.get("id"))],
        "invalid_tool_calls": [c for c in message.invalid_tool_calls if keep(c.get("id"))],
    }
    raw = message.additional_kwargs.get("tool_calls")
    if isinstance(raw, list):
        kept_raw = [r for r in raw if not isinstance(r, dict) or keep(r.get("id"))]
        extra = {k: v for k, v in message.additional_kwargs.items() if k != "tool_calls"}
        if kept_raw:
            extra["tool_calls"] = kept_raw
        update["additional_kwargs"] = extra
    if isinstance(message.content, list):
        update["content"] = [
            block
            for block in message.content
            if not (isinstance(block, dict) and block.get("type") == "tool_use") or keep(block.get("id"))
        ]
    return message.model_copy(update=update)
