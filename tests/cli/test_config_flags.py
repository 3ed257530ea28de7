"""The command line and ``FitConfig`` are one configuration: a flag per option (its name in kebab case, the older
names kept), ``--config FILE`` with flags laid over it in ``fit``, ``count`` and ``bench``, the same checks as in
Python reported as usage errors naming the flag or the file, every empty value refused by its flag, and the reserve
written as the request's reply limit."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import CHAT, run, write_json

from ctxwin import FitConfig
from ctxwin.cli._main import build_parser, main

HISTORY = [{"role": "system", "content": "You are terse."}] + [
    {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}: " + "word " * 300} for i in range(31)
]


def parser_of(command: str) -> argparse.ArgumentParser:
    parser = build_parser([command])
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    chosen: argparse.ArgumentParser = subparsers.choices[command]
    return chosen


def flags_of(command: str) -> dict[str, argparse.Action]:
    return {name: action for action in parser_of(command)._actions for name in action.option_strings}


def test_every_option_has_a_flag_of_its_name_and_the_older_names_stay() -> None:
    flags = flags_of("fit")
    for field in dataclasses.fields(FitConfig):
        if field.name != "output":  # -o/--output is the file written; each request keeps its own form
            assert flags[f"--{field.name.replace('_', '-')}"].dest == field.name
    for alias, option in (("--reserve", "reserve_output"), ("--strategy", "strategies"), ("-m", "model"),
                          ("-c", "counter"), ("--summarize", "summarizer")):
        assert flags[alias].dest == option
    assert {"--no-strict", "--no-cache-stable", "--no-cache-control", "--config"} <= set(flags)
    assert {"--config", "--model", "--counter", "--tools"} <= set(flags_of("count"))
    assert {"--config", "--model", "--keep-last", "--recall-share", "--low-water"} <= set(flags_of("bench"))


def value_flags(command: str) -> list[str]:
    """Every flag of ``command`` that takes a value, by its first name."""
    actions = {id(a): a for a in flags_of(command).values()}.values()
    return [a.option_strings[0] for a in actions if a.nargs != 0 and a.option_strings and a.dest != "help"]


@pytest.mark.parametrize("command", ["fit", "count", "bench"])
def test_an_empty_value_is_a_usage_error_naming_its_flag(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = str(write_json(tmp_path / "chat.json", CHAT))
    flags = value_flags(command)
    assert len(flags) >= (20 if command != "count" else 4)
    for flag in flags:
        for empty in ("", "  "):
            assert main([command, source, flag, empty]) == 2, flag
            err = capsys.readouterr().err
            assert err.startswith(f"ctxwin {command}: error: {flag}") and "empty value" in err, (flag, err)
    assert main([command, ""]) == 2 and "file: expected a file name, got an empty value" in capsys.readouterr().err


def test_a_billing_without_session_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = str(write_json(tmp_path / "chat.json", CHAT))
    assert main(["bench", source, "-c", "approximate", "--billing", "nonsense"]) == 2
    assert capsys.readouterr().err.startswith("ctxwin bench: error: --billing: bills the replays of --session")


def test_config_errors_name_the_file_or_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = str(write_json(tmp_path / "chat.json", CHAT))
    config = tmp_path / "c.toml"
    config.write_text('model = "gpt-4o"\nreserve = 1000\n', encoding="utf-8")
    assert main(["fit", source, "--config", str(config)]) == 2
    assert "--config: " in (err := capsys.readouterr().err) and "unknown option 'reserve'" in err
    assert "'reserve_output'" in err
    config.write_text('model = "gpt-4o"\ncontext_window = 1_000_000\n', encoding="utf-8")
    assert main(["fit", source, "--config", str(config)]) == 2
    assert f"error: --config {config}: context_window 1,000,000 is more than gpt-4o's" in capsys.readouterr().err
    assert main(["fit", source, "-m", "gpt-4o", "--context-window", "1000k"]) == 2
    assert "error: --context-window: context_window 1,000,000" in capsys.readouterr().err
    assert main(["fit", source, "--config", str(tmp_path / "missing.toml")]) == 2
    assert "error: --config: " in capsys.readouterr().err


@pytest.mark.slow
def test_fit_count_and_bench_read_a_config_and_flags_override_it(tmp_path: Path) -> None:
    source = write_json(tmp_path / "req.json", {"model": "gpt-4o", "max_tokens": 4_000, "messages": HISTORY})
    config = tmp_path / "fit.toml"
    FitConfig(model="gpt-4o-mini", context_window=8_000, reserve_output=1_500, keep_first=None,
              strategies=["truncate_tool_output", "trim"]).save(config)
    by_file = run("fit", str(source), "--config", str(config), "--json", "-o", str(tmp_path / "a.json"))
    assert by_file.returncode == 0, by_file.stderr
    report = json.loads(by_file.stdout)
    assert (report["model"], report["context_window"], report["reserve_output"]) == ("gpt-4o-mini", 8_000, 1_500)
    assert [step["name"] for step in report["steps"]] == ["truncate_tool_output", "trim"]
    overridden = run("fit", str(source), "--config", str(config), "--reserve", "2k", "--json",
                     "-o", str(tmp_path / "b.json"))
    assert json.loads(overridden.stdout)["reserve_output"] == 2_000
    assert json.loads((tmp_path / "b.json").read_text(encoding="utf-8"))["max_tokens"] == 2_000
    too_large = tmp_path / "large.json"
    too_large.write_text(json.dumps({"model": "gpt-4o-mini", "context_window": 1_000_000}), encoding="utf-8")
    flag_wins = run("fit", str(source), "--config", str(too_large), "--context-window", "100k", "--json")
    assert flag_wins.returncode == 0 and json.loads(flag_wins.stdout)["context_window"] == 100_000
    counted = run("count", str(source), "--config", str(config), "--json")
    assert json.loads(counted.stdout)["conversations"][0]["model"]["name"] == "gpt-4o-mini"
    bench = run("bench", str(source), "--config", str(config), "--budgets", "3k", "--strategies", "fit", "--json")
    assert bench.returncode == 0, bench.stderr
    [row] = json.loads(bench.stdout)["results"]
    assert row["budget"] == 3_000 and row["tokens_used"] <= 3_000


def _request(form: str, limit: int) -> dict[str, Any]:
    chat = HISTORY[1:]
    if form == "openai":
        return {"model": "gpt-4o", "max_tokens": limit, "messages": HISTORY}
    if form == "responses":
        return {"model": "gpt-4o", "max_output_tokens": limit, "instructions": "You are terse.", "input": chat}
    return {"model": "claude-sonnet-4-5", "max_tokens": limit, "system": "You are terse.", "messages": chat}


@pytest.mark.slow
@pytest.mark.parametrize("form", ["openai", "responses", "anthropic"])
def test_the_reserve_is_the_reply_limit_the_written_request_carries(form: str, tmp_path: Path) -> None:
    source = write_json(tmp_path / "req.json", _request(form, 4_000))
    key = "max_output_tokens" if form == "responses" else "max_tokens"
    out = tmp_path / "out.json"
    reserved = run("fit", str(source), "--context-window", "8k", "--reserve", "1k", "-o", str(out))
    assert reserved.returncode == 0, reserved.stderr
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written[key] == 1_000 and "fits: " in reserved.stderr
    own = run("fit", str(source), "--context-window", "8k", "--json", "-o", str(out))  # no reserve: its own limit
    assert json.loads(own.stdout)["reserve_output"] == 4_000
    assert json.loads(out.read_text(encoding="utf-8"))[key] == 4_000


def test_a_python_fit_file_writes_the_reserve_as_the_reply_limit(tmp_path: Path) -> None:
    from ctxwin.cli._fit_file import fit_file

    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text(json.dumps({"model": "gpt-4o", "max_tokens": 4_000, "messages": CHAT}) + "\n", encoding="utf-8")
    fit_file(str(source), str(out), workers=1, counter="approximate", context_window=8_000, reserve_output=1_000)
    assert json.loads(out.read_text(encoding="utf-8"))["max_tokens"] == 1_000


@pytest.mark.slow
def test_a_budget_below_what_must_stay_explains_itself_on_the_command_line(tmp_path: Path) -> None:
    source = write_json(tmp_path / "chat.json", [{"role": "system", "content": "Be a pirate. " * 400}, *CHAT[1:]])
    result = run("fit", str(source), "-m", "gpt-4o", "--context-window", "2k", "--reserve", "500", "--summarize")
    assert result.returncode == 0
    assert "Traceback" not in result.stderr
    [warning] = [line for line in result.stderr.splitlines() if line.startswith("warning: does not fit")]
    assert "what must stay alone needs" in warning and "the system prompt " in warning
    assert "a context_window of at least" in warning and "summar" not in warning.split("Would help: ")[1]
