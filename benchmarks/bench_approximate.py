"""Accuracy and throughput of the approximate counter against the real tokenizer, on the held-out corpus.

``python benchmarks/bench_approximate.py [--split heldout|fit] [--target o200k_base|cl100k_base]`` prints, per
text kind: median and 95th-percentile absolute error of ``approximate`` and of chars/4, safe mode's worst
under-count and median over-count, and throughput (MB/s of UTF-8) of tiktoken, the estimator, safe mode and
chars/4; then tiktoken against the estimator on all documents, ``RUNS`` runs, with the ratio of each run, and
the same ratio on chat-message sizes (``MESSAGE_SIZES``: slices of the held-out text). The counters run through
the C accelerator where it is built; each is also timed in Python (``py_count``: a machine without a C compiler).
Times are the thread's CPU time, not wall time: on a shared machine wall time charges whichever side is running
when another process takes the core, which favours the shorter runs (the estimator's) by 30-60%.
Under pytest (``pytest benchmarks/bench_approximate.py --benchmark-only``) the same counters are timed with
pytest-benchmark in two rows per counter, named by what the user does: "count one chat message" (every message
of ``chat_messages``: 100 B to 2 KB slices of the held-out text, one call each) and "count a document" (every
held-out document). Accuracy measured by leaving whole sources out is ``fit_approximate.py``'s (docs/approximate.md).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import pytest
from corpus import KINDS, TARGET_KINDS, build, missing_packages, reference_encoding

from ctxwin.counters._approximate.counter import ApproximateCounter

RUNS = 5
# Chat-message sizes (UTF-8 bytes) at which the per-call cost is measured, and the kinds sliced to them.
MESSAGE_SIZES = (50, 300, 1000, 5000)
MESSAGE_KINDS = ("english", "code", "json", "chinese", "russian", "japanese")


def chars_over_4(text: str) -> int:
    return -(-len(text) // 4)


def _throughput(count: Callable[[str], Any], texts: list[str], n_bytes: int, repeat: int = 1) -> float:
    """MB/s over ``texts`` (each counted ``repeat`` times), best of three runs of the thread's CPU time."""
    best = math.inf
    for _ in range(3):
        start = time.thread_time()
        for _ in range(repeat):
            for text in texts:
                count(text)
        best = min(best, time.thread_time() - start)
    return n_bytes * repeat / best / 1e6


def _slices(text: str, size: int, limit: int = 40) -> list[str]:
    """Up to ``limit`` pieces of about ``size`` UTF-8 bytes, cut from ``text`` at character boundaries."""
    raw = text.encode("utf-8")
    return [raw[i : i + size].decode("utf-8", errors="ignore") for i in range(0, len(raw) - size, 2 * size)][:limit]


