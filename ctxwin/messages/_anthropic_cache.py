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


# Blocks Anthropic refuses a cache_control on: thinking blocks (cached with their turn, never marked) and, below, an
# empty text block.
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


def _markable(block: Any) -> bool:
    if not isinstance(block, Mapping):
        return False
    kind = block.get("type")
    return kind not in _UNMARKABLE and not (kind == "text" and not block.get("text"))


def _blocks(content: Any) -> list[dict[str, Any]]:
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
        raise ValueError("mark_cache_breakpoints: the request has no messages")
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
            blocks = _blocks(system) if system else []
            last = next((j for j in range(len(blocks) - 1, -1, -1) if _markable(blocks[j])), None)
            if last is not None and "cache_control" not in blocks[last]:
                blocks[last] = {**blocks[last], "cache_control": control}
                out["system"] = blocks
                room -= 1
        elif target not in marked:
            marked.add(target)
            i, j = target
            blocks = _blocks(listed[i]["content"])
            if "cache_control" not in blocks[j]:
                blocks[j] = {**blocks[j], "cache_control": control}
                listed[i] = {**listed[i], "content": blocks}
                room -= 1
    out["messages"] = listed
    return out


def _out_of_range(index: int, listed: list[Any]) -> int:
    raise ValueError(f"mark_cache_breakpoints: message index {index} is outside the request's {len(listed)} messages")
