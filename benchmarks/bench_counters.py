"""Throughput of the exact counters' batch counting: TiktokenCounter.count_texts (threaded) vs a plain loop.

Corpus: chat-sized pieces (300 characters) of the standard library's own source plus Python's reference
documentation (``pydoc_data.topics``), about 1.5 MB. Every variant is checked to give the same counts first.

``pytest benchmarks/bench_counters.py --benchmark-only`` times them with pytest-benchmark;
``python benchmarks/bench_counters.py`` prints MB/s (best of five) and the speed-up over the loop.
"""

from __future__ import annotations

import math
import sys
import sysconfig
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from pydoc_data.topics import topics

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from ctxwin.counters.base import BaseTokenCounter
from ctxwin.counters.hf_counter import HFCounter
from ctxwin.counters.tiktoken_counter import TiktokenCounter

PIECE = 300


def corpus(limit: int = 1_500_000) -> list[str]:
    files = sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))
    text = "".join(topics.values()) + "".join(f.read_text(encoding="utf-8", errors="replace") for f in files)
    text = text[:limit]
    return [text[i:i + PIECE] for i in range(0, len(text), PIECE)]


def plain_loop(counter: BaseTokenCounter) -> Callable[[Sequence[str]], list[int]]:
    return lambda texts: [counter.count_text(t) for t in texts]


def variants() -> dict[str, Callable[[Sequence[str]], list[int]]]:
    o200k = TiktokenCounter("o200k_base")
    deepseek = HFCounter("deepseek-v3")
    return {
        "tiktoken o200k loop": plain_loop(o200k),
        "tiktoken o200k count_texts": o200k.count_texts,
        "hf deepseek-v3 loop": plain_loop(deepseek),
        "hf deepseek-v3 count_texts": deepseek.count_texts,
    }


TEXTS = corpus()
VARIANTS = variants()


@pytest.mark.parametrize("name", list(VARIANTS))
def test_count_texts_throughput(benchmark: BenchmarkFixture, name: str) -> None:
    count = VARIANTS[name]
    reference = VARIANTS[name.replace("count_texts", "loop")](TEXTS)
    result = benchmark(count, TEXTS)
    assert result == reference
    benchmark.extra_info["MB"] = sum(len(t.encode()) for t in TEXTS) / 1e6


def main() -> None:
    n_bytes = sum(len(t.encode()) for t in TEXTS)
    print(f"{len(TEXTS)} texts, {n_bytes / 1e6:.2f} MB")
    speeds: dict[str, float] = {}
    for name, count in VARIANTS.items():
        assert count(TEXTS) == VARIANTS[name.replace("count_texts", "loop")](TEXTS), name
        best = math.inf
        for _ in range(5):
            start = time.perf_counter()
            count(TEXTS)
            best = min(best, time.perf_counter() - start)
        speeds[name] = n_bytes / best / 1e6
        loop = speeds.get(name.replace("count_texts", "loop"), speeds[name])
        print(f"{name:<30} {speeds[name]:7.2f} MB/s  x{speeds[name] / loop:.2f} vs loop")


if __name__ == "__main__":
    sys.exit(main())