def message_size_ratios(docs: tuple[Any, ...], exact: Callable[[str], Any], estimate: Callable[[str], Any]) -> None:
    """Print estimator/tiktoken throughput ratios on chat-message-sized slices of each kind in ``MESSAGE_KINDS``."""
    print("estimator / tiktoken at message sizes (same slices, CPU time):")
    for size in MESSAGE_SIZES:
        cells = []
        for kind in MESSAGE_KINDS:
            texts = _slices("\n".join(d.text for d in docs if d.kind == kind), size)
            if not texts:
                continue
            n_bytes = sum(len(t.encode("utf-8")) for t in texts)
            repeat = max(1, 20_000 // size)
            ratio = _throughput(estimate, texts, n_bytes, repeat) / _throughput(exact, texts, n_bytes, repeat)
            cells.append(f"{kind} {ratio:4.1f}x")
        print(f"  {size:>5} B: " + ", ".join(cells))


def speed_ratios(label: str, texts: list[str], exact: Callable[[str], Any], name: str,
                 count: Callable[[str], Any]) -> None:
    """Print ``count``'s throughput against ``exact``'s on ``texts``, ``RUNS`` runs, each timing both back to
    back (the machine is shared: the ratio of each run is printed as well as the medians)."""
    n_bytes = sum(len(t.encode("utf-8")) for t in texts)
    runs = [(_throughput(exact, texts, n_bytes), _throughput(count, texts, n_bytes)) for _ in range(RUNS)]
    exact_speed, approx = (statistics.median(column) for column in zip(*runs, strict=True))
    ratios = [a / e for e, a in runs]
    print(f"{name} on {label}, {RUNS} runs: median {approx:.1f} MB/s, tiktoken median {exact_speed:.1f} "
          f"MB/s; ratio per run {', '.join(f'{r:.1f}x' for r in ratios)} (median {statistics.median(ratios):.1f}x)")


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(split: str, target: str) -> int:
    """Print the table; return 1 if safe mode under-counted any document."""
    encoding = reference_encoding(target)
    estimator, safe = ApproximateCounter(target), ApproximateCounter(target, safe=True)
    docs = build(split)
    print(f"split={split} target={target} documents={len(docs)} (targets apply to: {', '.join(TARGET_KINDS)})")
    header = (f"{'kind':<14}{'docs':>5}{'med%':>7}{'p95%':>7}{'c/4 med%':>9}{'c/4 p95%':>9}"
              f"{'safe worst%':>12}{'safe med+%':>11}{'tiktoken':>10}{'approx':>8}{'x':>6}{'safe':>8}{'c/4':>8}")
    print(header + "   (throughput in MB/s)")
    under = 0
    totals: dict[str, list[float]] = {"err": [], "safe": [], "over": []}
    for kind in KINDS:
        texts = [d.text for d in docs if d.kind == kind]
        if not texts:
            continue
        real = [len(encoding.encode_ordinary(t)) for t in texts]
        err = [abs(estimator.count_text(t) - r) / r for t, r in zip(texts, real, strict=True)]
        c4 = [abs(chars_over_4(t) - r) / r for t, r in zip(texts, real, strict=True)]
        safe_ratio = [(safe.count_text(t) - r) / r for t, r in zip(texts, real, strict=True)]
        under += sum(1 for s in safe_ratio if s < 0)
        n_bytes = sum(len(t.encode("utf-8")) for t in texts)
        speeds = [_throughput(f, texts, n_bytes)
                  for f in (encoding.encode_ordinary, estimator.count_text, safe.count_text, chars_over_4)]
        totals["err"] += err if kind in TARGET_KINDS else []
        totals["safe"] += safe_ratio
        print(f"{kind:<14}{len(texts):>5}{100 * statistics.median(err):>7.1f}{100 * _quantile(err, 0.95):>7.1f}"
              f"{100 * statistics.median(c4):>9.1f}{100 * _quantile(c4, 0.95):>9.1f}"
              f"{100 * min(0.0, min(safe_ratio)):>12.1f}{100 * statistics.median(safe_ratio):>11.1f}"
              f"{speeds[0]:>10.1f}{speeds[1]:>8.1f}{speeds[1] / speeds[0]:>6.1f}{speeds[2]:>8.1f}{speeds[3]:>8.0f}")
    print(f"all target kinds: median {100 * statistics.median(totals['err']):.1f}%, "
          f"p95 {100 * _quantile(totals['err'], 0.95):.1f}%; safe: worst {100 * min(totals['safe']):+.1f}%, "
          f"median {100 * statistics.median(totals['safe']):+.1f}%, under-counted documents: {under}")
    for label, texts in ((f"all {len(docs)} documents", [d.text for d in docs]),
                         ("chat-sized messages (100 B - 2 KB)", chat_messages())):
        for name, count in ((estimator.name, estimator.count_text), (safe.name, safe.count_text),
                            (f"{estimator.name} in Python", estimator.py_count),
                            (f"{safe.name} in Python", safe.py_safe_count)):
            speed_ratios(label, texts, encoding.encode_ordinary, name, count)
    message_size_ratios(docs, encoding.encode_ordinary, estimator.count_text)
    return 1 if under else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("heldout", "fit"), default="heldout")
    parser.add_argument("--target", choices=("o200k_base", "cl100k_base"), default="o200k_base")
    args = parser.parse_args()
    missing = missing_packages()
    if missing:
        print(f"warning: corpus packages missing: {', '.join(missing)}", file=sys.stderr)
    sys.exit(report(args.split, args.target))


# --- pytest-benchmark: throughput on the whole held-out corpus ----------------------------------------------


def _heldout_texts() -> list[str]:
    return [d.text for d in build("heldout")]


def _count_all(count: Callable[[str], Any], texts: list[str]) -> None:
    for text in texts:
        count(text)


def chat_messages() -> list[str]:
    """Chat-sized messages: slices of 100 B to 2 KB (log-uniform) from every held-out document, cut at characters."""
    rng = random.Random("chat-messages")
    messages = []
    for text in _heldout_texts():
        raw = text.encode("utf-8")
        start = 0
        while start < len(raw) - 100:
            size = int(math.exp(rng.uniform(math.log(100), math.log(2_000))))
            messages.append(raw[start : start + size].decode("utf-8", errors="ignore"))
            start += size * 3
    return messages


_COUNTERS: dict[str, Callable[[], Callable[[str], Any]]] = {
    "tiktoken_o200k": lambda: reference_encoding("o200k_base").encode_ordinary,
    "approximate": lambda: ApproximateCounter().count_text,
    "approximate_safe": lambda: ApproximateCounter(safe=True).count_text,
    # The same counters without the C accelerator (a machine where it could not be built: no C compiler).
    "approximate_python": lambda: ApproximateCounter().py_count,
    "approximate_safe_python": lambda: ApproximateCounter(safe=True).py_safe_count,
    "chars_over_4": lambda: chars_over_4,
}
# Rows named by what the user does: counting chat messages one at a time (each round counts every message of
# ``chat_messages``), or whole documents (every held-out document).
_TEXTS = {"count one chat message": chat_messages, "count a document": _heldout_texts}


@pytest.mark.parametrize("action", list(_TEXTS))
@pytest.mark.parametrize("counter", list(_COUNTERS))
def test_throughput(benchmark: Any, counter: str, action: str) -> None:
    """Each counter over chat-sized messages and over whole documents; ``extra_info`` has the texts and bytes a
    round counts, so a row's mean divided by ``texts`` is the time per call and ``bytes`` over it the throughput."""
    texts = _TEXTS[action]()
    benchmark.extra_info.update(texts=len(texts), bytes=sum(len(t.encode("utf-8")) for t in texts))
    benchmark(_count_all, _COUNTERS[counter](), texts)


if __name__ == "__main__":
    main()
