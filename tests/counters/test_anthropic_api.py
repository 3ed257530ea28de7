"""``anthropic-api:<model>``: the real anthropic SDK against a local server speaking Anthropic's count_tokens
endpoint (tests/counters/count_server.py cites the documented shapes); counts cached in a real SQLite file."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxwin import trim_messages
from ctxwin.counters import CountRequestError, get_counter
from ctxwin.counters._api.anthropic import AnthropicApiCounter
from ctxwin.counters._api.store import StoredCounts
from ctxwin.counters._errors import TokenizerDataError
from tests.counters.count_server import (
    CONVERSATION,
    IMAGE,
    REQUEST,
    SYSTEM,
    TOOL,
    TOOLS,
    TURN,
    CountServer,
    closed_port,
    count_server,
)

# Checked without importing the SDK (ctxwin imports it when a request is made): collecting stays cheap.
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("anthropic") is None,
    reason="the anthropic extra is not installed: pip install -e '.[anthropic]'",
)

@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountServer]:
    with count_server() as running:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", running.url)
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        yield running


@pytest.fixture
def counter(server: CountServer, tmp_path: Path) -> AnthropicApiCounter:
    return AnthropicApiCounter("claude-sonnet-4-5", cache=StoredCounts(tmp_path / "counts.sqlite"))


@pytest.mark.slow
def test_request_shape_and_count(server: CountServer, counter: AnthropicApiCounter) -> None:
    total = counter.count_messages(CONVERSATION, tools=TOOLS)
    (path, body), = server.requests
    assert path == "/v1/messages/count_tokens"
    assert body["model"] == "claude-sonnet-4-5"
    assert body["system"] == "You answer briefly."  # as output="anthropic" sends it
    assert body["tools"] == [{"name": "lookup", "description": "find a word",
                              "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}}]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user", "assistant"]
    assert body["messages"][0]["content"][1]["source"]["type"] == "base64"
    assert body["messages"][1]["content"][1] == {"type": "tool_use", "id": "call_1", "name": "lookup",
                                                  "input": {"q": "cat picture"}}
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_1", "content": "a small cat"}]
    # The server's count, as it is: the request, the system prompt (3 words), four turns (3 + 3 + lookup and its
    # input's 3 + 3 + 4 words), the image, and the tool (13 words of its definition)
    assert total == REQUEST + (SYSTEM + 3) + 4 * TURN + (3 + 3 + 1 + 3 + 3 + 4) + IMAGE + (TOOL + 13)


@pytest.mark.slow
def test_one_request_per_new_message_set(server: CountServer, counter: AnthropicApiCounter, tmp_path: Path) -> None:
    first = counter.count_messages(CONVERSATION)
    assert counter.count_messages(CONVERSATION) == first
    assert len(server.requests) == 1
    longer = [*CONVERSATION, {"role": "user", "content": "thanks a lot"}]
    assert counter.count_messages(longer) == first + TURN + 3
    assert len(server.requests) == 2
    # Another counter on the same cache file (as another process would open it) sends nothing.
    again = AnthropicApiCounter("claude-sonnet-4-5", cache=StoredCounts(tmp_path / "counts.sqlite"))
    assert again.count_messages(longer) == first + TURN + 3 and len(server.requests) == 2
    # Another model is another count.
    AnthropicApiCounter("claude-haiku-4-5", cache=StoredCounts(tmp_path / "counts.sqlite")).count_messages(longer)
    assert len(server.requests) == 3


@pytest.mark.slow
def test_per_message_counts(server: CountServer, counter: AnthropicApiCounter) -> None:
    user = {"role": "user", "content": "four words right here"}
    assert counter.count_message(user) == TURN + 4  # what it adds after a user and an assistant turn
    assert len(server.requests) == 2  # the minimal conversation, and it with the message
    assert counter.count_message({"role": "user", "content": "three more words"}) == TURN + 3
    assert len(server.requests) == 3  # the minimal conversation was counted already
    assert counter.count_message({"role": "system", "content": "be brief"}) == SYSTEM + 2
    assert counter.count_message(CONVERSATION[3]) == TURN + 3  # a tool result, after its call
    assert counter.count_message_batch([]) == []
    assert counter.count_text("") == 0 and counter.count_text("five words in this text") == 5


@pytest.mark.slow
def test_trim_is_exact_and_cached(server: CountServer, counter: AnthropicApiCounter) -> None:
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message number {i} " + "word " * i}
               for i in range(12)]
    budget = counter.count_messages(history[-4:])
    trimmed = trim_messages(history, max_tokens=budget, token_counter=counter, strategy="last", start_on="human")
    assert counter.count_messages(trimmed) <= budget and len(trimmed) >= 3
    sent = len(server.requests)
    assert trim_messages(history, max_tokens=budget, token_counter=counter, strategy="last",
                         start_on="human") == trimmed
    assert len(server.requests) == sent  # the same trim again: every count from the cache


def test_timeout_without_retry(server: CountServer, tmp_path: Path) -> None:
    server.delay = 2.0
    slow = AnthropicApiCounter("claude-sonnet-4-5", cache=StoredCounts(tmp_path / "c.sqlite"), timeout=0.2)
    with pytest.raises(CountRequestError, match=r"^anthropic-api:claude-sonnet-4-5: no answer from .* within 0\.2 s"):
        slow.count_messages([{"role": "user", "content": "hi"}])
    assert len(server.requests) == 1


def test_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{closed_port()}")
    offline = AnthropicApiCounter("claude-sonnet-4-5", cache=StoredCounts(tmp_path / "c.sqlite"))
    with pytest.raises(CountRequestError, match=r"cannot reach .*exact Claude counts need the network"):
        offline.count_messages([{"role": "user", "content": "hi"}])


@pytest.mark.slow
@pytest.mark.parametrize(("reply", "error", "match"), [
    ((200, b'{"tokens": 3}'), CountRequestError, r"malformed response: expected a token count .* got None"),
    ((200, b'{"input_tokens": -1}'), CountRequestError, "malformed response: expected a token count"),
    ((200, b'{"input_tokens": "12"}'), CountRequestError, "malformed response: expected a token count"),
    ((200, b"not json"), CountRequestError, "malformed response"),
    ((500, b'{"type": "error", "error": {"type": "api_error", "message": "boom"}}'), CountRequestError, "HTTP 500"),
    ((400, b'{"type": "error", "error": {"type": "invalid_request_error", "message": "bad roles"}}'), ValueError,
     "Anthropic refused the request: .*bad roles"),
])
def test_bad_answers(server: CountServer, counter: AnthropicApiCounter, reply: tuple[int, bytes],
                     error: type[Exception], match: str) -> None:
    server.reply = reply
    with pytest.raises(error, match=match):
        counter.count_messages([{"role": "user", "content": "hi"}])
    assert len(server.requests) == 1  # never retried
    server.reply = None
    assert counter.count_messages([{"role": "user", "content": "hi"}]) == REQUEST + TURN + 1  # nothing was cached


def test_needs_key_or_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    expected = "counter 'anthropic-api:claude-nokey': the anthropic-api counter needs an API key: set ANTHROPIC_API_KEY"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        get_counter("anthropic-api:claude-nokey")


def test_registered_and_opt_in() -> None:
    assert get_counter("claude-sonnet-4-5").name == "approximate:safe,images=anthropic"  # never chosen by itself
    with pytest.raises(ValueError, match="needs a model"):
        get_counter("anthropic-api")


def test_unsendable_block(counter: AnthropicApiCounter) -> None:
    with pytest.raises(ValueError, match=r"^messages\[0\]: an 'input_audio' block has no Anthropic form \(Anthropic "
                                         r"takes no audio"):
        counter.count_messages([{"role": "user", "content": [
            {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}]}])


def test_missing_sdk_names_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(TokenizerDataError, match=r"pip install 'anthropic>=0.40'"):
        AnthropicApiCounter("claude-sonnet-4-5")


@pytest.mark.slow
def test_cli_count_and_cache_across_processes(server: CountServer, tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"messages": CONVERSATION, "tools": TOOLS}))
    env = {**os.environ, "CTXWIN_API_CACHE": str(tmp_path / "cli.sqlite"), "ANTHROPIC_BASE_URL": server.url}
    command = [sys.executable, "-m", "ctxwin", "count", str(chat), "--counter", "anthropic-api:claude-sonnet-4-5",
               "--json"]
    report, = json.loads(subprocess.run(command, env=env, capture_output=True, text=True, timeout=120,
                                        check=True).stdout)["conversations"]
    assert report["counter"] == "anthropic-api:claude-sonnet-4-5"
    assert report["total"] == REQUEST + (SYSTEM + 3) + 4 * TURN + (3 + 3 + 1 + 3 + 3 + 4) + IMAGE + (TOOL + 13)
    assert [row["tokens"] for row in report["messages"]] == [SYSTEM + 3, TURN + 3 + IMAGE, TURN + 3 + 1 + 3,
                                                             TURN + 3, TURN + 4]
    sent = len(server.requests)
    subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=True)
    assert len(server.requests) == sent  # the same conversation again, in another process: all from the cache


def test_unusable_cache_still_counts(server: CountServer, tmp_path: Path) -> None:
    not_sqlite = tmp_path / "counts.sqlite"
    not_sqlite.write_text("this is not an SQLite database, and must stay as it is")
    counter = AnthropicApiCounter("claude-sonnet-4-5", cache=StoredCounts(not_sqlite))
    with pytest.warns(RuntimeWarning, match="token-count cache .* unusable"):
        assert counter.count_messages([{"role": "user", "content": "hi"}]) == REQUEST + TURN + 1
    assert not_sqlite.read_text() == "this is not an SQLite database, and must stay as it is"


@pytest.mark.parametrize("value", ["0", "-1", "soon", "inf", "nan"])
def test_bad_timeout_setting(server: CountServer, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CTXWIN_API_TIMEOUT", value)
    with pytest.raises(ValueError, match=f"^CTXWIN_API_TIMEOUT must be a positive number of seconds, got '{value}'$"):
        AnthropicApiCounter("claude-sonnet-4-5")


def test_timeout_setting(server: CountServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXWIN_API_TIMEOUT", "2.5")
    assert AnthropicApiCounter("claude-sonnet-4-5").timeout == 2.5
