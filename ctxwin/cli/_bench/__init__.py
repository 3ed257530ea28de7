"""``ctxwin bench FILE --model M --budgets 4k,16k,64k``: compare strategy chains on the user's own conversations, or
with ``--session`` the chat-loop policies' prompt-cache bills (docs/bench.md). What the command runs lives beside it,
used by nothing else in ctxwin; ``run_session_bench`` is the Python API of ``--session``.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from collections.abc import Sequence
from typing import Any

from ctxwin._plural import plural
from ctxwin.batch._conversation import Conversation, ConversationFileError
from ctxwin.batch._progress import Progress
from ctxwin.cli._bench.chains import DEFAULT_CHAINS, Chain, parse_chains
from ctxwin.cli._bench.plot import save_chart, write_plot
from ctxwin.cli._bench.replay import DEFAULT_SESSION_CHAINS, parse_session_chains
from ctxwin.cli._bench.retention import Probe, read_probes
from ctxwin.cli._bench.runner import BenchResult, run_bench
from ctxwin.cli._bench.session import rules_for, run_session
from ctxwin.cli._budgets import parse_budgets
from ctxwin.cli._counter_choice import configured_counter
from ctxwin.cli._io import read_conversations
from ctxwin.cli._options import add_options, nonempty, text_value
from ctxwin.cli._output import EXIT_INPUT, EXIT_OK, error, usage_error
from ctxwin.counters._base import TokenCounter, estimates
from ctxwin.counters._caching import CachingRules
from ctxwin.counters._models import ModelSpec
from ctxwin.planner import FitConfig

DEFAULT_BUDGETS = "4k,16k,64k"
DEFAULT_SESSION_BUDGETS = "20k"
# The options a bench decides itself: the budgets (the window, no reserve), the chains, the policies' caching.
IGNORED = frozenset({"context_window", "reserve_output", "strategies", "output", "strict", "cache_stable"})
WIDTH = 100  # the table's default columns fit; --probes, a long chain name or file path may run over
LEGEND = (
    "ms/conv: mean planning time per conversation. tokens used: the largest request over the conversations, "
    "recounted by the counter (tool definitions included). min use: the least share of the budget used by a "
    "conversation that was over it. turns: the most recent user turns kept verbatim, "
    "as a mean fraction of each conversation's turns. facts: the conversation's rare, checkable strings (ids, "
    "numbers with units, dates, paths, URLs, code symbols, names) still in the request verbatim, the user's "
    "weighing 3x, mean over the conversations (docs/bench.md, Retention). recall: questions of --probes (late "
    "questions) whose strings are all in the fitted request. told: for probes typed by what the conversation told "
    "(rule, limit, fact, goal, preference), the least share kept of a kind; stale: those sent with a value their "
    "correction replaced. pairs: conversations with every tool call/result pair "
    "intact. sys: conversations whose system prompt was kept. summ.: messages replaced by summaries "
    "(total). ! over budget (see the notes below)."
)

def _percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _milliseconds(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    ms = 1000 * seconds
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.2f}"


HEADERS = (
    "strategy", "ms/conv", "tokens used / budget", "min use", "turns", "facts", "recall", "told", "stale", "pairs",
    "sys", "summ."
)
PROBES = HEADERS.index("recall")  # a column only when probes were given
TOLD = (HEADERS.index("told"), HEADERS.index("stale"))  # ... and these when some are typed


def _cells(result: BenchResult) -> tuple[str, ...]:
    mark = "" if not result.over_budget else " !!" if result.over_budget_unflagged else " !"
    share = f"{100 * result.tokens_used / result.budget:.1f}%"
    return (
        result.strategy,
        _milliseconds(result.seconds_per_conversation),
        f"{result.tokens_used:>{len(f'{result.budget:,}')},} / {result.budget:,} {share:>6}{mark}",
        _percent(result.budget_used_min),
        _percent(result.recent_turns_kept),
        _percent(result.facts_kept),
        _percent(result.probes_kept),
        _percent(result.told_kept),
        f"{result.stale_sent:,}",
        _percent(result.tool_pairs_intact),
        _percent(result.system_kept),
        f"{result.messages_summarized:,}",
    )


def _line(cells: Sequence[str], widths: Sequence[int]) -> str:
    """The strategy left-aligned, the figures right-aligned (tokens left-aligned so the markers stick out)."""
    name, *figures = cells
    parts = [name.ljust(widths[0])]
    for i, cell in enumerate(figures, start=1):
        parts.append(cell.ljust(widths[i]) if i == 2 else cell.rjust(widths[i]))  # i == 2: the tokens
    return "  " + "  ".join(parts).rstrip()


def _footnote(result: BenchResult) -> list[str]:
    note = (
        f"! {result.strategy} at {result.budget:,}: {result.over_budget:,} of "
        f"{plural(result.conversations, 'conversation')} over budget"
    )
    if result.over_budget_unflagged:
        note += (
            f"; {result.over_budget_unflagged:,} of them planned as fitting: a ctxwin bug, please report it with "
            "the conversation"
        )
    else:
        note += ", each reported by the planner as not fitting"
    if result.first_warning:
        note += f"; the first one: {result.first_warning}"
    return textwrap.wrap(note, WIDTH, subsequent_indent="  ")


def table(results: Sequence[BenchResult], heading: str, seconds: float) -> list[str]:
    """The human-readable comparison: one block per budget, one row per chain, a legend and notes."""
    shown = [i for i in range(len(HEADERS)) if (i != PROBES or any(r.probes for r in results))
             and (i not in TOLD or any(r.told for r in results))]
    headers = [HEADERS[i] for i in shown]
    rows = {id(r): [_cells(r)[i] for i in shown] for r in results}
    widths = [max(len(h), *(len(c[i]) for c in rows.values())) for i, h in enumerate(headers)]
    widths[2] = max(len(c[2]) for c in rows.values())  # "tokens used / budget" may run over, the figures not
    lines = [heading]
    for budget in dict.fromkeys(r.budget for r in results):
        lines += ["", f"budget {budget:,} input tokens", _line(headers, widths)]
        lines += [_line(rows[id(r)], widths) for r in results if r.budget == budget]
    lines += ["", *textwrap.wrap(LEGEND, WIDTH), *(line for r in results if r.over_budget for line in _footnote(r))]
    plans = sum(r.conversations for r in results)
    lines.append(f"{plural(plans, 'plan')} in {seconds:.1f} s (recounts and warm-up included)")
    return lines


def _read(path: str) -> tuple[list[Conversation], int]:
    """The readable conversations, and how many lines could not be read (each reported on stderr)."""
    conversations: list[Conversation] = []
    errors = 0
    for item in read_conversations(path):
        if isinstance(item, ConversationFileError):
            error(item)
            errors += 1
        else:
            conversations.append(item)
    return conversations, errors


def run(args: argparse.Namespace) -> int:
    chosen = configured_counter(args, IGNORED, None)
    if isinstance(chosen, int):
        return chosen
    config, model, counter = chosen
    rules = _billing(args, model)
    if isinstance(rules, int):
        return rules
    tools = None if config.tools is None else list(config.tools)
    try:
        probes = read_probes(args.probes) if args.probes else None
        conversations, read_errors = _read(args.file)
    except (ValueError, TypeError) as exc:  # ConversationFileError and ProbeFileError included
        return error(exc)
    if not conversations:
        return error(f"{args.file}: no conversation could be read")
    try:
        if args.session:
            sessions = parse_session_chains(args.strategies or DEFAULT_SESSION_CHAINS)
        else:
            chains = parse_chains(args.strategies or DEFAULT_CHAINS)
    except ValueError as exc:
        return usage_error(args.parser, "--strategies", exc)
    args.budgets = args.budgets or parse_budgets(DEFAULT_SESSION_BUDGETS if args.session else DEFAULT_BUDGETS)
    lines = {c.line or 1 for c in conversations}
    missing = sorted(line for line in probes or {} if line is not None and line not in lines)
    if missing:
        return error(f"{args.probes}: probes about conversation {missing[0]}, but {args.file} has none on that line")
    for budget in args.budgets:
        if model is not None and budget > model.context_window:
            print(
                f"note: budget {budget:,} is larger than {model.name}'s context window ({model.context_window:,})",
                file=sys.stderr,
            )
    if args.session:
        assert rules is not None  # --session's billing, standard by default
        return run_session(args, config, rules, model, counter, conversations, tools, sessions, read_errors, probes)
    return _run_chains(args, config, model, counter, conversations, tools, chains, read_errors, probes)


def _billing(args: argparse.Namespace, model: ModelSpec | None) -> CachingRules | int | None:
    """``--session``'s billing rules (None without ``--session``), or the exit code after reporting a bad
    ``--billing``: an unknown one, or one given without ``--session``, which alone bills."""
    if not args.session:
        if args.billing is not None:
            return usage_error(args.parser, "--billing", "bills the replays of --session; add --session")
        return None
    try:
        return rules_for(model, args.billing or "standard")
    except ValueError as exc:
        return usage_error(args.parser, "--billing", exc)


def _run_chains(
    args: argparse.Namespace, config: FitConfig, model: ModelSpec | None, counter: TokenCounter,
    conversations: list[Conversation],
    tools: list[dict[str, Any]] | None, chains: list[Chain], read_errors: int,
    probes: dict[int | None, list[Probe]] | None,
) -> int:
    progress = Progress("benchmarked", len(conversations))
    started = time.perf_counter()
    results = run_bench(
        conversations, chains, args.budgets, counter=counter, model=model.name if model else None, tools=tools,
        progress=progress, probes=probes, config=config,
    )
    progress.close()
    if args.json:
        print(json.dumps({"results": [r.as_json() for r in results]}, indent=2))
    else:
        heading = (
            f"ctxwin bench: {plural(len(conversations), 'conversation')} from {conversations[0].source}\n"
            + (f"model {model.name}, " if model else "")
            + f"counter {counter.name}" + (" (its figures are estimates)" if estimates(counter) else "")
        )
        print("\n".join(table(results, heading, time.perf_counter() - started)))
    status = EXIT_INPUT if read_errors or progress.errors else EXIT_OK
    problem = save_chart(lambda path: write_plot(results, path), args.plot) if args.plot else None
    return error(problem) if problem else status



def add_arguments(bench: argparse.ArgumentParser) -> None:
    bench.add_argument("file", type=text_value("a file name"),
                       help="JSON or JSONL conversations (one per line) in OpenAI chat format, or -")
    bench.add_argument(
        "--budgets",
        type=nonempty(parse_budgets, "budgets"),
        help=f"comma-separated input budgets in tokens, k = 1,000 (default: {DEFAULT_BUDGETS}; with --session: "
        f"{DEFAULT_SESSION_BUDGETS})",
    )
    bench.add_argument(
        "--strategies",
        type=text_value("strategy chains"),
        help="comma-separated chains of '+'-joined steps: last, first, summarize, truncate-tools, fit, or any "
        f"registered strategy (default: {DEFAULT_CHAINS}); with --session, chat-loop policies: sliding, langchain, "
        f"refit, session, session@<low-water> (default: {DEFAULT_SESSION_CHAINS})",
    )
    bench.add_argument(
        "--session",
        action="store_true",
        help="replay each conversation turn by turn (a request after each user message and each batch of tool "
        "results) and compare the policies' prompt-cache hits, billed tokens, cost and time per turn",
    )
    bench.add_argument(
        "--billing",
        type=text_value("standard, model or a model name"),
        metavar="standard|model|MODEL",
        help="--session's billing: 'standard' (the default: cached from 1,024 tokens in 128-token steps at 10%% of "
        "the input price), 'model' (the --model's caching rules and prices from the registry) or a model name: as "
        "its provider bills (e.g. gpt-5.6: writes at 1.25x; claude-sonnet-4-5: breakpoints, writes at 1.25x, reads "
        "at 0.1x; each request billed with the breakpoints it sends, the last message where it sends none)",
    )
    bench.add_argument(
        "--probes",
        metavar="FILE",
        type=text_value("a file name"),
        help='JSON or JSONL probes, each {"needs": [strings an answer needs], "question": ..., "conversation": '
        "line}: the share answerable from each fitted request (with --session, from each conversation's last "
        "request): recall",
    )
    bench.add_argument("--json", action="store_true", help="print JSON instead of the table")
    bench.add_argument("--plot", metavar="PNG", type=text_value("a file name"),
                       help="also write a chart to this PNG file (needs ctxwin[plot])")
    add_options(bench, skip=IGNORED, helps={
        "model": "the model whose counter measures the conversations (and whose planner fits them, within its "
                 "window)",
        "tools": "a JSON file with the tool definitions sent with each request",
    })
