"""A plan as a few lines for people: ``str(plan)``, ``plan.report()`` and what ``ctxwin fit`` prints.

One section a function, each giving its lines (none when it has nothing to say), in the order ``SECTIONS`` lists:
a new part of the report is one function and its place there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ctxwin._plural import plural

if TYPE_CHECKING:
    from ctxwin.planner._report import Plan

_QUERY_SHOWN = 60  # characters of a recall query shown


def _verdict(plan: Plan) -> list[str]:
    verdict = "fits" if plan.fits else "DOES NOT FIT"
    estimate = ", estimated" if plan.estimated else ""
    line = (f"{verdict}: {plan.tokens_before:,} -> {plan.tokens_after:,} tokens{estimate}, "
            f"{100 * plan.budget_used:.0f}% of an input budget of {plan.budget.max_input_tokens:,}")
    lines = [f"{line} ({plan.model or 'no model'}, counter {plan.counter})"]
    if plan.estimated:
        margin = plan.budget.safety_margin
        lines.append(f"the figures are estimates: counter {plan.counter} estimates the provider's count"
                     + (f"; a safety margin of {margin:,} tokens allows for its error" if margin else ""))
    return lines


def _budget(plan: Plan) -> list[str]:
    budget = plan.budget
    parts = [f"context window {budget.context_window:,} - reply {budget.reserve_output:,}"]
    if budget.safety_margin:
        parts.append(f"safety margin {budget.safety_margin:,}")
    held = [f"{what} {tokens:,}" for what, tokens in (("tools", budget.tools_tokens),
                                                       ("system prompt", plan.system_tokens)) if tokens]
    return [f"budget: {' - '.join(parts)}" + (f"; of the input, {', '.join(held)}" if held else "")]


def _steps(plan: Plan) -> list[str]:
    done = []
    for step in plan.steps:
        if step.skipped:
            done.append(f"{step.name} skipped")
        elif step.tokens_before != step.tokens_after or any(step.touched.counts):
            done.append(f"{step.name} {step.tokens_before:,} -> {step.tokens_after:,}")
    return [f"steps: {', '.join(done)}"] if done else []


def _left_out(plan: Plan) -> list[str]:
    from ctxwin.planner._report import touched_names

    turns = f"{plural(plan.recent_turns_verbatim, 'recent turn')} verbatim"
    if plan.history is not None:
        history = plan.history
        if not history.left_out:
            return [f"kept the whole history ({plural(history.messages, 'message')}), {turns}"]
        return [f"left out of the history: {history.left_out:,} of {plural(history.messages, 'message')} (dropped, "
                f"summarised or shortened by this request's cut or an earlier one); {turns}"]
    dropped, truncated, summarized = touched_names(plan.steps)
    if not (dropped or truncated or summarized):
        return [f"kept every message, {turns}"]
    return [f"dropped {len(dropped):,}, shortened {len(truncated):,}, summarised {len(summarized):,} "
            f"{'message' if len(dropped | truncated | summarized) == 1 else 'messages'}; {turns}"]


def _recalled(plan: Plan) -> list[str]:
    recalled = plan.recalled
    if recalled is None:
        return []
    query = " ".join(recalled.query.split())
    query = query if len(query) <= _QUERY_SHOWN else query[: _QUERY_SHOWN - 1] + "…"
    return [f"recalled {plural(len(recalled.excerpts), 'excerpt')} ({recalled.tokens:,} tokens) from "
            f"{', '.join(recalled.labels)} for {query!r}"]


def _cache(plan: Plan) -> list[str]:
    cache = plan.cache
    if cache is None:
        return []
    how = "measured" if cache.measured else "estimated"
    cost = f", input cost ${cache.cost:,.4f}" if cache.cost is not None else ""
    return [f"session: {'a cut' if cache.cut else 'appended'}; {cache.shared_tokens:,} tokens shared with the "
            f"previous request, {cache.cached_tokens:,} read from the cache, {cache.written_tokens:,} written "
            f"({how}{cost})"]


def _warnings(plan: Plan) -> list[str]:
    return [f"warning: {w}" for w in plan.warnings]


SECTIONS: tuple[Callable[[Plan], list[str]], ...] = (
    _verdict, _budget, _steps, _left_out, _recalled, _cache, _warnings,
)


def report_lines(plan: Plan) -> list[str]:
    return [line for section in SECTIONS for line in section(plan)]
