"""``ctxwin models`` and ``ctxwin fit`` with today's models (issue 51, item 1): a model only genai-prices knows is
listed with its window, prices and their sources, fitted to its window, and a name neither knows is one error line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from genai_prices import data_snapshot

from tests.cli.cli_support import CHAT, assert_one_line_errors, run, write_json

pytestmark = pytest.mark.slow  # subprocesses


def test_models_lists_named_models_with_their_sources() -> None:
    done = run("models", "gpt-6-sol", "kimi-k3", "gpt-4o", "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)["models"]}
    snapshot = data_snapshot.get_snapshot()
    for name in ("gpt-6-sol", "kimi-k3"):
        theirs = snapshot.find_provider_model(name, None, None, None)[1]
        assert rows[name]["context_window"] == theirs.context_window
        assert rows[name]["plugin"] == "genai-prices" and not rows[name]["exact"]
        sources = {source["figure"]: source["source"] for source in rows[name]["sources"]}
        assert sources["context_window"].startswith("genai-prices") and sources["prices"].startswith("genai-prices")
    assert rows["gpt-4o"]["exact"] and rows["gpt-4o"]["caching"]["cached_input"] == 1.25
    table = run("models", "glm-5.2")
    assert table.returncode == 0 and "window from" in table.stdout and "genai-prices" in table.stdout


def test_fit_takes_a_model_only_genai_prices_knows(tmp_path: Path) -> None:
    done = run("fit", str(write_json(tmp_path / "chat.json", CHAT)), "--model", "gemini-4-argon", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    theirs = data_snapshot.get_snapshot().find_provider_model("gemini-4-argon", None, None, None)[1]
    assert (report["model"], report["context_window"]) == ("gemini-4-argon", theirs.context_window)
    assert report["fits"] and report["counter"] == "approximate:safe,images=gemini"


def test_a_name_neither_knows_is_one_error_line() -> None:
    done = run("models", "gpt-6-sool")
    assert done.returncode == 1 and "did you mean: " in done.stderr and "gpt-6-sol" in done.stderr
    assert_one_line_errors(done.stderr)


def test_refresh_without_a_server_is_one_error_line() -> None:
    done = run("models", "gpt-4o", "--refresh-url", "http://127.0.0.1:9/data.json", "--refresh-timeout", "3")
    assert done.returncode == 1 and done.stderr.startswith("error: --refresh: model data not refreshed")
    assert_one_line_errors(done.stderr)
