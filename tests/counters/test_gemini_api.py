"""``gemini-api:<model>``: the real google-genai SDK against a local server speaking Gemini's countTokens endpoint
(tests/counters/count_server.py cites the documented shapes); counts cached in a real SQLite file."""

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
from ctxwin.counters._api.gemini import GeminiApiCounter
from ctxwin.counters._api.store import StoredCounts
from ctxwin.counters._errors import TokenizerDataError
from tests.counters.count_server import (
    CONVERSATION,
    IMAGE,
    PNG,
    REQUEST,
    TOOLS,
    TURN,
    CountServer,
    closed_port,
    count_server,
)

# Checked without importing the SDK (ctxwin imports it when a request is made): collecting stays cheap.
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("google") is None or importlib.util.find_spec("google.genai") is None,
    reason="the gemini extra is not installed: pip install -e '.[gemini]'",
)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountServer]:
    with count_server() as running:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", running.url)
        for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
            monkeypatch.delenv(key, raising=False)
        yield running


@pytest.fixture
def counter(server: CountServer, tmp_path: Path) -> GeminiApiCounter:
    return GeminiApiCounter("gemini-2.5-flash", cache=StoredCounts(tmp_path / "counts.sqlite"))


@pytest.mark.slow
def test_request_shape_and_count(server: CountServer, counter: GeminiApiCounter) -> None:
    total = counter.count_messages(CONVERSATION, tools=TOOLS)
    (path, body), = server.requests
    assert re.fullmatch(r"/v1(beta)?/models/gemini-2\.5-flash:countTokens", path)
    contents = body["contents"]
    assert [c["role"] for c in contents] == ["user", "user", "model", "user", "model"]
    # The system prompt and the tools' JSON open the conversation (the Developer API counts contents only).
    assert contents[0]["parts"] == [{"text": "You answer briefly."}, {"text": json.dumps(TOOLS)}]
    assert contents[1]["parts"][1]["inlineData"]["data"] == PNG.split(",")[1]  # the image itself, base64
    assert contents[2]["parts"] == [{"text": "let me look"},
                                    {"functionCall": {"name": "lookup", "args": {"q": "cat picture"}}}]
    assert contents[3]["parts"] == [{"functionResponse": {"name": "lookup", "response": {"result": "a small cat"}}}]
    # The server's count, as it is: the request, five turns (3 words of system prompt and the tools' JSON; 3 words
    # and the image; 3 and the call's 1 + 3; the result's 1 + 4; 4 words)
    assert total == REQUEST + 5 * TURN + (3 + len(json.dumps(TOOLS).split())) + (3 + IMAGE) + 7 + 5 + 4


@pytest.mark.slow
def test_one_request_per_new_message_set(server: CountServer, counter: GeminiApiCounter, tmp_path: Path) -> None:
    first = counter.count_messages(CONVERSATION)
    assert counter.count_messages(CONVERSATION) == first
    assert len(server.requests) == 1
    longer = [*CONVERSATION, {"role": "user", "content": "thanks a lot"}]
    assert counter.count_messages(longer) == first + TURN + 3
    again = GeminiApiCounter("gemini-2.5-flash", cache=StoredCounts(tmp_path / "counts.sqlite"))
    assert again.count_messages(longer) == first + TURN + 3
    assert len(server.requests) == 2


@pytest.mark.slow
def test_cache_across_processes(server: CountServer, tmp_path: Path) -> None:
    script = ("import json, sys; from ctxwin.counters import get_counter; "
              "print(get_counter('gemini-api:gemini-2.5-pro').count_messages(json.loads(sys.argv[1])))")
    env = {**os.environ, "CTXWIN_API_CACHE": str(tmp_path / "shared.sqlite"), "GOOGLE_GEMINI_BASE_URL": server.url}
    runs = [subprocess.run([sys.executable, "-c", script, json.dumps(CONVERSATION)], env=env, capture_output=True,
                           text=True, timeout=120, check=True).stdout for _ in range(2)]
    assert runs[0] == runs[1] and int(runs[0]) > 0
    assert len(server.requests) == 1


