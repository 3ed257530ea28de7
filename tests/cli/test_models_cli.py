"""``ctxwin models`` lists a model as exact only when its counter's registration declares it (real subprocesses,
a real installed plugin)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import plugin_site, run

PLUGIN = """
from ctxwin import BaseTokenCounter, ModelSpec, hookimpl

class ThirdOfChars(BaseTokenCounter):
    name = "thirds"
    def count_text(self, text):
        return len(text) // 3

class Words(BaseTokenCounter):
    name = "words"
    def count_text(self, text):
        return len(text.split())

@hookimpl
def register_counters(register):
    register("thirds", lambda arg: ThirdOfChars())
    register("words", lambda arg: Words(), exact=True)  # what the plugin's own model is trained on, say

@hookimpl
def register_models(register):
    register(ModelSpec("acme-guess", context_window=8000, max_output_tokens=1000, counter="thirds"))
    register(ModelSpec("acme-words", context_window=8000, max_output_tokens=1000, counter="words"))
"""


@pytest.mark.slow
def test_exactness_is_declared_not_assumed(tmp_path: Path) -> None:
    env = plugin_site(tmp_path / "site", "acme", PLUGIN)
    result = run("models", "--json", env=env)
    assert result.returncode == 0 and result.stderr == ""
    exact = {row["name"]: row["exact"] for row in json.loads(result.stdout)["models"]}
    assert exact["acme-guess"] is False and exact["acme-words"] is True
    assert exact["gpt-4o"] is True and exact["claude-sonnet-4-5"] is False  # the built-ins declare theirs
    table = run("models", env=env).stdout.splitlines()
    assert next(line for line in table if line.startswith("acme-guess")).split()[4] == "no"


@pytest.mark.slow
def test_a_declaration_that_is_not_a_bool_is_the_plugins_error(tmp_path: Path) -> None:
    module = PLUGIN.replace("exact=True", "exact='yes'")
    result = run("counters", "--json", env=plugin_site(tmp_path / "site", "acme", module))
    assert result.returncode == 0
    [problem] = [e for e in json.loads(result.stdout)["plugin_errors"] if e["stage"] == "register_counters"]
    assert problem["plugin"] == "acme" and "exact must be a bool, got str" in problem["error"]
