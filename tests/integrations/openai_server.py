"""A local stand-in for OpenAI's chat completions on 127.0.0.1, for the agent tests that run a framework's real
OpenAI client: it answers by a script (a user message gets a ``build_log`` call for the turn it names, anything
else a short answer) and keeps every request body it was sent, so a test can recount exactly what the framework
sent."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agent_checks import check_pairs

from ctxwin import get_counter
from ctxwin.messages import HumanMessage, convert_to_messages


class ChatServer(ThreadingHTTPServer):
    """The server: ``bodies`` holds the JSON bodies received, in order; ``url`` is the base URL clients take
    (``.../v1``)."""

    bodies: list[dict[str, Any]]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: ChatServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)
        number = len(self.server.bodies)
        last = body["messages"][-1]
        if last["role"] == "user":
            text = last["content"] if isinstance(last["content"], str) else last["content"][0]["text"]
            turn = int(text.split()[1].rstrip(":"))
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{number}", "type": "function",
                "function": {"name": "build_log", "arguments": json.dumps({"turn": turn})}}]}
            reason = "tool_calls"
        else:
            message, reason = {"role": "assistant", "content": f"The failure is E{number}."}, "stop"
        reply = json.dumps({
            "id": f"chatcmpl-{number}", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": reason, "logprobs": None}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def chat_server() -> Iterator[ChatServer]:
    server = ChatServer(("127.0.0.1", 0), _Handler)
    server.bodies = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def tool_names(body: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools") or []}


def sent_tokens(body: dict[str, Any], model: str) -> int:
    """A request body recounted on its own: its messages and tool definitions by ``model``'s counter."""
    return get_counter(model).count_messages(convert_to_messages(body["messages"]), tools=body.get("tools") or None)


def check_body(body: dict[str, Any], model: str, budget: int, newest_user: str) -> None:
    """One request as the framework sent it: within ``budget`` by an independent recount (its tool definitions
    included), the newest user message present, tool pairs whole."""
    assert sent_tokens(body, model) <= budget
    messages = convert_to_messages(body["messages"])
    assert any(isinstance(m, HumanMessage) and m.text == newest_user for m in messages), "the newest user message"
    check_pairs(messages)