@pytest.mark.slow
def test_per_message_counts(server: CountServer, counter: GeminiApiCounter) -> None:
    assert counter.count_message({"role": "user", "content": "four words right here"}) == TURN + 4
    assert len(server.requests) == 2
    assert counter.count_message({"role": "assistant", "content": "two words"}) == TURN + 2
    assert counter.count_message({"role": "system", "content": "be brief"}) == TURN + 2  # a first user turn
    assert counter.count_message(CONVERSATION[3]) == TURN + 1 + 4  # named after its call: "tool" when unknown
    assert counter.count_text("five words in this text") == 5


@pytest.mark.slow
def test_trim_is_exact_and_cached(server: CountServer, counter: GeminiApiCounter) -> None:
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message number {i} " + "word " * i}
               for i in range(12)]
    budget = counter.count_messages(history[-4:])
    trimmed = trim_messages(history, max_tokens=budget, token_counter=counter, strategy="last", start_on="human")
    assert counter.count_messages(trimmed) <= budget and len(trimmed) >= 3
    sent = len(server.requests)
    trim_messages(history, max_tokens=budget, token_counter=counter, strategy="last", start_on="human")
    assert len(server.requests) == sent


@pytest.mark.slow
def test_timeout_without_retry(server: CountServer, tmp_path: Path) -> None:
    server.delay = 2.0
    slow = GeminiApiCounter("gemini-2.5-flash", cache=StoredCounts(tmp_path / "c.sqlite"), timeout=0.2)
    with pytest.raises(CountRequestError, match=r"^gemini-api:gemini-2\.5-flash: no answer within 0\.2 s"):
        slow.count_messages([{"role": "user", "content": "hi"}])
    assert len(server.requests) == 1


@pytest.mark.slow
def test_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", f"http://127.0.0.1:{closed_port()}")
    offline = GeminiApiCounter("gemini-2.5-flash", cache=StoredCounts(tmp_path / "c.sqlite"))
    with pytest.raises(CountRequestError, match=r"cannot reach the Gemini API .*exact Gemini counts need the network"):
        offline.count_messages([{"role": "user", "content": "hi"}])


@pytest.mark.slow
@pytest.mark.parametrize(("reply", "error", "match"), [
    ((200, b'{"tokens": 3}'), CountRequestError, r"malformed response: expected a token count .* got None"),
    ((200, b'{"totalTokens": -1}'), CountRequestError, "malformed response: expected a token count"),
    ((200, b"not json"), CountRequestError, "malformed response"),
    ((500, b'{"error": {"code": 500, "message": "boom", "status": "INTERNAL"}}'), CountRequestError, "HTTP 500"),
    ((400, b'{"error": {"code": 400, "message": "bad part", "status": "INVALID_ARGUMENT"}}'), ValueError,
     r"Google refused the request \(HTTP 400\): bad part"),
])
def test_bad_answers(server: CountServer, counter: GeminiApiCounter, reply: tuple[int, bytes],
                     error: type[Exception], match: str) -> None:
    server.reply = reply
    with pytest.raises(error, match=match):
        counter.count_messages([{"role": "user", "content": "hi"}])
    assert len(server.requests) == 1  # never retried
    server.reply = None
    assert counter.count_messages([{"role": "user", "content": "hi"}]) == REQUEST + TURN + 1  # nothing was cached


def test_needs_key_or_server(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(ValueError, match=r"needs an API key: set GEMINI_API_KEY \(or GOOGLE_API_KEY\)$"):
        get_counter("gemini-api:gemini-nokey")


def test_registered_and_opt_in() -> None:
    assert get_counter("gemini-2.5-flash").name == "approximate:safe,images=gemini"  # never chosen by itself


def test_unsendable_block(counter: GeminiApiCounter) -> None:
    with pytest.raises(ValueError, match=r"^messages\[0\]: a 'image_url' content block has no Gemini form"):
        counter.count_messages([{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]}])


def test_missing_sdk_names_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "google.genai", None)
    with pytest.raises(TokenizerDataError, match=r"pip install 'google-genai>=1.0'"):
        GeminiApiCounter("gemini-2.5-flash")
