"""A LiteLLM proxy that fits every chat request to gpt-4o's budget: ``ContextWindowHook`` in the proxy's YAML.

Offline: this script starts a fake OpenAI-compatible provider on 127.0.0.1, a real ``litellm`` proxy in front of it
(``callbacks: ctxwin_hook.hook`` in its config), and drives the proxy with the real ``openai`` client as an agent
loop would. The provider prints each request it receives. Run: ``python examples/litellm_agent.py`` (needs
``ctxwin[litellm]``; the proxy takes a few seconds to start).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agent_calls import BUDGET, MODEL, SYSTEM_PROMPT, TURNS, Calls, build_log
from openai import OpenAI

from ctxwin import convert_to_messages

calls = Calls()
TOOLS = [{"type": "function", "function": {
    "name": "read_build_log", "description": "Read the build log of a night.",
    "parameters": {"type": "object", "properties": {"night": {"type": "integer"}}, "required": ["night"]}}}]


class Provider(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        calls.show(convert_to_messages(body["messages"]), body.get("tools"), body["messages"])
        last = body["messages"][-1]
        message: dict[str, Any] = {"role": "assistant", "content": "Every step passed."}
        if last["role"] == "user":
            night = int(last["content"].split()[-1].rstrip("?"))
            message = {"role": "assistant", "content": None, "tool_calls": [{"id": f"call_{night}", "type": "function",
                       "function": {"name": "read_build_log", "arguments": json.dumps({"night": night})}}]}
        reply = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": MODEL,
                            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: Any) -> None:
        pass


def main() -> None:
    provider = ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    threading.Thread(target=provider.serve_forever, daemon=True).start()
    key = "sk-" + secrets.token_hex(32)
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "ctxwin_hook.py").write_text(
            "from ctxwin.integrations.litellm import ContextWindowHook\n"
            f"hook = ContextWindowHook(context_window={BUDGET}, reserve_output=0)\n")
        Path(folder, "config.yaml").write_text(
            f"model_list:\n  - model_name: {MODEL}\n    litellm_params:\n      model: openai/{MODEL}\n"
            f"      api_base: http://127.0.0.1:{provider.server_address[1]}/v1\n      api_key: fake\n"
            f"litellm_settings:\n  callbacks: ctxwin_hook.hook\ngeneral_settings:\n  master_key: {key}\n")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        litellm = str(Path(sys.executable).with_name("litellm"))
        environment = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                       "PYTHONPATH": os.pathsep.join([folder, *sys.path])}
        proxy = subprocess.Popen([litellm, "--config", f"{folder}/config.yaml", "--host", "127.0.0.1", "--port",
                                  str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment,
                                 start_new_session=True)
        try:
            for _ in range(240):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.5)
            client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=key)
            history: list[Any] = [{"role": "system", "content": SYSTEM_PROMPT}]
            for night in range(TURNS):
                print(f"turn {night}")
                history.append({"role": "user", "content": f"Did the build pass on night {night}?"})
                while True:
                    message = client.chat.completions.create(model=MODEL, messages=history, tools=TOOLS)
                    reply = message.choices[0].message
                    history.append(reply.model_dump(exclude_none=True))
                    if not reply.tool_calls:
                        break
                    for call in reply.tool_calls:
                        night_asked = json.loads(call.function.arguments)["night"]
                        history.append({"role": "tool", "tool_call_id": call.id, "content": build_log(night_asked)})
        finally:
            os.killpg(proxy.pid, signal.SIGTERM)
            proxy.wait(timeout=30)
            provider.shutdown()
    print(f"the client keeps all {len(history)} messages; each request the provider received was fitted to {BUDGET}")


if __name__ == "__main__":
    main()
