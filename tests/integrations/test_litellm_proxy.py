"""ContextWindowHook in a real LiteLLM proxy: the test starts ``litellm --config`` on 127.0.0.1 with the hook in
its YAML and a local fake provider behind it, and drives it with the real ``openai`` client as an agent loop would
(tool calls answered, results appended). What the fake provider receives is checked: every request fits by an
independent recount with the reply limit it asks for, tool pairs stay whole, the newest user message is sent, and
between cuts each request starts with the previous one byte for byte. Refusals are client errors the proxy logs
without a traceback."""

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
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("litellm") is None or importlib.util.find_spec("fastapi") is None:
    pytest.skip("LiteLLM's proxy is not installed (pip install -e '.[litellm]')", allow_module_level=True)

import isolation_support as isolation
import openai
from agent_checks import check_prefixes, check_request, tool_output
from openai import OpenAI
from openai_server import ChatServer, chat_server

from ctxwin.messages import convert_to_messages

MODEL = "gpt-4o"
WINDOW = 16_000
RESERVE = 1_000  # the hook's reserve_output: the requests ask for more (REPLY_LIMIT)
REPLY_LIMIT = 4_000
SYSTEM_PROMPT = "You are a build assistant. Read the logs with the tool before answering."
TURNS = 26
MASTER_KEY = "sk-" + secrets.token_hex(32)  # the proxy refuses to start without one
TOOLS = [{"type": "function", "function": {
    "name": "build_log", "description": "Read the build log of a turn.",
    "parameters": {"type": "object", "properties": {"turn": {"type": "integer"}}, "required": ["turn"]}}}]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def provider() -> Iterator[ChatServer]:
    with chat_server() as server:
        yield server


@pytest.fixture(scope="module")
def proxy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("proxy")


@pytest.fixture(scope="module")
def proxy(provider: ChatServer, proxy_dir: Path) -> Iterator[str]:
    """A LiteLLM proxy process on 127.0.0.1 with the hook from its YAML; its base URL. Its log is
    ``proxy_dir / "proxy.log"``."""
    executable = shutil.which("litellm", path=str(Path(sys.executable).parent)) or shutil.which("litellm")
    if executable is None:
        pytest.skip("the litellm command is not installed (pip install -e '.[litellm]')")
    tmp_path = proxy_dir
    (tmp_path / "ctxwin_hook.py").write_text(
        "from ctxwin.integrations.litellm import ContextWindowHook\n"
        f"hook = ContextWindowHook(context_window={WINDOW}, reserve_output={RESERVE})\n"
    )
    (tmp_path / "config.yaml").write_text(
        "model_list:\n"
        f"  - model_name: {MODEL}\n"
        "    litellm_params:\n"
        f"      model: openai/{MODEL}\n"
        f"      api_base: {provider.url}\n"
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
def test_every_request_the_provider_receives_fits(provider: ChatServer, proxy: str) -> None:
    """Each request asks for a reply of REPLY_LIMIT tokens, more than the hook's reserve_output: the provider is
    sent the messages and tools in what the window leaves after that reply."""
    provider.bodies.clear()
    client = OpenAI(base_url=f"{proxy}/v1", api_key=MASTER_KEY, max_retries=0, timeout=60)
    history: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    asked: list[str] = []
    for turn in range(TURNS):
        history.append({"role": "user", "content": question(turn)})
        while True:
            asked.append(question(turn))
            reply = client.chat.completions.create(
                model=MODEL, messages=history, tools=TOOLS, max_tokens=REPLY_LIMIT  # type: ignore[arg-type]
            )
            message = reply.choices[0].message
            history.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                break
            for call in message.tool_calls:
                turn_asked = json.loads(call.function.arguments)["turn"]
                history.append({"role": "tool", "tool_call_id": call.id, "content": tool_output(turn_asked)})
    bodies = provider.bodies
    assert len(bodies) >= 50 and len(bodies) == len(asked)
    sizes = []
    for body, newest in zip(bodies, asked, strict=True):
        limit = body.get("max_tokens") or body.get("max_completion_tokens")
        assert limit == REPLY_LIMIT, "the body's reply limit is forwarded as the client asked"
        check_request(convert_to_messages(body["messages"]), body.get("tools") or [], WINDOW - limit, newest, MODEL)
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


def refused(proxy: str, proxy_dir: Path, provider: ChatServer, **body: Any) -> openai.APIStatusError:
    """The error the proxy answers ``body`` with, checked to be one request (no retry), never forwarded, and
    logged without a traceback."""
    provider.bodies.clear()
    log = proxy_dir / "proxy.log"
    logged = len(log.read_text())
    client = OpenAI(base_url=f"{proxy}/v1", api_key=MASTER_KEY, timeout=60)  # the SDK's default retries
    with pytest.raises(openai.APIStatusError) as error:
        client.chat.completions.create(model=MODEL, **body)
    time.sleep(0.5)  # the proxy writes its log line after answering
    added = log.read_text()[logged:]
    assert "Traceback" not in added, added
    assert added.count("Exception occured") == 1, "one request: a client error is not retried"
    assert provider.bodies == []
    return error.value


@pytest.mark.slow
def test_a_request_over_the_window_is_a_client_error(
    provider: ChatServer, proxy: str, proxy_dir: Path
) -> None:
    error = refused(proxy, proxy_dir, provider, messages=[
        {"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": tool_output(9) * 4}])
    assert error.status_code in (400, 413)
    assert isinstance(error.body, dict) and error.body.get("param") == "messages"
    assert f"context window {WINDOW}" in error.message, "the plan's figures"


@pytest.mark.slow
@pytest.mark.parametrize(("body", "named"), [
    ({"max_tokens": WINDOW}, "max_tokens"),
    ({"max_completion_tokens": -5}, "max_completion_tokens"),
    ({"messages": [{"role": "user", "content": "hi"}, {"role": "wizard", "content": "hi"}]}, "messages[1]"),
    ({"messages": "hello"}, "messages"),
    ({"messages": {"role": "user", "content": "hi"}}, "messages"),
])
def test_a_body_ctxwin_cannot_read_is_a_bad_request(
    provider: ChatServer, proxy: str, proxy_dir: Path, body: dict[str, Any], named: str
) -> None:
    error = refused(proxy, proxy_dir, provider, **{"messages": [{"role": "user", "content": question(1)}], **body})
    assert error.status_code == 400
    assert named in error.message
