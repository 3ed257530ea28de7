"""A local server for the three provider endpoints that checks what the real APIs check (as their docs state), so
a request the SDK's client sends is accepted only if the provider would take it.

Each body is validated as the SDK's own request params (``CompletionCreateParamsNonStreaming``,
``ResponseCreateParamsNonStreaming``, ``MessageCreateParamsNonStreaming``), then against the rules the param types
cannot say: images only in user content for chat completions (and Responses messages); a tool result answers a call
made before it; Anthropic's ``tool_use`` needs ``tools`` naming the tool, a tool is a client tool (a name and an
``input_schema``) or a server tool of a type the SDK knows, each with only its own keys, a base64 image has one of
the four image media types and a URL image a web URL, roles alternate from a user turn, no turn but a final
assistant one is empty, and a
thinking block is one the server issued, unchanged (signature included); Responses reasoning items and their
encrypted content go back as issued; prompt caching marks: at most four (Anthropic's ``cache_control``, OpenAI's
``prompt_cache_breakpoint``), OpenAI's only on the blocks that take one, Anthropic's on no empty text or thinking
block. A broken rule is a 400 with the reason, which the SDK raises.
"""

from __future__ import annotations

import json
import threading
import typing
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from anthropic.types import ToolUnionParam
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter, ValidationError

REPLIES: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {
        "id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
    },
    "/v1/responses": {
        "id": "r", "object": "response", "created_at": 1, "model": "m", "status": "completed", "output": [],
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    },
    "/v1/messages": {
        "id": "m", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
        "stop_sequence": None, "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
}
_PARAMS = {
    "/v1/chat/completions": TypeAdapter(CompletionCreateParamsNonStreaming),
    "/v1/responses": TypeAdapter(ResponseCreateParamsNonStreaming),
    "/v1/messages": TypeAdapter(MessageCreateParamsNonStreaming),
}
_CHAT_MEDIA = {"image_url", "input_audio", "file"}


class Rejected(Exception):
    """What the provider would answer with a 400."""


@dataclass
class Issued:
    """What the server's model produced and a client must send back unchanged: thinking blocks (by signature) and
    Responses reasoning items (by id)."""

    thinking: dict[str, dict[str, Any]] = field(default_factory=dict)
    reasoning: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add_thinking(self, block: dict[str, Any]) -> dict[str, Any]:
        self.thinking[block.get("signature") or block["data"]] = dict(block)
        return block

    def add_reasoning(self, item: dict[str, Any]) -> dict[str, Any]:
        self.reasoning[item["id"]] = dict(item)
        return item


def _chat(body: dict[str, Any], issued: Issued) -> None:
    calls: set[str] = set()
    for i, message in enumerate(body["messages"]):
        content = message.get("content")
        if message["role"] != "user" and isinstance(content, list):
            for part in content:
                if part.get("type") in _CHAT_MEDIA:
                    raise Rejected(f"messages[{i}]: {part['type']} parts are only allowed in user messages "
                                   f"(role {message['role']})")
        for call in message.get("tool_calls") or []:
            calls.add(call["id"])
        if message["role"] == "tool" and message["tool_call_id"] not in calls:
            raise Rejected(f"messages[{i}]: tool message does not answer a preceding tool call")
    if "tool_choice" in body and not body.get("tools"):
        raise Rejected("tool_choice is only allowed when tools are specified")


def _tool_fields() -> dict[str | None, frozenset[str]]:
    """The keys each Anthropic tool type takes, by its ``type`` (None and ``custom``: a client tool), read from the
    SDK's ``ToolUnionParam``."""
    fields: dict[str | None, frozenset[str]] = {}
    for param in typing.get_args(ToolUnionParam):
        hints = typing.get_type_hints(param)
        kinds = [arg for arg in typing.get_args(hints["type"]) if arg is not type(None)]
        for kind in [value for arg in kinds for value in typing.get_args(arg)] or typing.get_args(hints["type"]):
            fields[kind] = frozenset(hints)
    fields[None] = fields["custom"]
    return fields


