"""`ctxwin fit` as a real subprocess: single conversations, JSONL batches, reports and errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxwin.counters import get_counter
from ctxwin.messages import convert_to_messages

ROOT = Path(__file__).resolve().parents[2]
LONG = ROOT / "examples" / "long_conversation.json"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {"CTXWIN_LOAD_PLUGINS": "", "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "ctxwin.cli", *args], capture_output=True, text=True, timeout=120, env=env
    )


def test_fit_writes_a_conversation_that_fits(tmp_path: Path) -> None:
    out = tmp_path / "fitted.json"
    result = run("fit", str(LONG), "-m", "gpt-4o-mini", "--context-window", "6000", "--reserve", "1000", "-o", str(out))
    assert result.returncode == 0, result.stderr
    fitted = json.loads(out.read_text(encoding="utf-8"))
    tokens = get_counter("gpt-4o-mini").count_messages(convert_to_messages(fitted))
    assert tokens <= 5000
    original = json.loads(LONG.read_text(encoding="utf-8"))
    assert fitted[0] == original[0] and fitted[-1] == original[-1]
    assert "fits:" in result.stderr and "[S" in result.stderr and "reserved output 1,000" in result.stderr
    verdict = next(line for line in result.stderr.splitlines() if line.startswith("fits:"))
    assert f", {round(100 * tokens / 5000)}% of an input budget of 5,000 " in verdict  # the budget-use figure
    assert any(line.endswith(" recent turns verbatim") for line in result.stderr.splitlines())


@pytest.mark.slow
def test_fit_json_report_accounts_for_the_tokens() -> None:
    result = run("fit", str(LONG), "-m", "gpt-4o-mini", "--context-window", "6000", "--reserve", "1000", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["fits"] and report["messages"]
    steps = report["steps"]
    assert steps[0]["tokens_before"] == report["tokens_before"]
    assert steps[-1]["tokens_after"] == report["tokens_after"]
    assert report["tokens_after"] == get_counter("gpt-4o-mini").count_messages(convert_to_messages(report["messages"]))


@pytest.mark.slow
def test_fit_many_keeps_order_and_reports_bad_lines(tmp_path: Path) -> None:
    conversation: list[dict[str, Any]] = json.loads(LONG.read_text(encoding="utf-8"))
    lines = [
        json.dumps(conversation[:20]),
        "not json",
        json.dumps({"messages": [{"role": "ghost", "content": "x"}]}),
        json.dumps({"messages": conversation}),
    ]
    source = tmp_path / "many.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = run(
        "fit", str(source), "-m", "gpt-4o-mini", "--context-window", "4000", "--reserve", "500", "-o", str(out)
    )
    assert result.returncode == 1
    assert f"{source}:2: not valid JSON" in result.stderr
    assert f"{source}:3: messages[0]: unexpected message type: 'ghost'" in result.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [row["ctxwin"]["line"] for row in rows] == [1, 4]
    assert all(row["ctxwin"]["plan"]["fits"] for row in rows)
    counter = get_counter("gpt-4o-mini")
    assert all(counter.count_messages(convert_to_messages(row["messages"])) <= 3500 for row in rows)


@pytest.mark.slow
def test_usage_errors_exit_2_naming_the_flag() -> None:
    unknown = run("fit", str(LONG), "-m", "gpt-99-ultra")
    assert unknown.returncode == 2 and unknown.stderr.startswith("ctxwin fit: error: --model: unknown model")
    no_window = run("fit", str(LONG), "--counter", "tiktoken:o200k_base")
    assert no_window.returncode == 2 and "error: --context-window: is needed with --counter" in no_window.stderr
    bad_strategy = run("fit", str(LONG), "-m", "gpt-4o", "--strategy", "shred")
    assert bad_strategy.returncode == 2
    assert "error: --strategies/--strategy: strategies[0]: unknown strategy 'shred'" in bad_strategy.stderr
    for result in (unknown, no_window, bad_strategy):
        assert len(result.stderr.splitlines()) == 1 and not result.stdout


@pytest.mark.slow
def test_fit_shows_the_ledger_by_kind_with_sources_and_ledger_share_turns_it_off(tmp_path: Path) -> None:
    said = [{"role": "system", "content": "You help the platform team."},
            {"role": "user", "content": "Never restart payments-api during business hours."},
            {"role": "assistant", "content": "Understood."}]
    for turn in range(30):
        said += [{"role": "user", "content": f"Turn {turn}: the export is slow again. " + "We checked it. " * 30},
                 {"role": "assistant", "content": "Looking into it. " * 30}]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(said), encoding="utf-8")
    shown = run("fit", str(path), "-m", "gpt-4o-mini", "--context-window", "2000", "--reserve", "0",
                "-o", str(tmp_path / "out.json"))
    assert shown.returncode == 0, shown.stderr
    assert "  rule from #1 (carried): Never restart payments-api during business hours." in shown.stderr
    assert "payments-api" in (tmp_path / "out.json").read_text(encoding="utf-8")
    off = run("fit", str(path), "-m", "gpt-4o-mini", "--context-window", "2000", "--reserve", "0",
              "--ledger-share", "0", "-o", str(tmp_path / "off.json"))
    assert off.returncode == 0, off.stderr
    assert "ledger:" not in off.stderr and "payments-api" not in (tmp_path / "off.json").read_text(encoding="utf-8")
