"""parse_partial_json: LangChain's results, in linear time."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.utils.json import parse_partial_json as langchain_parse_partial_json

from ctxwin.messages import AIMessageChunk, parse_partial_json, tool_call_chunk

ROOT = Path(__file__).resolve().parents[2]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@st.composite
def partial_documents(draw: st.DrawFn) -> str:
    """A JSON document cut anywhere, sometimes with one character inserted (mismatched brackets, dangling
    escapes, stray quotes and separators)."""
    text = json.dumps(draw(json_values), indent=draw(st.sampled_from([None, 1])), ensure_ascii=draw(st.booleans()))
    text = text[: draw(st.integers(0, len(text)))]
    if text and draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(list('[]{}",:\\ x1e-\n\t'))) + text[at:]
    return text


def outcome(parse: Any, text: str, strict: bool) -> tuple[str, Any]:
    try:
        return "value", json.dumps(parse(text, strict=strict), sort_keys=True)  # NaN-safe comparison
    except json.JSONDecodeError:
        return "no JSON", None


@settings(max_examples=200, deadline=None)
@given(partial_documents(), st.booleans())
def test_same_result_as_langchain(text: str, strict: bool) -> None:
    assert outcome(parse_partial_json, text, strict) == outcome(langchain_parse_partial_json, text, strict)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": "b', {"a": "b"}),
        ('[{"a": 1}, {"b": ', [{"a": 1}, {}]),
        ('{"a": 1]', None),
        ('{"a": [1, 2.5e', {"a": [1, 2.5]}),
        ('{"a": tru', {}),
        ('{"a": "x\\', {"a": "x"}),  # a dangling backslash is dropped
        ('{"a": "line\nbreak', {"a": "line\nbreak"}),  # a raw newline inside a string is escaped
        ('{"a": "\\u12', {}),  # half an escape cannot be closed: the whole string goes
        ("[1] [", [1]),
        ('{"k": 1} x', {"k": 1}),
    ],
)
def test_repairs(text: str, expected: Any) -> None:
    assert parse_partial_json(text) == expected == langchain_parse_partial_json(text)


@pytest.mark.parametrize("text", ["", "x", "\ufeff{}", "   "])
def test_no_json_at_all_raises_json_error(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        parse_partial_json(text)


# Inputs that made a quadratic parse take hours, each with the smaller size n it is timed at (its time there is tens
# of milliseconds or more, so the n -> 4n ratio is the algorithm's, not the CPU cache's) and what it parses to.
MEGABYTE_INPUTS: dict[str, tuple[int, Callable[[int], str], Callable[[int], Any]]] = {
    "nothing parses": (2_000_000, lambda n: "{" + "x" * n, lambda n: {}),  # LangChain retries once per character
    "only a prefix far back parses": (
        60_000, lambda n: '{"a": [' + "1, " * (n // 3) + '"b": ', lambda n: {"a": [1] * (n // 3) + ["b"]}
    ),
    "the longest candidate ends inside a broken escape": (
        250_000, lambda n: '{"k": "' + "y" * n + "\\u1", lambda n: {}
    ),
}
LINEAR_RATIO_LIMIT = 10  # linear time gives about 4 (up to 6 here, memory traffic), quadratic 16
TIME_LIMIT_S = 120  # the whole measurement, interpreter start included; a quadratic parse would take hours


def time_parses(name: str) -> dict[str, Any]:
    """Run in a child process by the test below: the best of three parses of the input at n and at 4n
    (alternating, so a busy machine slows both alike), and whether each gave the expected value."""
    n, make, expected = MEGABYTE_INPUTS[name]
    texts = {size: make(size) for size in (n, 4 * n)}
    best = dict.fromkeys(texts, math.inf)
    correct = dict.fromkeys(texts, True)
    for _ in range(3):
        for size, text in texts.items():
            began = time.perf_counter()
            result = parse_partial_json(text)
            best[size] = min(best[size], time.perf_counter() - began)
            correct[size] = correct[size] and result == expected(size)
    return {"seconds": [best[n], best[4 * n]], "correct": all(correct.values())}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MEGABYTE_INPUTS))
def test_linear_time_on_megabytes(name: str) -> None:
    """The fuzzing finding: 48 KB of streamed arguments took 39 s (one json.loads per dropped character). These
    inputs reach 240 KB to 8 MB: four times the input must take about four times as long, and all of it well within
    ``TIME_LIMIT_S`` (the child process is killed then, and the test fails instead of hanging the suite)."""
    code = f"from tests.messages.test_partial_json import json, time_parses; print(json.dumps(time_parses({name!r})))"
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=TIME_LIMIT_S, check=True
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name}: parsing took over {TIME_LIMIT_S} s (a quadratic parse?)")
    measured = json.loads(done.stdout.splitlines()[-1])
    small, large = measured["seconds"]
    assert measured["correct"]
    assert large / small < LINEAR_RATIO_LIMIT, f"{name}: {small:.3f} s at n, {large:.3f} s at 4n"


def test_streamed_tool_call_chunks_of_a_megabyte() -> None:
    args = '{"path": "a.txt", "lines": [' + "1, " * 200_000 + '"x'
    chunk = AIMessageChunk("", tool_call_chunks=[tool_call_chunk(name="read", args=args, id="c", index=0)])
    assert chunk.tool_calls[0]["args"] == {"path": "a.txt", "lines": [1] * 200_000 + ["x"]}
