"""``mark_cache_breakpoints``: Anthropic ``cache_control`` breakpoints on a Messages request.

Anthropic caches a request's prefix (tools, then system, then messages) up to each block marked
``"cache_control": {"type": "ephemeral"}``, at most ``MAX_BREAKPOINTS`` a request; a later request whose prefix is
the same up to a marked block reads it from the cache. The markers are not part of what is cached, so moving them
between requests does not change the prefix. The function works on the request form (``tools``, ``system``,
``messages``), whoever built it, and copies only what it marks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

MAX_BREAKPOINTS = 4  # Anthropic's limit per request
EPHEMERAL = {"type": "ephemeral"}


def _control(ttl: str | None) -> dict[str, str]:
    return {**EPHEMERAL, **({"ttl": ttl} if ttl else {})}


def _marked_blocks(content: Any, ttl: str | None) -> list[Any]:
    """``content`` (a string or a list of blocks) as blocks, the last one carrying the marker."""
    blocks: list[dict[str, Any]] = (
        [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content]
    )
    if not blocks:
        raise ValueError("mark_cache_breakpoints: a message or system prompt with no content block cannot be marked")
    blocks[-1] = {**blocks[-1], "cache_control": _control(ttl)}
    return blocks


def mark_cache_breakpoints(
    request: Mapping[str, Any], messages: Sequence[int] = (-1,), *, ttl: str | None = None
) -> dict[str, Any]:
    """A copy of the Anthropic ``request`` with breakpoints on its last tool definition, its system prompt and the
    messages at the indexes ``messages`` (the last one by default), at most ``MAX_BREAKPOINTS`` in all (the earliest
    message indexes are dropped first: the newest prefix is the one the next request reads).

    A chat loop marks the last message (what the next request reads) and the last message of the previous request
    (what this one reads). ``ttl`` is ``"1h"`` for Anthropic's one-hour cache, else the default five minutes.
    ValueError for a request without messages or an index outside them."""
    out = dict(request)
    listed = list(out.get("messages") or [])
    if not listed:
        raise ValueError("mark_cache_breakpoints: the request has no messages")
    indexes = sorted({i % len(listed) if -len(listed) <= i < len(listed) else _out_of_range(i, listed)
                      for i in messages})
    budget = MAX_BREAKPOINTS
    tools = list(out.get("tools") or [])
    if tools:
        tools[-1] = {**tools[-1], "cache_control": _control(ttl)}
        out["tools"] = tools
        budget -= 1
    system = out.get("system")
    if system:
        out["system"] = _marked_blocks(system, ttl)
        budget -= 1
    for index in indexes[-budget:] if budget > 0 else []:
        message = listed[index]
        listed[index] = {**message, "content": _marked_blocks(message["content"], ttl)}
    out["messages"] = listed
    return out


def _out_of_range(index: int, listed: list[Any]) -> int:
    raise ValueError(f"mark_cache_breakpoints: message index {index} is outside the request's {len(listed)} messages")
