"""The ``--plot`` charts are legible: no text of a chart (titles, axis labels, tick labels) is drawn over another
or outside the picture, measured on the rendered figure, with close budgets and several session panels."""

from __future__ import annotations

import importlib.util
from itertools import combinations
from typing import Any

import pytest

from ctxwin.cli._bench.billing import STANDARD_RULES
from ctxwin.cli._bench.plot import bench_figure, session_figure
from ctxwin.cli._bench.replay import SessionResult
from ctxwin.cli._bench.runner import BenchResult

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs the plot extra"),
    pytest.mark.slow,  # drawing a chart
]


def texts(figure: Any) -> list[tuple[str, Any]]:
    """Every visible, non-empty text of the rendered ``figure`` with its box in pixels."""
    figure.canvas.draw()
    found = [figure._supxlabel] if figure.get_supxlabel() else []
    for ax in figure.axes:
        found += [ax.title, ax.xaxis.label, ax.yaxis.label, *shown_ticks(ax.get_xticklabels(), ax.get_xlim(), 0),
                  *shown_ticks(ax.get_yticklabels(), ax.get_ylim(), 1)]
    return [(text.get_text(), text.get_window_extent()) for text in found if text.get_visible() and text.get_text()]


def shown_ticks(labels: list[Any], limits: tuple[float, float], axis: int) -> list[Any]:
    """The tick labels within the axis's limits: matplotlib draws no others."""
    low, high = sorted(limits)
    slack = (high - low) * 1e-9
    return [label for label in labels if low - slack <= label.get_position()[axis] <= high + slack]


def assert_legible(figure: Any) -> None:
    drawn = texts(figure)
    assert drawn
    picture = figure.bbox
    for label, box in drawn:
        assert picture.x0 - 1 <= box.x0 and box.x1 <= picture.x1 + 1, f"{label!r} runs off the picture"
    for (a, box_a), (b, box_b) in combinations(drawn, 2):
        assert not box_a.overlaps(box_b), f"{a!r} is drawn over {b!r}"


def bench_results(budgets: list[int]) -> list[BenchResult]:
    results = []
    for chain in ("last", "summarize+trim", "fit"):
        for budget in budgets:
            result = BenchResult(chain, budget, conversations=2, seconds=0.01, tokens_used=budget,
                                 tokens_total=2 * budget - 10, intact_conversations=2)
            result.recent_turns, result.facts_shares = [0.5, 0.7], [0.4, 0.9]
            results.append(result)
    return results


@pytest.mark.parametrize("budgets", [[4_000, 16_000, 64_000], [4_000, 4_100, 4_200, 4_300, 5_000, 64_000]])
def test_the_bench_chart_writes_no_label_over_another(budgets: list[int]) -> None:
    assert_legible(bench_figure(bench_results(budgets)))


@pytest.mark.parametrize("budgets", [[20_000], [3_000, 6_000], [2_000, 8_000, 32_000]])
def test_the_session_chart_writes_no_label_over_another(budgets: list[int]) -> None:
    results = []
    for budget in budgets:
        for chain in ("sliding", "refit", "session"):
            curves = [[1_000.0 * i for i in range(1, 26)], [900.0 * i for i in range(1, 30)]]
            results.append(SessionResult(chain, budget, STANDARD_RULES, conversations=2, curves=curves))
    assert_legible(session_figure(results))