_TOOL_FIELDS = _tool_fields()
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def _anthropic_tools(tools: list[dict[str, Any]]) -> None:
    """What the API checks of ``tools`` (the SDK's param types, whose keys the validation above does not check): a
    known tool type, only its keys, and a client tool's ``name`` and ``input_schema``."""
    for i, tool in enumerate(tools):
        kind = tool.get("type")
        if kind not in _TOOL_FIELDS:
            raise Rejected(f"tools.{i}: unknown tool type {kind!r}")
        extra = set(tool) - _TOOL_FIELDS[kind]
        if extra:
            raise Rejected(f"tools.{i}.{sorted(extra)[0]}: Extra inputs are not permitted")
        if kind in (None, "custom") and not (isinstance(tool.get("name"), str)
                                             and isinstance(tool.get("input_schema"), dict)):
            raise Rejected(f"tools.{i}.custom: a client tool needs a name and an input_schema")


def _image_source(source: dict[str, Any], where: str) -> None:
    """A base64 image's media type (one of four, lower case) and a URL source's scheme (fetched from the web)."""
    if source.get("type") == "base64" and source.get("media_type") not in _IMAGE_TYPES:
        raise Rejected(f"{where}.source.media_type: Input should be one of {sorted(_IMAGE_TYPES)}")
    if source.get("type") == "url" and not str(source.get("url")).startswith(("https://", "http://")):
        raise Rejected(f"{where}.source.url: only http(s) URLs can be fetched")


def _anthropic(body: dict[str, Any], issued: Issued) -> None:
    _anthropic_tools(body.get("tools") or [])
    names = {tool.get("name") for tool in body.get("tools") or []}
    roles = [message["role"] for message in body["messages"]]
    if not roles or roles[0] != "user" or any(a == b for a, b in zip(roles, roles[1:], strict=False)):  # noqa: RUF007
        raise Rejected(f"roles must alternate starting with user, got {roles}")
    uses: set[str] = set()
    last = len(body["messages"]) - 1
    for i, message in enumerate(body["messages"]):
        content = message["content"]
        if not content and not (i == last and message["role"] == "assistant"):
            raise Rejected(f"messages.{i}: all messages must have non-empty content except for the optional final "
                           "assistant message")
        for block in content if isinstance(content, list) else []:
            kind = block.get("type")
            if kind == "tool_use":
                if not body.get("tools"):
                    raise Rejected(f"messages[{i}]: requests with tool_use blocks must define tools")
                if block["name"] not in names:
                    raise Rejected(f"messages[{i}]: tool_use of {block['name']!r}, which tools do not define")
                uses.add(block["id"])
            if kind == "tool_result" and block["tool_use_id"] not in uses:
                raise Rejected(f"messages[{i}]: tool_result for an unknown tool_use_id")
            if kind in ("thinking", "redacted_thinking"):
                key = block.get("signature") or block.get("data")
                if issued.thinking.get(key) != block:
                    raise Rejected(f"messages[{i}]: invalid signature in thinking block (changed or not issued)")
            if kind in ("image", "document") and message["role"] != "user":
                raise Rejected(f"messages[{i}]: {kind} blocks are only allowed in user turns")
            if kind == "image":
                _image_source(block["source"], f"messages.{i}")


def _responses(body: dict[str, Any], issued: Issued) -> None:
    items = body["input"] if isinstance(body["input"], list) else []
    calls: set[str] = set()
    for i, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "function_call":
            calls.add(item["call_id"])
        elif kind == "function_call_output" and item["call_id"] not in calls:
            raise Rejected(f"input[{i}]: no tool call found for function call output with call_id")
        elif kind == "reasoning" and issued.reasoning.get(item.get("id")) != item:
            raise Rejected(f"input[{i}]: reasoning item changed or not issued")
        elif kind == "message" and item.get("role") != "user" and any(
            isinstance(part, dict) and part.get("type") in ("input_image", "input_file")
            for part in item.get("content") or []
        ):
            raise Rejected(f"input[{i}]: images and files are only allowed in user messages")


