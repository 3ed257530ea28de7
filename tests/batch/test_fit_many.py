"""fit_many against fit, item by item: same messages, same summary, same errors, in input order, on real processes."""

from __future__ import annotations

import io
import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batch_support import TOOLS, ProcessTag, conversations, expected
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.batch import FitResult, fit_many
from ctxwin.batch._chunks import IN_FLIGHT_PER_WORKER, chunked
from ctxwin.batch._progress import Progress
from ctxwin.planner import Plan
from ctxwin.strategies._salience import extractive_summarizer

# A budget small enough that most generated conversations need truncating or trimming (real o200k counts).
FIT = {"model": "gpt-4o", "context_window": 2500, "reserve_output": 500}


def assert_same(
    results: list[FitResult], items: list[Any], want: list[Plan | str] | None = None, **fit_kwargs: Any
) -> None:
    """Each result is what ``fit`` gives for its item (``want``: those outcomes, when already computed)."""
    want = want if want is not None else [expected(item, **fit_kwargs) for item in items]
    assert [r.index for r in results] == list(range(len(items)))
    for result, outcome in zip(results, want, strict=True):
        if isinstance(outcome, Plan):
            assert result.ok, (result.index, result.error)
            assert result.messages == outcome.messages, result.index
            assert result.summary == outcome.summary(), result.index
            assert result.system == outcome.system, result.index
        else:
            assert not result.ok and result.messages is None and result.summary is None
            assert result.error == outcome, result.index


ITEMS = conversations(300, seed=1, bad_every=23)


@pytest.fixture(scope="module")
def reference() -> list[Plan | str]:
    return [expected(item, **FIT) for item in ITEMS]


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_results_equal_fit_on_each_conversation(workers: int, reference: list[Plan | str]) -> None:
    results = list(fit_many(ITEMS, workers=workers, chunksize=7, **FIT))
    assert_same(results, ITEMS, reference)
    changed = [r for r in results if r.summary is not None and r.summary["tokens_after"] < r.summary["tokens_before"]]
    failed = [r for r in results if not r.ok]
    assert len(changed) > 50 and len(failed) == 300 // 23  # the budget bites, and every bad row is reported


@pytest.mark.slow
def test_summaries_and_openai_output_equal_fit_in_a_pool() -> None:
    options = {
        "counter": "approximate",
        "context_window": 1800,
        "reserve_output": 300,
        "summarizer": extractive_summarizer,
        "keep_last": 4,
        "output": "openai",
        "tools": TOOLS,
    }
    items = conversations(120, seed=2)
    results = list(fit_many(items, workers=2, **options))
    assert_same(results, items, **options)
    assert any(r.summary is not None and r.summary["summarized"] for r in results)


def test_strict_plans_that_cannot_fit_are_errors_with_the_figures() -> None:
    too_big = [{"role": "system", "content": "Rules: " + "obey " * 1000}, {"role": "user", "content": "hi"}]
    items = [*conversations(30, seed=3), too_big, *conversations(10, seed=33)]
    options = {**FIT, "context_window": 700, "reserve_output": 100, "strict": True}
    results = list(fit_many(items, workers=2, **options))
    assert_same(results, items, **options)
    assert any(r.error and "budget allows" in r.error for r in results)


@pytest.mark.slow
def test_each_worker_is_its_own_process_with_one_planner() -> None:
    items = conversations(80, seed=4)
    results = list(fit_many(items, workers=2, chunksize=4, strategies=[ProcessTag(), "trim"], **FIT))
    warnings = [w for r in results if r.summary for w in r.summary["warnings"]]
    tags = [w.split(": ")[1] for w in warnings if w.startswith("process_tag")]
    over = [r for r in results if r.summary is not None and r.summary["tokens_before"] > r.summary["budget"]]
    assert len(tags) == len(over) > 10  # the tag, first in the chain, runs for every conversation over budget
    instances: dict[str, set[str]] = {}
    for tag in tags:
        pid, instance = tag.split(":")
        instances.setdefault(pid, set()).add(instance)
    assert str(os.getpid()) not in instances and 1 <= len(instances) <= 2
    assert all(len(ids) == 1 for ids in instances.values())  # one planner per worker, reused for every item


