"""Issue 28's and 49's chat-sized trim rows, interleaved: langchain_core's cold trim, ctxwin's cold trim with the
o200k callable and with its native counter, the tokenization floor and a re-trim after one append, one of each per
round, so their ratios hold on a shared machine whose speed drifts between ``bench_trim.py -k chat_sized``'s rows.

    python benchmarks/chat_sized_rows.py                  # 7 rounds of 10,000 chat-sized messages
    python benchmarks/chat_sized_rows.py --rounds 15 --size 20000
    python benchmarks/chat_sized_rows.py --cpu            # CPU time of the process instead of wall time
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))  # the corpus modules sit beside this file

import langchain_core.messages as lc_messages
from side_by_side import chat_sized, chat_sized_theirs, o200k_callable

from ctxwin.counters import get_counter
from ctxwin.messages import HumanMessage
from ctxwin.trim import trim_messages
from ctxwin.trim._count_cache import cache_for

ROWS = ("langchain cold", "ctxwin cold", "native cold", "floor", "re-trim")
CLOCK = time.perf_counter  # --cpu: time.process_time, the process's CPU time (all its threads), for a busy machine


# Read before each timed row, so every row starts with the messages out of the CPU's caches: rows run one after the
# other, and a row following one that read the same messages would start warm (the floor after a trim did).
_SCRATCH = bytearray(64 << 20)


def _timed(run: Callable[[], Any], setup: Callable[[], Any] = lambda: None) -> float:
    setup()
    _SCRATCH.count(1)
    start = CLOCK()
    run()
    return CLOCK() - start


def rows(size: int, rounds: int) -> dict[str, list[float]]:
    """Each row's times in seconds, one of each per round after one warm-up round."""
    mine, theirs = chat_sized(size), chat_sized_theirs(size)
    limit = sum(map(o200k_callable, mine)) // 2
    native = get_counter("tiktoken:o200k_base")
    kept = trim_messages(mine, max_tokens=limit, token_counter=o200k_callable, tool_pairs="ignore")
    fresh = count()
    grown: list[Any] = []

    def previous_turn() -> None:
        cache_for(o200k_callable).clear()
        trim_messages(mine, max_tokens=limit, token_counter=o200k_callable)
        grown[:] = [*mine, HumanMessage(f"one more question, number {next(fresh)}")]

    runs: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
        "langchain cold": (lambda: lc_messages.trim_messages(theirs, max_tokens=limit, token_counter=o200k_callable),
                           lambda: None),
        "ctxwin cold": (lambda: trim_messages(mine, max_tokens=limit, token_counter=o200k_callable),
                        lambda: cache_for(o200k_callable).clear()),
        "native cold": (lambda: trim_messages(mine, max_tokens=limit, token_counter=native),
                        lambda: cache_for(native).clear()),
        "floor": (lambda: sum(map(o200k_callable, kept)), lambda: None),
        "re-trim": (lambda: trim_messages(grown, max_tokens=limit, token_counter=o200k_callable), previous_turn),
    }
    times: dict[str, list[float]] = {row: [] for row in ROWS}
    for round_ in range(rounds + 1):
        for row in ROWS:
            elapsed = _timed(*runs[row])
            if round_:
                times[row].append(elapsed)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The chat-sized trim rows, interleaved.")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--cpu", action="store_true", help="time the process's CPU (all threads: the native "
                        "counter's tokenizing threads count in full), not the wall clock")
    args = parser.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if args.cpu else time.perf_counter
    times = rows(args.size, args.rounds)
    for name, pick in (("min", min), ("median", statistics.median)):
        at = {row: pick(times[row]) for row in ROWS}
        print(f"{name:<6} " + "  ".join(f"{row} {at[row] * 1e3:.2f} ms" for row in ROWS))
        theirs = at["langchain cold"]
        print(f"{'':<6} cold {theirs / at['ctxwin cold']:.1f}x langchain_core, "
              f"{at['ctxwin cold'] / at['floor']:.2f}x the floor; native {theirs / at['native cold']:.1f}x; "
              f"re-trim {theirs / at['re-trim']:.0f}x", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
