"""examples/plugin installed with real pip into a temporary location, discovered by entry point in subprocesses.

Built with ``--no-build-isolation --no-deps`` so nothing is downloaded: the venv's setuptools (plus ``wheel``
for setuptools < 70.1) builds it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
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
    # Broken distributions: their entry point modules raise on import (issue 19: SystemExit and KeyboardInterrupt
    # ended the host process), or take long enough to import that the user presses Ctrl-C.
    for name, code in BROKEN.items():
        install_module_plugin(target, name, code)
    return target


BROKEN = {
    "broken": "raise ImportError('this plugin is broken on purpose')\n",
    "exits": "import sys\nsys.exit('leaving at import')\n",
    "interrupts": "raise KeyboardInterrupt('not the user')\n",
}
ALL_BROKEN = "broken, exits ,interrupts"


def install_module_plugin(target: Path, name: str, code: str) -> None:
    """A distribution ``ctxwin-<name>`` whose ``ctxwin`` entry point ``<name>`` is a module running ``code``."""
    dist_info = target / f"ctxwin_{name}-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: ctxwin-{name}\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(f"[ctxwin]\n{name} = ctxwin_{name}_plugin\n")
    (target / f"ctxwin_{name}_plugin.py").write_text(code)


def run(site: Path, code_or_args: list[str], load: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CTXWIN_LOAD_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    if load is not None:
        env["CTXWIN_LOAD_PLUGINS"] = load
    return subprocess.run([sys.executable, *code_or_args], capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.slow
def test_listed_by_ctxwin_counters(site: Path) -> None:
    result = run(site, ["-m", "ctxwin.cli", "counters", "--json"], load=f" ctxwin-wordcount,{ALL_BROKEN}, ")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    words = next(c for c in report["counters"] if c["name"] == "words")
    assert words["plugin"] == "wordcount" and words["source"] == "ctxwin-wordcount 0.1.0"
    assert {"approximate", "tiktoken", "hf"} <= {c["name"] for c in report["counters"]}
    # the built-in families name the engine that counts each tokenizer and why; a plugin's counter has its own
    engines = {c["name"]: c["engine"] for c in report["counters"]}
    assert engines["words"] == "" and engines["deepseek"].startswith("deepseek-v3: ")
    assert "tiktoken:o200k_base: tiktoken " in engines["tiktoken"] and "documents" in engines["deepseek"]
    # each broken distribution is reported by name, and none stopped the example plugin or the process
    errors = {e["plugin"]: e["error"] for e in report["plugin_errors"]}
    assert {e["stage"] for e in report["plugin_errors"]} == {"load"}
    assert errors == {
        "broken": "ImportError: this plugin is broken on purpose",
        "exits": "SystemExit: leaving at import",
        "interrupts": "KeyboardInterrupt: not the user",
    }
    assert "PluginWarning" not in result.stderr  # reported once, in the listing: no raw warnings


@pytest.mark.slow
def test_ctxwin_load_plugins_ignores_spaces_and_empty_items(site: Path) -> None:
    """Issue 19: "a, b" looked for a plugin named " b"."""
    result = run(site, ["-m", "ctxwin.cli", "counters", "--json"], load=" ctxwin-wordcount , ,Broken ,")
    report = json.loads(result.stdout)
    assert "words" in {c["name"] for c in report["counters"]}
    assert [e["plugin"] for e in report["plugin_errors"]] == ["broken"]  # selected too, and nothing "not installed"


@pytest.mark.slow
def test_a_real_ctrl_c_while_a_plugin_imports_still_interrupts(tmp_path: Path) -> None:
    """A plugin raising KeyboardInterrupt is an error like any other; the user's own Ctrl-C is not swallowed."""
    install_module_plugin(tmp_path, "slow", "import sys, time\nprint('importing', file=sys.stderr, flush=True)\n"
                                            "time.sleep(60)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
           "CTXWIN_LOAD_PLUGINS": "ctxwin-slow"}
    code = "from ctxwin.counters import get_counter; get_counter('approximate'); print('carried on')"
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env) as child:
        assert child.stderr is not None
        assert child.stderr.readline() == "importing\n"  # the plugin's import is under way
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    assert child.returncode != 0 and "KeyboardInterrupt" in err and "carried on" not in out


@pytest.mark.slow
def test_found_by_get_counter_and_get_model(site: Path) -> None:
    code = ("from ctxwin.counters import get_counter, get_model; from ctxwin.messages import HumanMessage;"
            "c = get_counter('words'); print(c.count_text('one two three'), get_counter('words:2').count_text('a b'),"
            "get_model('wordy-latest').name, get_counter('wordy-1').count_messages([HumanMessage('hi there')]))")
    result = run(site, ["-c", code], load="ctxwin-wordcount")
    assert result.returncode == 0, result.stderr
    # count_messages: 3 per message + "user" (1 word) + "hi there" (2 words) + 3 to prime the reply
    assert result.stdout.split() == ["3", "4", "wordy-1", str(3 + 1 + 2 + 3)]
    assert "broken" not in result.stderr  # not selected by CTXWIN_LOAD_PLUGINS


@pytest.mark.slow
def test_ctxwin_load_plugins_empty_loads_none(site: Path) -> None:
    result = run(site, ["-m", "ctxwin.cli", "counters", "--json"], load="")
    report = json.loads(result.stdout)
    assert "words" not in {c["name"] for c in report["counters"]} and report["plugin_errors"] == []
    count = run(site, ["-m", "ctxwin.cli", "count", "-", "--counter", "words"], load="")
    assert count.returncode == 2 and "error: --counter: unknown counter or model 'words'" in count.stderr


@pytest.mark.slow
def test_a_plugin_model_counted_by_a_rule_of_thumb_is_not_listed_as_exact(site: Path) -> None:
    """The example counter counts words and declares itself estimating: its model is not exact; a built-in model
    counted by its own tokenizer is."""
    result = run(site, ["-m", "ctxwin.cli", "models", "--json"], load="ctxwin-wordcount")
    assert result.returncode == 0, result.stderr
    exact = {m["name"]: m["exact"] for m in json.loads(result.stdout)["models"]}
    assert exact["wordy-1"] is False and exact["gpt-4o"] is True