@pytest.mark.slow
def test_the_input_is_read_only_a_few_chunks_ahead_of_the_results() -> None:
    pulled = 0

    def endless() -> Iterator[list[dict[str, str]]]:
        nonlocal pulled
        for n in itertools.count():
            pulled += 1
            yield [{"role": "user", "content": f"question {n}"}]

    results = fit_many(endless(), workers=2, chunksize=5, **FIT)
    first = list(itertools.islice(results, 30))
    results.close()
    assert [r.index for r in first] == list(range(30)) and all(r.ok for r in first)
    assert pulled <= 30 + (IN_FLIGHT_PER_WORKER * 2 + 1) * 5


@pytest.mark.slow
def test_conversations_that_cannot_be_pickled_are_still_fitted() -> None:
    base = [c for c in conversations(12, seed=5) if isinstance(c, list)]
    items: list[Any] = [(m for m in c) if i % 2 else c for i, c in enumerate(base)]  # generators do not pickle
    results = list(fit_many(items, workers=2, chunksize=1, **FIT))
    assert_same(results, base, **FIT)


def test_a_request_carries_its_own_tools() -> None:
    messages = [{"role": "user", "content": "find the build log"}]
    requests = [{"messages": messages, "tools": TOOLS}, {"messages": messages}, {"messages": messages, "tools": 7}]
    results = list(fit_many(requests, workers=1, **FIT))
    assert results[0].summary is not None and results[1].summary is not None
    assert results[0].summary["tokens_before"] > results[1].summary["tokens_before"]  # the tools are counted
    assert results[2].error is not None and "'tools' must be a list" in results[2].error


def test_items_can_be_decoded_in_the_workers(tmp_path: Path) -> None:
    items = [c for c in conversations(40, seed=8) if isinstance(c, list)]
    path = tmp_path / "chats.jsonl"
    path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in items) + "{broken\n", encoding="utf-8")
    with open(path, encoding="utf-8") as lines:
        results = list(fit_many(lines, workers=2, decode=json.loads, **FIT))
    assert_same(results[:-1], [json.loads(json.dumps(c)) for c in items], **FIT)
    assert results[-1].index == len(items) and results[-1].error is not None
    assert results[-1].error.startswith("Expecting property name")
    with pytest.raises(TypeError, match="decode="):
        fit_many([], workers=2, decode=lambda text: json.loads(text), **FIT)


class CountingLines(io.TextIOWrapper):
    """A text file that counts the lines this process reads from it."""

    read_here = 0

    def __next__(self) -> str:
        self.read_here += 1
        return super().__next__()


class CountingBytes(io.BufferedReader):
    """A binary file that counts the lines this process reads from it."""

    read_here = 0

    def __next__(self) -> bytes:
        self.read_here += 1
        return super().__next__()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["text", "binary"])
def test_the_workers_read_split_and_decode_an_open_files_lines(tmp_path: Path, mode: str) -> None:
    """Issue 44: over a file's lines with ``decode``, the calling process read, decoded and pickled every line (5.4%
    of the loop's CPU, against 0.5% for decoded conversations); the workers read the bytes, split and decode them
    now, and the results are those of iterating the file."""
    items = [c for c in conversations(60, seed=8) if isinstance(c, list)]
    padding = " " * 100_000  # JSON allows whitespace after a value: big lines, cheap to fit
    lines = [json.dumps(c, ensure_ascii=False) + padding + "\n" for c in items]
    lines[7] = "{broken\n"
    lines[11] = "\n"
    path = tmp_path / "chats.jsonl"
    path.write_bytes("".join(lines).encode() + b'"not valid UTF-8: \xff"\n' + b'[{"role": "user", "content": "last"}]')
    assert path.stat().st_size > 4 << 20  # a pool's worth: two blocks per worker
    raw = io.FileIO(path)
    source: CountingLines | CountingBytes = (
        CountingLines(io.BufferedReader(raw), encoding="utf-8") if mode == "text" else CountingBytes(raw)
    )
    with source:
        results = list(fit_many(source, workers=2, decode=json.loads, **FIT))
    assert source.read_here == 0
    with open(path, "rb") as handle:
        reference = list(fit_many(handle, workers=1, decode=json.loads, **FIT))  # the file iterated here
    assert [r.index for r in results] == list(range(len(lines) + 2))
    for got, want in zip(results, reference, strict=True):
        if got.index != len(lines):  # the line that is not UTF-8: below
            assert (got.messages, got.summary, got.error) == (want.messages, want.summary, want.error)
    assert results[7].error is not None and results[11].error is not None
    bad = results[len(lines)].error
    if mode == "text":  # iterating the file here would have raised UnicodeDecodeError and ended the run
        assert bad is not None and "not valid utf-8" in bad
    else:
        assert bad is not None and bad == reference[len(lines)].error
    assert results[-1].ok and results[-1].messages is not None and results[-1].messages[-1].content == "last"


