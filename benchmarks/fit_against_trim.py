"""A cold plan against a cold trim of the same conversation, interleaved: the ratio of issue 28's and 39's bar
("a cold fit <= 2x a cold trim").

``bench_planner.py``'s ``test_fit`` rows time the trims of a budget, then its plans: on a shared machine the two
rows can run in different states of it (the tokenizer's threads share two cores with whatever else runs), and the
ratio of two single rows moves by half. Here each round times one trim then one plan (a fresh counter each, so
nothing is cached), alternating, and the ratio is of the two minimums (and of the medians).

    python benchmarks/fit_against_trim.py                       # every kind at 8k, 32k, 112k and half
    python benchmarks/fit_against_trim.py --kinds agent --budgets 112k --rounds 25 --recall-share 0
    python benchmarks/fit_against_trim.py --cpu                 # CPU time of the process instead of wall time
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))  # the corpus modules sit beside this file

from conversations import KINDS
from side_by_side import o200k_total, ours

from ctxwin.counters._families.tiktoken_counter import TiktokenCounter
from ctxwin.planner import Planner
from ctxwin.trim import trim_messages

SIZE = 10_000
BUDGETS: dict[str, Callable[[str], int]] = {
    "8k": lambda kind: 8_000,
    "32k": lambda kind: 32_000,
    "112k": lambda kind: 112_000,
    "half": lambda kind: o200k_total(kind, SIZE) // 2,
}


CLOCK = time.perf_counter  # --cpu: time.process_time, the process's CPU time (all its threads), for a busy machine


def _timed(run: Callable[[], Any]) -> float:
    start = CLOCK()
    run()
    return CLOCK() - start


def ratio(kind: str, budget: int, rounds: int, recall_share: float | None) -> tuple[float, float, float, float]:
    """Minimum and median of the trims and of the plans (seconds), interleaved, after one warm-up of each."""
    messages = ours(kind, SIZE)
    options: dict[str, Any] = {} if recall_share is None else {"recall_share": recall_share}

    def trim() -> Any:
        return trim_messages(messages, max_tokens=budget, token_counter=TiktokenCounter("o200k_base"),
                             include_system=True)

    def plan() -> Any:
        fitted = Planner(counter=TiktokenCounter("o200k_base"), context_window=budget, reserve_output=0,
                         **options).plan(messages)
        assert fitted.fits
        return fitted

    trim(), plan()
    trims, plans = [], []
    for _ in range(rounds):
        trims.append(_timed(trim))
        plans.append(_timed(plan))
    return min(trims), statistics.median(trims), min(plans), statistics.median(plans)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A cold plan against a cold trim, interleaved.")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--budgets", default=",".join(BUDGETS))
    parser.add_argument("--rounds", type=int, default=15, help="per budget (a third of it at half)")
    parser.add_argument("--recall-share", type=float, help="the planner's recall_share (default: the planner's)")
    parser.add_argument("--cpu", action="store_true", help="time the process's CPU, not the wall clock: on a machine "
                        "whose cores other jobs take, waiting for a core is not the code's")
    args = parser.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if args.cpu else time.perf_counter
    print(f"{'kind':<13} {'budget':<6} {'trim ms':>8} {'plan ms':>8} {'min ratio':>9} {'median ratio':>12}")
    for kind in args.kinds.split(","):
        for name in args.budgets.split(","):
            rounds = max(3, args.rounds // 3) if name == "half" else args.rounds
            trim_min, trim_median, plan_min, plan_median = ratio(kind, BUDGETS[name](kind), rounds, args.recall_share)
            print(f"{kind:<13} {name:<6} {trim_min * 1e3:8.2f} {plan_min * 1e3:8.2f} {plan_min / trim_min:8.2f}x "
                  f"{plan_median / trim_median:11.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
