"""``ctxwin bench FILE --session``: replay each conversation turn by turn through chat-loop policies and compare what
they bill (``replay``, ``billing``): per policy the cache-hit rate, billed input tokens, estimated cost, mean and
minimum tokens sent, recent turns kept verbatim, recall (``--probes``: late questions answerable from each
conversation's last request) and time per turn; ``--plot`` draws the cost against the turns."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from collections.abc import Sequence
from typing import Any

from ctxwin._errors import InvalidInputError
from ctxwin._plural import plural
from ctxwin.batch._conversation import Conversation
from ctxwin.batch._progress import Progress
from ctxwin.cli._bench.billing import STANDARD_RULES
from ctxwin.cli._bench.plot import save_chart, write_session_plot
from ctxwin.cli._bench.replay import SessionResult, run_session_bench
from ctxwin.cli._bench.retention import Probe
from ctxwin.cli._output import EXIT_INPUT, EXIT_OK, error
from ctxwin.counters._base import TokenCounter, estimates
from ctxwin.counters._caching import CachingRules
from ctxwin.counters._lookup import get_model
from ctxwin.counters._models import ModelSpec
from ctxwin.planner import FitConfig

HEADERS = ("policy", "hits", "billed input", "vs first", "cost", "mean sent", "min sent", "turns kept", "recall",
           "told", "stale", "ms/turn", "checks")
RECALL = HEADERS.index("recall")  # a column only when probes were given
TOLD = (HEADERS.index("told"), HEADERS.index("stale"))  # ... and these when some are typed
LEGEND = (
    "hits: requests whose prefix shared with the previous request is read from the cache. billed input: input "
    "tokens billed, a cached token counted at the cached price's share of the input price. vs first: against the "
    "first policy listed. cost: estimated USD at the prices of the billing rules. mean/min sent: tokens per request. "
    "turns kept: recent user turns sent verbatim (mean per request). recall: questions of --probes whose strings "
    "are all in their conversation's last request. told: for probes typed by what the conversation told (rule, "
    "limit, fact, goal, preference), the least share of a kind kept in every request, so across every cut, from "
    "where it was said on; stale: last requests sending a value a correction replaced. checks: requests over "
    "budget, with a broken tool pair, without the last user message."
)
WIDTH = 100


def rules_for(model: ModelSpec | None, billing: str) -> CachingRules:
    """The billing rules: the reference rule (``standard``), the ``--model``'s (``model``, when it has them), or
    those of the model ``billing`` names (its provider's prices, write fees and breakpoints); ValueError for a
    model the registry does not know or has no prices for."""
    if billing == "standard":
        return STANDARD_RULES
    if billing == "model":
        return model.caching if model is not None and model.caching is not None else STANDARD_RULES
    spec = get_model(billing)
    if spec.caching is None or not spec.caching.priced:
        raise InvalidInputError(f"{spec.name} has no prompt caching prices in the registry (a plugin's ModelSpec can "
                                f"give "
                                "them); e.g. --billing gpt-5.6, --billing claude-sonnet-4-5, --billing "
                                "gemini-2.5-flash")
    return spec.caching


def _cells(result: SessionResult, first: SessionResult) -> tuple[str, ...]:
    cost = None if result.rules is STANDARD_RULES else result.cost  # the reference rule has relative prices
    checks = f"{result.over_budget}/{result.broken_pairs}/{result.missing_last_user}"
    ratio = result.billed_tokens / first.billed_tokens if first.billed_tokens else 0.0
    return (
        result.chain,
        "–" if result.hit_rate is None else f"{100 * result.hit_rate:.0f}%",
        f"{result.billed_tokens:,.0f}",
        f"{ratio:.2f}x",
        "–" if cost is None else f"${cost:,.4f}",
        "–" if result.mean_tokens is None else f"{result.mean_tokens:,.0f}",
        "–" if result.min_tokens is None else f"{result.min_tokens:,}",
        "–" if result.recent_turns is None else f"{result.recent_turns:.1f}",
        "–" if result.recall is None else f"{100 * result.recall:.0f}%",
        "–" if result.told_kept is None else f"{100 * result.told_kept:.0f}%",
        f"{result.stale_sent:,}",
        "–" if result.seconds_per_turn is None else f"{1000 * result.seconds_per_turn:.2f}",
        checks,
    )


def table(results: Sequence[SessionResult], heading: str) -> list[str]:
    """One block per budget, one row per policy, then the legend."""
    lines = [heading]
    for budget in dict.fromkeys(r.budget for r in results):
        rows = [r for r in results if r.budget == budget]
        shown = [i for i in range(len(HEADERS)) if (i != RECALL or any(r.answered for r in rows))
                 and (i not in TOLD or any(r.told for r in rows))]
        headers = tuple(HEADERS[i] for i in shown)
        cells = [tuple(c[i] for i in shown) for c in (_cells(r, rows[0]) for r in rows)]
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
        requests = rows[0].requests
        lines += ["", f"budget {budget:,} input tokens, {plural(requests, 'request')} per policy"]
        for row in (headers, *cells):
            lines.append("  " + "  ".join([row[0].ljust(widths[0]), *(c.rjust(w) for c, w in
                                                                       zip(row[1:], widths[1:], strict=True))]))
    return [*lines, "", *textwrap.wrap(LEGEND, WIDTH)]


def run_session(
    args: argparse.Namespace, config: FitConfig, rules: CachingRules, model: ModelSpec | None, counter: TokenCounter,
    conversations: list[Conversation], tools: list[dict[str, Any]] | None, chains: list[str], read_errors: int,
    probes: dict[int | None, list[Probe]] | None = None,
) -> int:
    """Replay, then print the table or JSON and write the chart; the exit code."""
    progress = Progress("replayed", len(conversations) * len(args.budgets))
    started = time.perf_counter()
    results: list[SessionResult] = []
    for budget in args.budgets:
        results += run_session_bench(conversations, chains, budget=budget, counter=counter, rules=rules,
                                     model=model.name if model else None, tools=tools, progress=progress,
                                     probes=probes, config=config)
    progress.close()
    if args.json:
        print(json.dumps({"billing": {"source": rules.source, "date": rules.date, "mode": rules.mode,
                                      "min_prefix": rules.min_prefix, "granularity": rules.granularity,
                                      "read_ratio": rules.read_ratio, "write_ratio": rules.write_ratio,
                                      "bills_writes": rules.bills_writes},
                          "results": [r.as_json() for r in results]}, indent=2))
    else:
        heading = (
            f"ctxwin bench --session: {plural(len(conversations), 'conversation')} from {conversations[0].source}\n"
            + (f"model {model.name}, " if model else "") + f"counter {counter.name}"
            + (" (its figures are estimates)" if estimates(counter) else "") + "\n"
            + f"billing: {rules.mode} caching from {rules.min_prefix:,} tokens in steps of {rules.granularity}, "
            + f"cached at {rules.read_ratio or 0:.0%} of the input price"
            + (f", written at {rules.write_ratio:.0%} ({rules.ttl})" if rules.bills_writes and rules.write_ratio
               else "")
            + f" ({rules.source}, {rules.date})"
        )
        print("\n".join(table(results, heading)))
        print(f"replayed in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    status = EXIT_INPUT if read_errors or progress.errors else EXIT_OK
    problem = save_chart(lambda path: write_session_plot(results, path), args.plot) if args.plot else None
    return error(problem) if problem else status
