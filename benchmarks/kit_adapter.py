"""ctxwin's fit as a compactor of compaction-conformance-kit (the ``bench`` extra): the outside benchmark of issue 50.

``compaction-kit check benchmarks/kit_adapter.py:CtxwinCompactor`` runs the kit's seeded session through
``ctxwin.fit`` (the summarising chain; ``CtxwinTrimCompactor``: the default chain). The kit hands a compactor the
turns as ``(role, text)`` and, from the second round on, one system turn holding the previous round's output; the
adapter reads that back into messages by its ``[role] text`` lines (the kit's own transcript form), fits them
into the kit's character budget (a counter of characters as the kit counts them: ``[role] text`` and a newline per
message) and writes the plan's messages back in that form. Without a budget it fits into ``UNBUDGETED``
characters, a window that stays as rounds go (as a model's does). The ledger's block may take ``LEDGER_SHARE`` of
it: the kit's budgets are a few hundred characters, where the default share would leave the block no room (a
request of 8,000 tokens gives it 1,200).

``python benchmarks/kit_adapter.py`` prints, for ctxwin and the kit's reference compactors: survival per type
and round on the seeded session, the fixed-budget leaderboard at 10/20/30% of the transcript (the kit's
randomized and semantic suites), and the kit's ``corpus`` runs (randomized and generated sessions over seeds).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from compaction_kit.compacted import CompactedContext
from compaction_kit.session import Turn

from ctxwin import fit
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

UNBUDGETED = 4_000  # characters, when the kit gives no budget: a fixed window (46% of its seeded session)
LEDGER_SHARE = 0.9
SUMMARIZING = ["filter", "truncate_tool_output", "summarize", "trim"]
_LINE = re.compile(r"^\[(system|user|assistant|tool)\] ", re.M)
_ROLES = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}


class Characters:
    """A counter of characters as the kit measures a context: ``[role] text`` and a newline per message."""

    name = "characters"
    additive = True
    request_overhead = 0

    def count_text(self, text: str) -> int:
        return len(text)

    def count_message(self, message: BaseMessage) -> int:
        return len(_line(message)) + 1

    def count_messages(self, messages: Sequence[BaseMessage], *, tools: Any = None) -> int:
        return sum(self.count_message(m) for m in messages)


def _role(message: BaseMessage) -> str:
    return {"human": "user", "ai": "assistant"}.get(message.type, message.type)


def _line(message: BaseMessage) -> str:
    return f"[{_role(message)}] {message.text}"


def messages_of(turns: Sequence[Turn]) -> list[BaseMessage]:
    """The kit's turns as ctxwin messages; a turn holding ``[role] text`` lines (a previous round's output) is read
    back into its messages."""
    out: list[BaseMessage] = []
    for turn in turns:
        starts = [m.start() for m in _LINE.finditer(turn.text)]
        if starts and starts[0] == 0:
            parts = [turn.text[a:b].rstrip("\n") for a, b in zip(starts, [*starts[1:], len(turn.text)], strict=True)]
            out += [_message(*part[1:].split("] ", 1)) for part in parts]
        else:
            out.append(_message(turn.role, turn.text))
    return out


def _message(role: str, text: str) -> BaseMessage:
    if role == "tool":  # a result without its call: read as what the user was shown
        return HumanMessage(text)
    return _ROLES.get(role, HumanMessage)(text)


class CtxwinCompactor:
    """``ctxwin.fit`` with the summarising chain, into the kit's character budget."""

    name = "ctxwin-summarize"
    strategies: list[str] | None = SUMMARIZING

    def compact(self, turns: list[Turn], round_num: int = 1, budget_chars: int | None = None) -> CompactedContext:
        messages = messages_of(turns)
        counter = Characters()
        budget = budget_chars or UNBUDGETED
        plan = fit(messages, counter=counter, model=None, context_window=budget, reserve_output=0,
                   strategies=self.strategies, ledger_share=LEDGER_SHARE, recall_share=0)
        text = "\n".join(_line(m) for m in plan.messages if not isinstance(m, ToolMessage) or m.text)
        return CompactedContext(text, self.name, round_num)


class CtxwinTrimCompactor(CtxwinCompactor):
    """``ctxwin.fit`` with its default chain (no summary), into the kit's character budget."""

    name = "ctxwin-fit"
    strategies = None


