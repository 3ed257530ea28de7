"""The human table: grouped by budget, numbers and percentages, and over-budget rows never hidden."""

from __future__ import annotations

from ctxwin.cli._bench import WIDTH, table
from ctxwin.cli._bench.runner import BenchResult


def result(strategy: str, budget: int, tokens: int, **extra: int) -> BenchResult:
    row = BenchResult(strategy, budget, conversations=4, seconds=0.02, tokens_used=tokens, intact_conversations=4)
    row.recent_turns = [1.0, 0.5, 0.25, 0.25]
    for name, value in extra.items():
        setattr(row, name, value)
    return row


def test_grouped_by_budget_with_numbers_and_percentages() -> None:
    rows = [result("last", 4000, 3998), result("fit", 4000, 3000), result("last", 16000, 15500)]
    lines = table(rows, "heading", 1.25)
    text = "\n".join(lines)
    assert text.index("budget 4,000 input tokens") < text.index("budget 16,000 input tokens")
    four = lines[lines.index("budget 4,000 input tokens") + 2]
    assert four.split()[:2] == ["last", "5.00"]  # ms per conversation: 20 ms over 4 conversations
    assert "3,998 / 4,000 100.0%" in four and "50%" in four  # mean of the recent-turn fractions
    assert "15,500 / 16,000  96.9%" in text
    assert "!" not in text.replace("! over budget", "")
    assert all(len(line) <= WIDTH for line in lines)
    assert lines[-1] == "12 plans in 1.2 s (recounts and warm-up included)"


def test_over_budget_is_marked_and_explained() -> None:
    flagged = result("summarize+trim", 300, 423, over_budget=2)
    flagged.first_warning = "does not fit: 423 tokens for a budget of 300"
    bug = result("last", 300, 310, over_budget=1, over_budget_unflagged=1)
    text = "\n".join(table([flagged, bug], "heading", 0.5))
    assert "423 / 300 141.0% !" in text and "310 / 300 103.3% !!" in text
    assert "! summarize+trim at 300: 2 of 4 conversations over budget, each reported by the planner" in text
    assert "does not fit: 423 tokens" in text
    assert "last at 300: 1 of 4 conversations over budget; 1 of them planned as fitting: a ctxwin bug" in text


def test_nothing_to_measure_shows_a_dash() -> None:
    row = result("last", 4000, 100)
    row.recent_turns = []
    (line,) = [x for x in table([row], "heading", 0.1) if x.strip().startswith("last")]
    assert line.split()[6] == "–"  # turns kept: no conversation had a user message
