"""Dataset-scale fitting throughput: conversations per second for fit_many on 1, 2 and all cores, and through Ray.

The corpus is the bench corpus (``benchmarks/conversations.py``), kinds mixed: 800 distinct 40-message
conversations (agent sessions with long tool outputs, multilingual chats, code reviews), fitted for gpt-4o-mini
(o200k, the real tokenizer) into an 8,000-token window with 1,000 reserved for the reply, so nearly every one is
cut. Each round is a whole run: process-pool (or actor) start-up and tokenizer loading included, as a job would pay
them, and every round starts cold, in this process as in fresh workers (a repeated conversation, or a round after
another in the same process, would be answered from the count cache).

    pytest benchmarks/bench_batch.py --benchmark-only      # the Ray rows need the `ray` extra

``test_fit_many_engine`` fits the same corpus with DeepSeek-V3's counter on one worker, once with the engine ctxwin
chooses (kitoken where engines.json verified it, ``fast_engines``) and once with the reference (``tokenizers``),
side by side in one run; a fresh counter each round, so every round tokenizes cold.

The chunk-size rows fit many short conversations (6 messages), where the cost of moving work between processes
is largest relative to the work itself.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

sys.path.insert(0, str(Path(__file__).parent))

from conversations import conversations

from ctxwin.batch import fit_many
from ctxwin.counters import get_counter
from ctxwin.trim._count_cache import cache_for

FIT = {"model": "gpt-4o-mini", "context_window": 8000, "reserve_output": 1000}
COUNT, MESSAGES = 400, 40
SHORT_COUNT, SHORT_MESSAGES = 2000, 6
CORPUS = list(conversations("mixed", MESSAGES, 2 * COUNT, seed=1000))  # distinct: a repeat would hit the count cache
SHORT = list(conversations("mixed", SHORT_MESSAGES, SHORT_COUNT, seed=5000))
ROUNDS = 3


def fitted(items: list[Any], **options: Any) -> int:
    return sum(result.ok for result in fit_many(items, progress=False, **FIT, **options))


def cold(items: list[Any], **options: Any) -> Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]:
    """A round's setup: it empties this process's count caches, as a fresh worker process's are, so that an
    in-process round does not reuse the counts of the one before."""

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        for spec in ("tiktoken:o200k_base", "approximate"):
            cache = cache_for(get_counter(spec))
            if cache is not None:
                cache.clear()
        return (items,), options

    return setup


def report(benchmark: BenchmarkFixture, count: int) -> None:
    benchmark.extra_info["conversations"] = count
    benchmark.extra_info["conversations_per_second"] = round(count / benchmark.stats.stats.median, 1)


@pytest.mark.parametrize("counter", ["o200k", "approximate"])
@pytest.mark.parametrize("workers", [1, 2, None], ids=["workers=1", "workers=2", "workers=all"])
def test_fit_many(benchmark: BenchmarkFixture, workers: int | None, counter: str) -> None:
    """o200k: the model's real tokenizer, which already spreads long batches over a thread pool in one process;
    approximate: pure Python, one core per process, so it shows the scaling of the processes alone."""
    items = CORPUS
    benchmark.group = f"fit_many: {len(items)} conversations x {MESSAGES} messages, {counter}"
    options = {"workers": workers, **({"counter": "approximate"} if counter == "approximate" else {})}
    done = benchmark.pedantic(fitted, setup=cold(items, **options), rounds=ROUNDS)
    assert done == len(items)
    report(benchmark, len(items))


@pytest.mark.parametrize("engine", ["auto", "reference"])
def test_fit_many_engine(benchmark: BenchmarkFixture, engine: str) -> None:
    from ctxwin.counters._families.hf_counter import HFCounter

    items = CORPUS
    chosen = HFCounter("deepseek-v3", engine=engine).engine.engine
    benchmark.group = f"fit_many: {len(items)} conversations x {MESSAGES} messages, deepseek-v3, workers=1"

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (items,), {"workers": 1, "counter": HFCounter("deepseek-v3", engine=engine)}

    done = benchmark.pedantic(fitted, setup=setup, rounds=ROUNDS)
    assert done == len(items)
    report(benchmark, len(items))
    benchmark.extra_info["engine"] = chosen


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity (Linux)")
def test_fit_many_one_core(benchmark: BenchmarkFixture) -> None:
    """workers=1 pinned to one CPU: the o200k counter's thread pool has nowhere to go, so this is one core's rate."""
    items = CORPUS
    benchmark.group = f"fit_many: {len(items)} conversations x {MESSAGES} messages, o200k"
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(saved)})
    try:
        done = benchmark.pedantic(fitted, setup=cold(items, workers=1), rounds=ROUNDS)
    finally:
        os.sched_setaffinity(0, saved)
    assert done == len(items)
    report(benchmark, len(items))


@pytest.mark.parametrize("workers", [1, 2], ids=["workers=1", "workers=2"])
def test_fit_file(benchmark: BenchmarkFixture, workers: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    """``fit_file`` (``ctxwin fit FILE --workers N``): the workers read byte ranges of the file and write chunks."""
    from ctxwin.cli._fit_file import fit_file

    folder = tmp_path_factory.mktemp("fit_file")
    source = folder / "in.jsonl"
    source.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in CORPUS), encoding="utf-8")
    benchmark.group = f"fit_many: {len(CORPUS)} conversations x {MESSAGES} messages, o200k"

    def run() -> int:
        return fit_file(str(source), str(folder / "out.jsonl"), workers=workers, **FIT).fitted

    done = benchmark.pedantic(run, setup=cold(CORPUS), rounds=ROUNDS)
    assert done == len(CORPUS)
    report(benchmark, len(CORPUS))


@pytest.mark.parametrize("chunksize", [1, 4, 16, 64])
def test_chunksize(benchmark: BenchmarkFixture, chunksize: int) -> None:
    benchmark.group = f"fit_many chunk size: {SHORT_COUNT} conversations x {SHORT_MESSAGES} messages, workers=2"
    options = {"workers": 2, "chunksize": chunksize}
    done = benchmark.pedantic(fitted, args=(SHORT,), kwargs=options, rounds=ROUNDS, iterations=1)
    assert done == SHORT_COUNT
    report(benchmark, SHORT_COUNT)


def test_pool_start(benchmark: BenchmarkFixture) -> None:
    """What a pool costs before the first result: two worker processes, each importing ctxwin and loading o200k."""
    benchmark.group = "fit_many start-up"
    tiny = [[{"role": "user", "content": "hi"}]] * 2
    assert benchmark.pedantic(fitted, args=(tiny,), kwargs={"workers": 2, "chunksize": 1}, rounds=ROUNDS) == 2


@pytest.fixture(scope="module")
def ray_data() -> Iterator[Any]:
    pytest.importorskip("ray.data", reason="the Ray rows need the 'ray' extra")
    import ray
    import ray.data

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray.data
    ray.shutdown()


def test_ray(benchmark: BenchmarkFixture, ray_data: Any) -> None:
    """fit_dataset on a local Ray instance with 2 CPUs: two actors, rows as JSON strings (as read_text gives)."""
    from ctxwin.integrations.ray import fit_dataset

    benchmark.group = f"fit_many: {len(CORPUS)} conversations x {MESSAGES} messages, o200k"
    rows = [{"messages": json.dumps(c, ensure_ascii=False)} for c in CORPUS]

    def run() -> int:
        ds = fit_dataset(ray_data.from_items(rows), concurrency=2, batch_size=32, **FIT)
        return sum(1 for row in ds.iter_rows() if row["fit_error"] is None)

    assert benchmark.pedantic(run, rounds=ROUNDS, iterations=1) == len(rows)
    report(benchmark, len(rows))
