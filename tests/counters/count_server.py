"""A local HTTP server speaking the token-counting endpoints of Anthropic and Gemini, for the networked counters'
tests (the real SDKs talk to it through ANTHROPIC_BASE_URL / GOOGLE_GEMINI_BASE_URL).

Request and response shapes as documented:
- Anthropic, https://docs.claude.com/en/api/messages-count-tokens: ``POST /v1/messages/count_tokens`` with a JSON
  body ``{"model", "messages", "system"?, "tools"?}``, answered ``{"input_tokens": <int>}``.
- Gemini, https://ai.google.dev/api/tokens#method:-models.counttokens: ``POST /v1beta/models/<model>:countTokens``
  (``/v1/`` too, which google-genai uses)
  with ``{"contents": [{"role", "parts": [...]}]}``, answered ``{"totalTokens": <int>}``.

Its "tokenizer" is a toy with known results: a word is a token (whitespace-split text), an image 100, every turn 3
more, a system prompt 2 more, a tool 5 more, a request 7.
"""

from __future__ import annotations

import http.server
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

REQUEST, TURN, SYSTEM, TOOL, IMAGE = 7, 3, 2, 5, 100
# A conversation with every kind of part both providers take: a system prompt, an image, a tool call and its result.
PNG = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5"
       "ErkJggg==")
TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "find a word",
                                           "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]
CONVERSATION = [
    {"role": "system", "content": "You answer briefly."},
    {"role": "user", "content": [{"type": "text", "text": "what is this"},
                                 {"type": "image_url", "image_url": {"url": PNG}}]},
    {"role": "assistant", "content": "let me look", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "cat picture"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "a small cat"},
    {"role": "assistant", "content": "It is a cat."},
]


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def words(value: Any) -> int:
    """Tokens of a JSON value's text: the whitespace-split words of its strings (keys of tool inputs included)."""
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, dict):
        return sum(words(k) + words(v) for k, v in value.items())
    if isinstance(value, list):
        return sum(map(words, value))
    return 0


def anthropic_block(block: dict[str, Any]) -> int:
    kind = block["type"]
    if kind == "text":
        return words(block["text"])
    if kind == "image":
        return IMAGE
    if kind == "tool_use":
        return words(block["name"]) + words(block["input"])
    if kind == "tool_result":
        content = block.get("content", "")
        return words(content) if isinstance(content, str) else sum(map(anthropic_block, content))
    raise ValueError(f"unknown block {kind}")


def anthropic_count(body: dict[str, Any]) -> int:
    total = REQUEST
    for message in body["messages"]:
        content = message["content"]
        total += TURN + (words(content) if isinstance(content, str) else sum(map(anthropic_block, content)))
    system = body.get("system")
    if system:
        total += SYSTEM + (words(system) if isinstance(system, str) else sum(map(anthropic_block, system)))
    return total + sum(TOOL + words(tool) for tool in body.get("tools", []))


def gemini_part(part: dict[str, Any]) -> int:
    if "text" in part:
        return words(part["text"])
    if "inlineData" in part:
        return IMAGE
    if "functionCall" in part:
        return words(part["functionCall"]["name"]) + words(part["functionCall"].get("args", {}))
    if "functionResponse" in part:
        return words(part["functionResponse"]["name"]) + words(part["functionResponse"]["response"])
    raise ValueError(f"unknown part {part}")


def gemini_count(body: dict[str, Any]) -> int:
    return REQUEST + sum(TURN + sum(map(gemini_part, c["parts"])) for c in body["contents"])


class CountHandler(http.server.BaseHTTPRequestHandler):
    server: CountServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.path, body))
        if self.server.delay:
            time.sleep(self.server.delay)
        if self.server.reply is not None:
            status, payload = self.server.reply
        elif self.path == "/v1/messages/count_tokens":
            status, payload = 200, json.dumps({"input_tokens": anthropic_count(body)}).encode()
        elif self.path.startswith(("/v1beta/models/", "/v1/models/")) and self.path.endswith(":countTokens"):
            status, payload = 200, json.dumps({"totalTokens": gemini_count(body)}).encode()
        else:
            status, payload = 404, b'{"error": {"message": "not found"}}'
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:  # the client gave up (a timeout test)
            pass

    def log_message(self, format: str, *args: object) -> None:
        pass


class CountServer(http.server.ThreadingHTTPServer):
    """Records ``(path, JSON body)`` of every request; ``reply`` overrides the answer, ``delay`` holds it back."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), CountHandler)
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.reply: tuple[int, bytes] | None = None
        self.delay = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"


@contextmanager
def count_server() -> Iterator[CountServer]:
    server = CountServer()
    # shutdown() waits for the loop's next poll: every 0.5 s by default, every 0.05 s here
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