def test_a_lambda_summarizer_is_refused_before_any_worker_starts() -> None:
    items = conversations(3, seed=6)
    with pytest.raises(TypeError, match=r"summarizer= .*cannot be pickled.*module level.*workers=1"):
        fit_many(items, workers=2, summarizer=lambda messages: "summary", keep_last=2, **FIT)
    in_process = list(fit_many(items, workers=1, summarizer=lambda messages: "summary", keep_last=2, **FIT))
    assert all(r.ok for r in in_process)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"workers": 0}, ValueError, "workers must be a positive int"),
        ({"workers": True}, ValueError, "workers must be a positive int"),
        ({"chunksize": 0}, ValueError, "chunksize must be a positive int"),
        ({"model": "gpt-99-ultra"}, ValueError, "gpt-99-ultra"),
        ({"strategies": ["shred"]}, ValueError, "shred"),
        ({"temperature": 0.2}, TypeError, "temperature"),
    ],
)
def test_bad_arguments_raise_at_the_call(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        fit_many([], **{**FIT, **kwargs})


@pytest.mark.parametrize("conversations_arg", ["hello", {"role": "user", "content": "hi"}, 42])
def test_conversations_must_be_an_iterable_of_conversations(conversations_arg: Any) -> None:
    with pytest.raises(TypeError, match="iterable of conversations"):
        fit_many(conversations_arg, **FIT)


@pytest.mark.slow
def test_a_given_progress_bar_is_stepped_once_per_item() -> None:
    stream = io.StringIO()
    bar = Progress("fitted", stream=stream)
    results = list(fit_many(conversations(12, seed=7, bad_every=5), workers=1, progress=bar, **FIT))
    assert bar.done == len(results) == 12
    assert stream.getvalue() == ""  # not a terminal: no bar drawn, and fit_many prints nothing itself


@pytest.mark.slow
@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(), max_size=40), st.integers(min_value=1, max_value=9))
def test_chunks_cover_the_input_in_order(values: list[int], size: int) -> None:
    items = list(enumerate(values))
    chunks = list(chunked(items, size))
    assert [item for chunk in chunks for item in chunk] == items
    assert all(1 <= len(chunk) <= size for chunk in chunks)


def test_with_a_pool_the_calling_process_builds_no_planner() -> None:
    import gc

    from ctxwin.planner import Planner

    def planners() -> int:
        return sum(isinstance(o, Planner) for o in gc.get_objects())

    # What earlier tests left is set aside (not read, and not collected while this one counts).
    gc.freeze()
    try:
        before = planners()
        results = fit_many(ITEMS[:40], workers=2, chunksize=4, **FIT)  # long enough for a pool
        first = list(itertools.islice(results, 20))
        assert planners() == before and len(first) == 20  # the workers plan; this process only moves items
        results.close()
    finally:
        gc.unfreeze()


def test_with_a_pool_bad_arguments_still_raise_at_the_call() -> None:
    with pytest.raises(ValueError, match="gpt-99-ultra"):  # reported by the first worker, raised here
        fit_many(ITEMS, workers=2, **{**FIT, "model": "gpt-99-ultra"})
