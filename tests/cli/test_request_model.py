"""The model a request file names (``"model": ...``) is the one ``ctxwin fit`` and ``ctxwin count`` plan and count
for when the command line names none; a ``--model`` given wins, with a warning; a ``--context-window`` above the
model's own is a usage error (real subprocesses)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import assert_one_line_errors, run, write_json

from ctxwin.counters import get_counter, get_model
from ctxwin.planner import Planner

pytestmark = pytest.mark.slow

CLAUDE = "claude-sonnet-4-5-20250929"  # a dated snapshot, as an SDK call names it
HISTORY = [
    message
    for i in range(12)
    for message in (
        {"role": "user", "content": f"Question {i}: what changed in release {i}.{i * 7}?"},
        {"role": "assistant", "content": f"Release {i} fixed issue #{1000 + i} in src/module_{i}.py."},
    )
]


def anthropic_request(**extra: Any) -> dict[str, Any]:
    return {"model": CLAUDE, "system": "Answer in one line.", "messages": HISTORY, **extra}


def test_fit_plans_for_the_model_the_request_names(tmp_path: Path) -> None:
    source, out = write_json(tmp_path / "req.json", anthropic_request()), tmp_path / "out.json"
    result = run("fit", str(source), "--json", "-o", str(out))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    claude = Planner(CLAUDE, output="request").for_request(anthropic_request())  # as fit plans the request
    assert report["model"] == get_model(CLAUDE).name == claude.model
    assert report["counter"] == claude.counter.name
    assert report["context_window"] == claude.budget.context_window
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["max_tokens"] == report["reserve_output"] == claude.budget.reserve_output
    assert written["model"] == CLAUDE


def test_count_counts_with_the_model_the_request_names(tmp_path: Path) -> None:
    source = write_json(tmp_path / "req.json", anthropic_request())
    result = run("count", str(source), "--json")
    assert result.returncode == 0, result.stderr
    [report] = json.loads(result.stdout)["conversations"]
    assert report["counter"] == get_counter(get_model(CLAUDE).counter).name
    assert report["model"]["name"] == get_model(CLAUDE).name
    given = run("count", str(source), "--json", "-c", "approximate")  # a counter given wins
    [plain] = json.loads(given.stdout)["conversations"]
    assert plain["counter"] == "approximate" and "model" not in plain


def test_a_model_given_wins_over_the_files_with_a_warning(tmp_path: Path) -> None:
    source = write_json(tmp_path / "req.json", anthropic_request())
    result = run("fit", str(source), "-m", "gpt-4o-mini", "--json", "-o", str(tmp_path / "out.json"))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["model"] == "gpt-4o-mini"
    [warning] = result.stderr.splitlines()
    assert warning.startswith("warning: ") and CLAUDE in warning and "--model gpt-4o-mini" in warning
    same = run("fit", str(source), "-m", "claude-sonnet-4-5", "-o", str(tmp_path / "out.json"))
    assert "warning" not in same.stderr  # the same model, written another way


def test_each_jsonl_line_is_fitted_for_its_own_model(tmp_path: Path) -> None:
    lines = [anthropic_request(), {"messages": HISTORY}, {"model": "gpt-4o-mini", "messages": HISTORY}]
    source = tmp_path / "many.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    for workers in ("1", "2"):
        result = run("fit", str(source), "--json", "-w", workers)
        assert result.returncode == 0, result.stderr
        plans = [json.loads(line)["ctxwin"]["plan"] for line in result.stdout.splitlines()]
        assert [plan["model"] for plan in plans] == [get_model(CLAUDE).name, "gpt-4o", "gpt-4o-mini"]


def test_a_model_the_registry_does_not_know_is_the_requests_error(tmp_path: Path) -> None:
    source = write_json(tmp_path / "req.json", {"model": "acme-llm-7", "messages": HISTORY})
    for command in ("fit", "count"):
        result = run(command, str(source))
        assert result.returncode == 1 and result.stdout == ""
        assert_one_line_errors(result.stderr)
        [line] = result.stderr.splitlines()
        assert "'acme-llm-7'" in line and "--model" in line and str(source) in line
    assert run("fit", str(source), "-m", "gpt-4o-mini").returncode == 0


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["-m", "gpt-4o-mini", "--context-window", "200k"], "gpt-4o-mini's context window of 128,000"),
        (["--context-window", "150k"], "gpt-4o's context window of 128,000"),  # fit's default model
        (["-m", "gpt-4", "--context-window", "9000"], "gpt-4's context window of 8,192"),
    ],
)
def test_a_context_window_above_the_models_is_a_usage_error(tmp_path: Path, args: list[str], named: str) -> None:
    source, out = write_json(tmp_path / "chat.json", HISTORY), tmp_path / "out.json"
    result = run("fit", str(source), *args, "-o", str(out))
    assert result.returncode == 2 and not out.exists()
    [line] = result.stderr.splitlines()
    assert line.startswith("ctxwin fit: error: --context-window: ") and named in line


def test_a_context_window_above_the_requests_model_is_a_usage_error(tmp_path: Path) -> None:
    source = write_json(tmp_path / "req.json", anthropic_request())
    result = run("fit", str(source), "--context-window", "250k")
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert "--context-window: context_window 250,000" in line and "context window of 200,000" in line
    assert "req.json" in line
    assert run("fit", str(source), "--context-window", "150k").returncode == 0  # above gpt-4o's: not the model
