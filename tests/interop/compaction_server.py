"""A local server for the providers' own compaction and context editing, as their docs describe them today.

OpenAI (developers.openai.com/api/docs/guides/compaction): ``POST /v1/responses`` with ``context_management=[{"type":
"compaction", "compact_threshold": N}]`` compacts once the rendered input is over N tokens and returns an opaque
``compaction`` item before the reply; ``POST /v1/responses/compact`` returns the input's user messages followed by
one compaction item. Anthropic (platform.claude.com/docs/en/build-with-claude/compaction and /context-editing,
beta headers ``compact-2026-01-12`` and ``context-management-2025-06-27``): ``POST /v1/messages`` with
``context_management={"edits": [...]}``: ``compact_20260112`` compacts over its trigger (150,000 input tokens by
default) into a ``compaction`` block at the start of the reply (only that block, stop reason ``compaction``, with
``pause_after_compaction``), and every block before the newest compaction block of a request is dropped;
on-demand compaction (``compaction={"type": "summarize"}``, beta ``compact-2026-09-04``) answers the compaction
block alone;
``clear_tool_uses_20250919`` clears the results of all but the newest ``keep`` tool uses once over its trigger,
``clear_thinking_20251015`` the thinking of all but the newest ``keep`` assistant turns; the reply says what was
applied (``context_management.applied_edits``). A compaction item or block sent back must be one this server issued,
unchanged. Bodies are validated as the SDKs' own params; a broken rule is a 400 the SDK raises.

Tokens are counted as the server's stand-in for the model's (four characters of the items' JSON a token, a
compaction item as its encrypted content's size): the rules are the providers', the counts are not.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from anthropic.types.beta.message_create_params import MessageCreateParamsNonStreaming as BetaMessageParams
from openai.types.responses.response_compact_params import ResponseCompactParams
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter, ValidationError

from tests.interop.strict_server import serving

_CREATE = TypeAdapter(ResponseCreateParamsNonStreaming)
_COMPACT = TypeAdapter(ResponseCompactParams)
_MESSAGES = TypeAdapter(BetaMessageParams)
_BETAS = {"compact_20260112": "compact-2026-01-12", "clear_tool_uses_20250919": "context-management-2025-06-27",
          "clear_thinking_20251015": "context-management-2025-06-27"}


class Rejected(Exception):
    """What OpenAI would answer with a 400."""


@dataclass
class Compactions:
    """The compaction items issued: encrypted content -> the items it stands for."""

    replaced: dict[str, list[Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def issue(self, items: list[Any]) -> dict[str, Any]:
        digest = hashlib.sha256(json.dumps(items, sort_keys=True).encode()).hexdigest()
        content = f"enc:{digest}"
        with self.lock:
            self.replaced[content] = items
        return {"id": f"cmp_{digest[:12]}", "type": "compaction", "encrypted_content": content}

    def block(self, messages: list[Any]) -> dict[str, Any]:
        """An Anthropic compaction block standing for ``messages``."""
        item = self.issue(messages)
        return {"type": "compaction", "content": f"summary of {len(messages)} messages",
                "encrypted_content": item["encrypted_content"], "signature": item["id"]}


def tokens(items: list[Any]) -> int:
    """The server's count of a rendered input: a compaction item by its content's size, anything else by JSON."""
    return sum(len(item["encrypted_content"]) // 4 if item.get("type") == "compaction"
               else len(json.dumps(item)) // 4 for item in items)


def _checked_input(body: dict[str, Any], issued: Compactions) -> list[Any]:
    items = body.get("input")
    items = [{"role": "user", "content": items}] if isinstance(items, str) else list(items or [])
    for i, item in enumerate(items):
        if isinstance(item, dict) and item.get("type") == "compaction":
            if item.get("encrypted_content") not in issued.replaced:
                raise Rejected(f"input[{i}]: compaction item was not produced by this server or was modified")
            if set(item) - {"id", "type", "encrypted_content"}:
                raise Rejected(f"input[{i}]: unknown keys on a compaction item: {sorted(set(item) - {'id', 'type'})}")
    return items


def _threshold(body: dict[str, Any]) -> int | None:
    entries = body.get("context_management") or []
    for entry in entries:
        if entry.get("type") != "compaction":
            raise Rejected(f"context_management: unknown type {entry.get('type')!r}; only 'compaction' is supported")
        if set(entry) - {"type", "compact_threshold"}:
            raise Rejected(f"context_management: unknown keys {sorted(set(entry) - {'type', 'compact_threshold'})}")
    thresholds = [entry.get("compact_threshold") for entry in entries]
    return next((t for t in thresholds if t is not None), None) if entries else None


def _usage(input_tokens: int) -> dict[str, Any]:
    return {"input_tokens": input_tokens, "output_tokens": 1, "total_tokens": input_tokens + 1,
            "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}


_REPLY = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
          "content": [{"type": "output_text", "text": "ok", "annotations": []}]}


def create(body: dict[str, Any], issued: Compactions) -> dict[str, Any]:
    _CREATE.validate_python(body, strict=False)
    items = _checked_input(body, issued)
    newest = max((i for i, item in enumerate(items) if isinstance(item, dict) and item.get("type") == "compaction"),
                 default=0)
    rendered = items[newest:]  # the newest compaction item stands for everything before it
    threshold, counted = _threshold(body), tokens(rendered)
    output: list[Any] = [_REPLY]
    if threshold is not None and counted > threshold:
        output = [issued.issue(rendered), _REPLY]
    return {"id": "resp_1", "object": "response", "created_at": 1, "model": body["model"], "status": "completed",
            "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": _usage(counted)}


def _input_parts(content: Any) -> list[Any]:
    return [{"type": "input_text", "text": content}] if isinstance(content, str) else list(content)


def compact(body: dict[str, Any], issued: Compactions) -> dict[str, Any]:
    _COMPACT.validate_python(body, strict=False)
    items = _checked_input(body, issued)
    users = [item for item in items if isinstance(item, dict) and item.get("role") == "user"]
    return {"id": "cmp_resp_1", "object": "response.compaction", "created_at": 1,
            "output": [*({"type": "message", "role": "user", "content": _input_parts(user["content"])}
                         for user in users), issued.issue(items)],
            "usage": _usage(tokens(items))}


def _blocks(message: dict[str, Any]) -> list[Any]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _after_compaction(messages: list[Any], issued: Compactions) -> list[Any]:
    """The messages from the newest compaction block on (the API drops every block before it), each compaction
    block checked as issued."""
    start = None
    for i, message in enumerate(messages):
        for j, block in enumerate(_blocks(message)):
            if block.get("type") != "compaction":
                continue
            if message["role"] != "assistant":
                raise Rejected(f"messages[{i}].content[{j}]: a compaction block belongs to an assistant turn")
            replaced = issued.replaced.get(block.get("encrypted_content") or "")
            if replaced is None or block.get("signature") != issued.issue(replaced)["id"]:
                raise Rejected(f"messages[{i}].content[{j}]: compaction block was not produced by this server or was "
                               "modified")
            start = (i, j)
    if start is None:
        return messages
    i, j = start
    return [{**messages[i], "content": _blocks(messages[i])[j:]}, *messages[i + 1:]]


def _clear_tool_uses(messages: list[Any], edit: dict[str, Any]) -> dict[str, Any] | None:
    keep = (edit.get("keep") or {"value": 3})["value"]
    results = [block for message in messages if message["role"] == "user" for block in _blocks(message)
               if block.get("type") == "tool_result"]
    cleared = results[:max(len(results) - keep, 0)]
    if not cleared:
        return None
    tokens_before = tokens(cleared)
    for block in cleared:
        block["content"] = "[cleared]"
    return {"type": "clear_tool_uses_20250919", "cleared_tool_uses": len(cleared),
            "cleared_input_tokens": tokens_before - tokens(cleared)}


def _clear_thinking(messages: list[Any], edit: dict[str, Any]) -> dict[str, Any] | None:
    keep = edit.get("keep", {"type": "thinking_turns", "value": 1})
    if keep == "all" or keep.get("type") == "all":
        return None
    turns = [message for message in messages if message["role"] == "assistant"
             and any(block.get("type") in ("thinking", "redacted_thinking") for block in _blocks(message))]
    older = turns[:max(len(turns) - keep["value"], 0)]
    if not older:
        return None
    before = tokens(older)
    for message in older:
        message["content"] = [block for block in _blocks(message)
                              if block.get("type") not in ("thinking", "redacted_thinking")]
    return {"type": "clear_thinking_20251015", "cleared_thinking_turns": len(older),
            "cleared_input_tokens": before - tokens(older)}


def messages(body: dict[str, Any], issued: Compactions, betas: set[str]) -> dict[str, Any]:
    _MESSAGES.validate_python(body, strict=False)
    edits = (body.get("context_management") or {}).get("edits") or []
    for edit in edits:
        if _BETAS[edit["type"]] not in betas:
            raise Rejected(f"{edit['type']} needs the beta header {_BETAS[edit['type']]!r}")
    sent = json.loads(json.dumps(body["messages"]))  # the edits below work on a copy
    kept = _after_compaction(sent, issued)
    if body.get("compaction") is not None:  # on-demand: the conversation compacted, nothing sampled after
        if "compact-2026-09-04" not in betas:
            raise Rejected("compaction needs the beta header 'compact-2026-09-04'")
        if edits:
            raise Rejected("compaction cannot be combined with context_management")
        return {"id": "msg_c", "type": "message", "role": "assistant", "model": body["model"],
                "content": [issued.block(kept)], "stop_reason": "compaction", "stop_sequence": None,
                "usage": {"input_tokens": tokens(kept), "output_tokens": 1}}
    applied = []
    for edit in edits:
        trigger = (edit.get("trigger") or {}).get("value")
        if edit["type"] == "clear_tool_uses_20250919" and (trigger is None or tokens(kept) > trigger):
            applied.append(_clear_tool_uses(kept, edit))
        elif edit["type"] == "clear_thinking_20251015":
            applied.append(_clear_thinking(kept, edit))
    reply: list[Any] = [{"type": "text", "text": "ok"}]
    stop = "end_turn"
    compacting = next((edit for edit in edits if edit["type"] == "compact_20260112"), None)
    if compacting is not None and tokens(kept) > ((compacting.get("trigger") or {}).get("value") or 150_000):
        block = issued.block(kept)
        reply, stop = ([block], "compaction") if compacting.get("pause_after_compaction") else ([block, *reply], stop)
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"], "content": reply,
            "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": tokens(kept), "output_tokens": 1},
            "context_management": {"applied_edits": [edit for edit in applied if edit is not None]}}


_ROUTES = {"/v1/responses": create, "/v1/responses/compact": compact}


@dataclass
class Server:
    url: str
    bodies: list[tuple[str, Any]]
    issued: Compactions


@contextmanager
def compaction_server() -> Iterator[Server]:
    """The server on 127.0.0.1 (a free port), what it received and the compaction items it issued."""
    bodies: list[tuple[str, Any]] = []
    issued = Compactions()

    def answer(path: str, headers: Mapping[str, str], body: Any) -> tuple[int, dict[str, Any]]:
        bodies.append((path, body))
        try:
            if path.startswith("/v1/messages"):
                reply = messages(body, issued, set((headers.get("anthropic-beta") or "").split(",")))
            else:
                reply = _ROUTES[path](body, issued)
        except (Rejected, ValidationError, KeyError) as exc:
            return 400, {"error": {"type": "invalid_request_error", "message": str(exc)}}
        return 200, reply

    with serving(answer) as url:
        yield Server(url, bodies, issued)
