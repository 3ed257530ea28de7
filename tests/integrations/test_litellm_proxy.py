"""ContextWindowHook in a real LiteLLM proxy: the test starts ``litellm --config`` on 127.0.0.1 with the hook in
its YAML and a local fake provider behind it, and drives it with the real ``openai`` client as an agent loop would
(tool calls answered, results appended). What the fake provider receives is checked: every request fits by an
independent recount, tool pairs stay whole, the newest user message is sent, and between cuts each request starts
with the previous one byte for byte."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("litellm") is None or importlib.util.find_spec("fastapi") is None:
    pytest.skip("LiteLLM's proxy is not installed (pip install -e '.[litellm]')", allow_module_level=True)

import isolation_support as isolation
from agent_checks import check_prefixes, check_request, tool_output
from openai import OpenAI

from ctxwin.messages import convert_to_messages

MODEL = "gpt-4o"
BUDGET = 20_000
SYSTEM_PROMPT = "You are a build assistant. Read the logs with the tool before answering."
TURNS = 26
MASTER_KEY = "sk-" + secrets.token_hex(32)  # the proxy refuses to start without one
TOOLS = [{"type": "function", "function": {
    "name": "build_log", "description": "Read the build log of a turn.",
    "parameters": {"type": "object", "properties": {"turn": {"type": "integer"}}, "required": ["turn"]}}}]


class FakeProvider(BaseHTTPRequestHandler):
    """OpenAI's chat completions, scripted: a user message gets a tool call, a tool result gets an answer. Every
    body received is kept on the server (``server.bodies``)."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)  # type: ignore[attr-defined]
        last = body["messages"][-1]
        number = len(self.server.bodies)  # type: ignore[attr-defined]
        if last["role"] == "user":
            turn = int(last["content"].split()[1].rstrip(":"))
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{turn}", "type": "function",
                "function": {"name": "build_log", "arguments": json.dumps({"turn": turn})}}]}
            reason = "tool_calls"
        else:
            message, reason = {"role": "assistant", "content": f"The failure is E{number}."}, "stop"
        reply = json.dumps({
            "id": f"chatcmpl-{number}", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": reason}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: Any) -> None:
        pass


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def provider() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeProvider)
    server.bodies = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy(provider: ThreadingHTTPServer, tmp_path: Path) -> Iterator[str]:
    """A LiteLLM proxy process on 127.0.0.1 with the hook from its YAML; its base URL."""
    executable = shutil.which("litellm", path=str(Path(sys.executable).parent)) or shutil.which("litellm")
    if executable is None:
        pytest.skip("the litellm command is not installed (pip install -e '.[litellm]')")
    (tmp_path / "ctxwin_hook.py").write_text(
        "from ctxwin.integrations.litellm import ContextWindowHook\n"
        f"hook = ContextWindowHook(context_window={BUDGET}, reserve_output=0)\n"
    )
    (tmp_path / "config.yaml").write_text(
        "model_list:\n"
        f"  - model_name: {MODEL}\n"
        "    litellm_params:\n"
        f"      model: openai/{MODEL}\n"
        f"      api_base: http://127.0.0.1:{provider.server_address[1]}/v1\n"
        "      api_key: fake\n"
        "litellm_settings:\n"
        "  callbacks: ctxwin_hook.hook\n"
        "  telemetry: false\n"
        "general_settings:\n"
        f"  master_key: {MASTER_KEY}\n"
    )
    port = free_port()
    environment = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_PROXY": "127.0.0.1,localhost",
                   "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    process = subprocess.Popen(
        [executable, "--config", str(tmp_path / "config.yaml"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "proxy.log", "wb"), env=environment,  # noqa: SIM115
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"the proxy exited: {(tmp_path / 'proxy.log').read_text()[-3000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("the proxy did not listen within 120 s")
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def question(turn: int) -> str:
    return f"Turn {turn}: what failed in shard-{turn} this time?"


@pytest.mark.slow
def test_every_request_the_provider_receives_fits(provider: ThreadingHTTPServer, proxy: str) -> None:
    client = OpenAI(base_url=f"{proxy}/v1", api_key=MASTER_KEY, max_retries=0, timeout=60)
    history: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    asked: list[str] = []
    for turn in range(TURNS):
        history.append({"role": "user", "content": question(turn)})
        while True:
            asked.append(question(turn))
            reply = client.chat.completions.create(model=MODEL, messages=history, tools=TOOLS)  # type: ignore[arg-type]
            message = reply.choices[0].message
            history.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                break
            for call in message.tool_calls:
                turn_asked = json.loads(call.function.arguments)["turn"]
                history.append({"role": "tool", "tool_call_id": call.id, "content": tool_output(turn_asked)})
    bodies: list[dict[str, Any]] = provider.bodies  # type: ignore[attr-defined]
    assert len(bodies) >= 50 and len(bodies) == len(asked)
    sizes = []
    for body, newest in zip(bodies, asked, strict=True):
        check_request(convert_to_messages(body["messages"]), body.get("tools") or [], BUDGET, newest, MODEL)
        sizes.append(len(body["messages"]))
    assert max(sizes) < len(history), "the history outgrew the budget and was fitted"
    # between cuts each request starts with the previous one; a cut is where the prefix changes
    requests = [body["messages"] for body in bodies]
    cuts = [i > 0 and requests[i][: len(requests[i - 1])] != requests[i - 1] for i in range(len(requests))]
    assert check_prefixes(requests, cuts) <= len(requests) // 3


@pytest.mark.slow
def test_clients_opening_alike_without_session_ids_keep_their_own_sessions() -> None:
    """Several clients of one proxy hook, each in a thread of its own, with one system prompt and one first message
    and no ``litellm_session_id``: each conversation keeps its own session (at most one cut in three calls) and no
    request holds another conversation's messages."""
    from ctxwin.integrations.litellm import ContextWindowHook

    hook = ContextWindowHook(MODEL, context_window=isolation.WINDOW, reserve_output=0)
    checked = isolation.Checked()
    tools = [{"type": "function", "function": {"name": "read_log", "description": "Read a user's account log.",
                                               "parameters": {"type": "object", "properties": {
                                                   "user": {"type": "integer"}, "turn": {"type": "integer"}}}}}]

    def client(user: int) -> None:
        messages: list[dict[str, Any]] = [{"role": "system", "content": isolation.SYSTEM}]
        for text in isolation.messages(user)[:-1]:  # a proxy runs no tools: no recall question
            messages.append({"role": "user", "content": text})
            while True:
                body = {"model": MODEL, "messages": list(messages), "tools": tools}
                fitted = asyncio.run(hook.async_pre_call_hook(None, None, body, "acompletion"))
                step = checked.respond(convert_to_messages(fitted["messages"]), fitted["tools"])
                if not step.tool:
                    messages.append({"role": "assistant", "content": step.text})
                    break
                call = {"id": step.id, "type": "function",
                        "function": {"name": step.tool, "arguments": json.dumps(step.args)}}
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
                messages.append({"role": "tool", "tool_call_id": step.id, "content": isolation.log(**step.args)})

    with ThreadPoolExecutor(isolation.USERS) as pool:
        list(pool.map(client, range(isolation.USERS)))
    checked.done(recalled=False)
