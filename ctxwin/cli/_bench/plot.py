"""The ``--plot`` charts of ``ctxwin bench``. matplotlib (the ``plot`` extra) is imported only here, when a chart is
asked for, and drawn on the Agg canvas directly, so no GUI backend or global state is touched.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ctxwin._errors import CtxwinError
from ctxwin._install import install_hint
from ctxwin._plural import plural
from ctxwin.cli._bench.replay import SessionResult
from ctxwin.cli._bench.runner import BenchResult

MARKERS = ("o", "s", "^", "D", "v", "P", "X")
STYLES = ("-", "--", "-.", ":")


class PlotUnavailable(CtxwinError, ImportError):
    """matplotlib is not installed; the message says how to install it."""


def _panels(probes: bool) -> list[tuple[str, Callable[[BenchResult], float | None]]]:
    def percent_used(r: BenchResult) -> float | None:
        return None if r.mean_tokens_used is None else 100 * r.mean_tokens_used / r.budget

    def recent(r: BenchResult) -> float | None:
        return None if r.recent_turns_kept is None else 100 * r.recent_turns_kept

    def facts(r: BenchResult) -> float | None:
        return None if r.facts_kept is None else 100 * r.facts_kept

    def answerable(r: BenchResult) -> float | None:
        return None if r.probes_kept is None else 100 * r.probes_kept

    def milliseconds(r: BenchResult) -> float | None:
        return None if r.seconds_per_conversation is None else 1000 * r.seconds_per_conversation

    return [
        ("tokens used (% of the budget, mean)", percent_used),
        ("recent user turns kept verbatim (%)", recent),
        ("facts kept (%, the user's weigh 3x, mean)", facts),
        *([("probes answerable (%)", answerable)] if probes else []),
        ("time per conversation (ms)", milliseconds),
    ]


def _budget_label(budget: int) -> str:
    return f"{budget / 1000:g}k" if budget >= 1000 else str(budget)


def write_plot(results: Sequence[BenchResult], path: str | Path) -> None:
    """Write the chart (``bench_figure``) as a PNG; PlotUnavailable without matplotlib, OSError if the file cannot
    be written."""
    bench_figure(results).savefig(path, format="png")


def bench_figure(results: Sequence[BenchResult]) -> Any:
    """One panel per measure against the budgets, one line per chain. PlotUnavailable without matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise PlotUnavailable(f"--plot needs matplotlib, which is not installed: {install_hint('plot')}") from exc
    budgets = sorted({r.budget for r in results})
    strategies = list(dict.fromkeys(r.strategy for r in results))
    by_key = {(r.strategy, r.budget): r for r in results}
    panels = _panels(any(r.probes for r in results))
    figure = Figure(figsize=(5 * len(panels), 4.6), dpi=110, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, len(panels))
    for ax, (title, value) in zip(axes, panels, strict=True):
        for n, strategy in enumerate(strategies):
            points = [(b, value(by_key[strategy, b])) for b in budgets if (strategy, b) in by_key]
            xs = [b for b, v in points if v is not None]
            ys = [v for _, v in points if v is not None]
            # markers and dashes differ, so chains with the same figures (often fit and truncate-tools+trim) show
            ax.plot(xs, ys, marker=MARKERS[n % len(MARKERS)], linestyle=STYLES[n % len(STYLES)], label=strategy)
        ax.set_title(title, fontsize=10)
        ax.set_xscale("log")
        ax.set_xticks(budgets, [_budget_label(b) for b in budgets])
        ax.minorticks_off()
        ax.set_xlabel("input budget (tokens)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    for ax in axes[:-1]:  # percentages: the whole range, and room above 100% to show a chain over budget
        ax.set_ylim(0, max(105, ax.get_ylim()[1]))
    axes[0].axhline(100, color="grey", linewidth=1)
    axes[0].legend(fontsize=8)
    _separate_ticks(figure, axes)
    return figure


def _separate_ticks(figure: Any, axes: Sequence[Any]) -> None:
    """Budgets close together (4k, 4.1k on a log axis) write their labels over each other: they are turned upright
    then, and a label still over the one before it is left out (the table has every budget)."""
    figure.canvas.draw()
    if not any(_overlapping(ax.get_xticklabels()) for ax in axes):
        return
    for ax in axes:
        ax.tick_params(axis="x", labelrotation=90)
    figure.canvas.draw()
    for ax in axes:
        shown = None
        for label in ax.get_xticklabels():
            box = label.get_window_extent()
            if shown is not None and box.overlaps(shown):
                label.set_visible(False)
            else:
                shown = box


def _overlapping(labels: Sequence[Any]) -> bool:
    boxes = [label.get_window_extent() for label in labels if label.get_text()]
    return any(a.overlaps(b) for a, b in itertools.pairwise(boxes))


def write_session_plot(results: Sequence[SessionResult], path: str | Path) -> None:
    """``--session``'s chart (``session_figure``) as a PNG; PlotUnavailable without matplotlib."""
    session_figure(results).savefig(path, format="png")


def session_figure(results: Sequence[SessionResult]) -> Any:
    """Per budget, each policy's billed input tokens so far against the requests made: the mean over the
    conversations that reached each request, up to the median conversation's length (where half of them have
    ended; the axis says so), on whole-request ticks. PlotUnavailable without matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import FuncFormatter, MaxNLocator
    except ImportError as exc:
        raise PlotUnavailable(f"--plot needs matplotlib, which is not installed: {install_hint('plot')}") from exc
    budgets = list(dict.fromkeys(r.budget for r in results))
    figure = Figure(figsize=(6.5 * len(budgets), 4.6), dpi=110, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, len(budgets), squeeze=False)[0]
    shown = 0
    for ax, budget in zip(axes, budgets, strict=True):
        for n, result in enumerate(r for r in results if r.budget == budget):
            lengths = sorted(len(c) for c in result.curves)
            longest = lengths[(len(lengths) - 1) // 2] if lengths else 0
            shown = max(shown, longest)
            mean = []
            for turn in range(longest):
                reached = [c[turn] for c in result.curves if len(c) > turn]
                mean.append(sum(reached) / len(reached))
            ax.plot(range(1, longest + 1), mean, linestyle=STYLES[n % len(STYLES)], label=result.chain)
        ax.set_title(f"billed input tokens so far, budget {_budget_label(budget)}", fontsize=10)
        ax.set_xlabel("requests (turns and tool rounds)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
        ax.set_xlim(1, max(shown, 2))
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    # Once for every panel (each one's own would run into its neighbour's): the requests replayed are the same.
    figure.supxlabel(f"mean over the conversations still going, to the median conversation's "
                     f"{plural(shown, 'request')}", fontsize=9)
    return figure


def save_chart(draw: Callable[[str], None], path: str) -> str | None:
    """Draw a chart to ``path`` (stdout flushed first, so the table comes before any message); what went wrong, or
    None (then a note on stderr says where it was written)."""
    sys.stdout.flush()
    try:
        draw(path)
    except PlotUnavailable as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot write the chart to {path}: {exc.strerror or exc}"
    print(f"chart written to {path}", file=sys.stderr)
    return None