_MARKABLE = {"/v1/chat/completions": {"text", "image_url", "input_audio", "file"},
             "/v1/responses": {"input_text", "input_image", "input_file"}}
_BREAKPOINT_KEYS = {"mode", "ttl"}


def _marks(path: str, body: dict[str, Any]) -> None:
    """Prompt caching marks as the providers take them: at most four a request; OpenAI's on blocks that take one,
    in explicit mode with a lifetime it knows; Anthropic's lifetimes longest first."""
    if path == "/v1/messages":
        blocks = [*(body.get("tools") or []), *(body["system"] if isinstance(body.get("system"), list) else []),
                  *(block for message in body["messages"] if isinstance(message["content"], list)
                    for block in message["content"])]
        blocks += [inner for block in blocks if isinstance(block.get("content"), list) for inner in block["content"]]
        for block in blocks:  # tool results' blocks too
            if block.get("cache_control") and block.get("type") in ("thinking", "redacted_thinking"):
                raise Rejected(f"cache_control cannot be set on {block['type']} blocks")
            if block.get("cache_control") and block.get("type") == "text" and not block.get("text"):
                raise Rejected("cache_control cannot be set for empty text blocks")
        ttls = [block["cache_control"].get("ttl", "5m") for block in blocks if block.get("cache_control")]
        if len(ttls) > 4:
            raise Rejected(f"A maximum of 4 blocks with cache_control may be provided. Found {len(ttls)}.")
        if ttls != sorted(ttls, key=lambda ttl: ttl != "1h"):
            raise Rejected("a ttl='1h' cache_control block must not come after a ttl='5m' one")
        return
    items = body["messages"] if path == "/v1/chat/completions" else body["input"]
    found = 0
    for i, item in enumerate(items if isinstance(items, list) else []):
        for key in ("content", "output"):
            for part in item.get(key) if isinstance(item.get(key), list) else []:
                mark = part.get("prompt_cache_breakpoint") if isinstance(part, dict) else None
                if mark is None:
                    continue
                found += 1
                if part.get("type") not in _MARKABLE[path]:
                    raise Rejected(f"input[{i}]: prompt_cache_breakpoint is not allowed on a {part.get('type')} block")
                if mark.get("mode") != "explicit" or set(mark) - _BREAKPOINT_KEYS or mark.get("ttl", "30m") not in (
                        "30m", "12h"):
                    raise Rejected(f"input[{i}]: invalid prompt_cache_breakpoint {mark}")
    if found > 4:
        raise Rejected(f"at most 4 prompt cache breakpoints may be written per request, found {found}")


_RULES = {"/v1/chat/completions": _chat, "/v1/responses": _responses, "/v1/messages": _anthropic}


@dataclass
class Server:
    url: str
    bodies: list[tuple[str, Any]]
    issued: Issued


Answer = Callable[[str, Mapping[str, str], Any], tuple[int, dict[str, Any]]]


@contextmanager
def serving(answer: Answer) -> Iterator[str]:
    """A JSON server on 127.0.0.1 (a free port), its URL: each POST's body is given, with its path and headers, to
    ``answer``, which returns the status and the JSON reply."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # http.server's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            status, payload = answer(self.path, self.headers, body)
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
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextmanager
def strict_server() -> Iterator[Server]:
    """The server on 127.0.0.1 (a free port), and what it received."""
    bodies: list[tuple[str, Any]] = []
    issued = Issued()

    def answer(path: str, headers: Mapping[str, str], body: Any) -> tuple[int, dict[str, Any]]:
        bodies.append((path, body))
        try:
            _PARAMS[path].validate_python(body, strict=False)
            _RULES[path](body, issued)
            _marks(path, body)
        except (Rejected, ValidationError, KeyError) as exc:
            return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": str(exc)}}
        return 200, REPLIES[path]

    with serving(answer) as url:
        yield Server(url, bodies, issued)
