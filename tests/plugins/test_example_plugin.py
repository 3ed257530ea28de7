"""examples/plugin installed with real pip into a temporary location, discovered by entry point in subprocesses.

Built with ``--no-build-isolation --no-deps`` so nothing is downloaded: the venv's setuptools (plus ``wheel``
for setuptools < 70.1) builds it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "plugin"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("example-plugin")
    source = work / "src"
    shutil.copytree(EXAMPLE, source)  # build outside the repository: setuptools writes build/ and egg-info
    target = work / "site"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index",
         "--no-build-isolation", "--no-deps", "--target", str(target), str(source)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, f"pip install failed (the dev extra needs 'wheel'):\n{result.stderr}"
    # A second, broken distribution: its entry point module raises on import.
    broken = target / "ctxwin_broken-1.0.dist-info"
    broken.mkdir()
    (broken / "METADATA").write_text("Metadata-Version: 2.1\nName: ctxwin-broken\nVersion: 1.0\n")
    (broken / "entry_points.txt").write_text("[ctxwin]\nbroken = ctxwin_broken_plugin\n")
    (target / "ctxwin_broken_plugin.py").write_text("raise ImportError('this plugin is broken on purpose')\n")
    return target


def run(site: Path, code_or_args: list[str], load: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CTXWIN_LOAD_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    if load is not None:
        env["CTXWIN_LOAD_PLUGINS"] = load
    return subprocess.run([sys.executable, *code_or_args], capture_output=True, text=True, env=env, timeout=60)


def test_listed_by_ctxwin_counters(site: Path) -> None:
    result = run(site, ["-m", "ctxwin.cli", "counters", "--json"], load=None)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    words = next(c for c in report["counters"] if c["name"] == "words")
    assert words["plugin"] == "wordcount" and words["source"] == "ctxwin-wordcount 0.1.0"
    assert {"approximate", "tiktoken", "hf"} <= {c["name"] for c in report["counters"]}
    # the broken distribution is reported by name, and did not stop the example plugin
    assert [(e["plugin"], e["stage"]) for e in report["plugin_errors"]] == [("broken", "load")]
    assert "broken on purpose" in report["plugin_errors"][0]["error"]
    assert "plugin 'broken' failed in load" in result.stderr  # the warning


def test_found_by_get_counter_and_get_model(site: Path) -> None:
    code = ("from ctxwin.registry import get_counter, get_model; from ctxwin.messages import HumanMessage;"
            "c = get_counter('words'); print(c.count_text('one two three'), get_counter('words:2').count_text('a b'),"
            "get_model('wordy-latest').name, get_counter('wordy-1').count_messages([HumanMessage('hi there')]))")
    result = run(site, ["-c", code], load="ctxwin-wordcount")
    assert result.returncode == 0, result.stderr
    # count_messages: 3 per message + "user" (1 word) + "hi there" (2 words) + 3 to prime the reply
    assert result.stdout.split() == ["3", "4", "wordy-1", str(3 + 1 + 2 + 3)]
    assert "broken" not in result.stderr  # not selected by CTXWIN_LOAD_PLUGINS


def test_ctxwin_load_plugins_empty_loads_none(site: Path) -> None:
    result = run(site, ["-m", "ctxwin.cli", "counters", "--json"], load="")
    report = json.loads(result.stdout)
    assert "words" not in {c["name"] for c in report["counters"]} and report["plugin_errors"] == []
    count = run(site, ["-m", "ctxwin.cli", "count", "-", "--counter", "words"], load="")
    assert count.returncode == 2 and "error: --counter: unknown counter or model 'words'" in count.stderr