def _seeded(rounds: int) -> None:
    from compaction_kit.report import build_report
    from compaction_kit.runner import run_conformance
    from compaction_kit.session import build_seeded_session

    for compactor in (CtxwinCompactor(), CtxwinTrimCompactor()):
        run = run_conformance(build_seeded_session(), compactor, rounds=rounds)
        report = build_report(run)
        print(f"\n### Seeded session, {compactor.name}, {rounds} rounds, no budget\n")
        print("| type | " + " | ".join(f"round {r.round_num}" for r in run.rounds) + " |")
        print("|---|" + "---:|" * len(run.rounds))
        for finding in report.findings:
            curve = [r.survival_by_type.get(finding.canary_type, 0.0) for r in run.rounds]
            print(f"| {finding.canary_type} | " + " | ".join(f"{v:.0%}" for v in curve) + " |")


def _leaderboard(budgets: Sequence[float], seeds: Sequence[int], rounds: int) -> None:
    from compaction_kit.benchmark import budget_benchmark_to_markdown, run_budget_benchmark
    from compaction_kit.cli import COMPACTORS

    factories: dict[str, Any] = {**COMPACTORS, "ctxwin-summarize": CtxwinCompactor, "ctxwin-fit": CtxwinTrimCompactor}
    payload = run_budget_benchmark(factories, budgets=budgets, seeds=seeds, rounds=rounds)
    print("\n" + budget_benchmark_to_markdown(payload))


def _corpus(generated: bool, seeds: Sequence[int], rounds: int) -> None:
    """The kit's ``corpus`` command, with ctxwin beside its compactors (the command runs only its own)."""
    from compaction_kit.cli import COMPACTORS
    from compaction_kit.corpus import build_random_session
    from compaction_kit.generated import build_generated_session
    from compaction_kit.report import build_report
    from compaction_kit.runner import run_conformance

    builder = build_generated_session if generated else build_random_session
    factories: dict[str, Any] = {**COMPACTORS, "ctxwin-summarize": CtxwinCompactor, "ctxwin-fit": CtxwinTrimCompactor}
    print(f"\n### corpus ({'generated' if generated else 'randomized'}), seeds {seeds[0]}-{seeds[-1]}, "
          f"{rounds} rounds: median survival per type, round 1 / last round; stale values carried\n")
    types: list[str] = []
    rows = []
    for name, factory in factories.items():
        first: dict[str, list[float]] = defaultdict(list)
        last: dict[str, list[float]] = defaultdict(list)
        stale = superseded = 0
        for seed in seeds:
            session, canaries = builder(seed)
            run = run_conformance(session, factory(), rounds=rounds, canaries=canaries)
            for finding in build_report(run).findings:
                first[finding.canary_type].append(finding.round1_survival)
                last[finding.canary_type].append(finding.final_survival)
            final = run.rounds[-1].context.text.lower()
            for canary in canaries:
                if canary.superseded_tokens:
                    superseded += 1
                    stale += any(t.lower() in final for t in canary.superseded_tokens)
        types = sorted(first)
        rows.append((name, {t: (statistics.median(first[t]), statistics.median(last[t])) for t in types},
                     stale, superseded))
    print("| compactor | " + " | ".join(types) + " | stale |")
    print("|---|" + "---:|" * (len(types) + 1))
    for name, cells, stale, superseded in rows:
        print(f"| {name} | " + " | ".join(f"{a:.0%} / {b:.0%}" for a, b in (cells[t] for t in types))
              + f" | {stale}/{superseded} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ctxwin on compaction-conformance-kit 0.8.0")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=8, help="seeds of the leaderboard and corpus runs (from 1)")
    parser.add_argument("--parts", default="seeded,leaderboard,corpus,generated")
    args = parser.parse_args(argv)
    seeds = list(range(1, args.seeds + 1))
    parts = args.parts.split(",")
    if "seeded" in parts:
        _seeded(args.rounds)
    if "leaderboard" in parts:
        _leaderboard((0.10, 0.20, 0.30), seeds, args.rounds)
    if "corpus" in parts:
        _corpus(False, seeds, args.rounds)
    if "generated" in parts:
        _corpus(True, seeds, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())

