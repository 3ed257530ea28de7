"""How much of the budget a plan uses when the input is over it: the bench corpus's 10,000-message conversations
of each kind and seed, fitted with the default chain (no summarizer) at several input budgets, beside a plain
``trim_messages`` of the same conversation. Prints a Markdown table (benchmarks/README.md, "Budget use"): the share
of the budget used, and (recent user turns the plan keeps verbatim / those a plain trim keeps).

    .venv/bin/python benchmarks/budget_use.py [--messages 10000] [--seeds 1,2,3] [--budgets 4k,8k,16k,32k,112k]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from conversations import generate

import ctxwin
from ctxwin.cli._bench.metrics import recent_turns_kept, user_turns
from ctxwin.cli._budgets import parse_budget

KINDS = ("agent", "code", "multilingual")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--budgets", default="4k,8k,16k,32k,112k")
    args = parser.parse_args()
    budgets = [parse_budget(b) for b in args.budgets.split(",")]
    counter = ctxwin.get_counter("gpt-4o")
    print("| kind | seed | " + " | ".join(f"{b:,}" for b in budgets) + " |")
    print("|---|---|" + "---|" * len(budgets))
    for kind in KINDS:
        for seed in (int(s) for s in args.seeds.split(",")):
            messages = ctxwin.convert_to_messages(generate(kind, args.messages, seed))
            turns = len(user_turns(messages))
            cells = []
            for budget in budgets:
                plan = ctxwin.fit(messages, counter=counter, context_window=budget + 1_000, reserve_output=1_000)
                trimmed = ctxwin.trim_messages(messages, max_tokens=budget, token_counter=counter,
                                               include_system=True, start_on="human")
                plain = round((recent_turns_kept(messages, trimmed) or 0.0) * turns)
                mark = "" if plan.budget_used >= 0.9 else "**"
                cells.append(f"{mark}{100 * plan.budget_used:.1f}%{mark} ({plan.recent_turns_verbatim} / {plain})")
            print(f"| {kind} | {seed} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
