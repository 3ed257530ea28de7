"""A local server for OpenAI's server-side compaction, as developers.openai.com/api/docs/guides/compaction documents
it: ``POST /v1/responses`` with ``context_management=[{"type": "compaction", "compact_threshold": N}]`` compacts once
the rendered input is over N tokens and returns an opaque ``compaction`` item before the reply; ``POST
/v1/responses/compact`` returns the input's user messages followed by one compaction item. A compaction item sent
back must be one this server issued, unchanged (its ``encrypted_content`` byte for byte), and stands for every item
before it. Bodies are validated as the openai SDK's own params; a broken rule is a 400 the SDK raises.

Tokens are counted as the server's stand-in for the model's (four characters of the items' JSON a token, a
compaction item as its encrypted content's size): the rules are the providers', the counts are not.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from openai.types.responses.response_compact_params import ResponseCompactParams
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter, ValidationError

_CREATE = TypeAdapter(ResponseCreateParamsNonStreaming)
_COMPACT = TypeAdapter(ResponseCompactParams)


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
    threshold, counted = _threshold(body), tokens(items)
    output: list[Any] = [_REPLY]
    if threshold is not None and counted > threshold:
        output = [issued.issue(items), _REPLY]
    return {"id": "resp_1", "object": "response", "created_at": 1, "model": body["model"], "status": "completed",
            "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": _usage(counted)}


def compact(body: dict[str, Any], issued: Compactions) -> dict[str, Any]:
    _COMPACT.validate_python(body, strict=False)
    items = _checked_input(body, issued)
    users = [item for item in items if isinstance(item, dict) and item.get("role") == "user"]
    return {"id": "cmp_resp_1", "object": "response.compaction", "created_at": 1,
            "output": [*({**user, "type": "message"} for user in users), issued.issue(items)],
            "usage": _usage(tokens(items))}


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

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # http.server's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            bodies.append((self.path, body))
            try:
                reply = _ROUTES[self.path](body, issued)
            except (Rejected, ValidationError, KeyError) as exc:
                self._send(400, {"error": {"type": "invalid_request_error", "message": str(exc)}})
                return
            self._send(200, reply)

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield Server(f"http://127.0.0.1:{httpd.server_address[1]}", bodies, issued)
    finally:
        httpd.shutdown()
        httpd.server_close()
