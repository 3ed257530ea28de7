"""Running the real ``ctxwin`` command in a subprocess, and the checks every failure must pass."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# The approximate counter loads no tokenizer data: a subprocess starts in under a second.
FAST = ["-c", "approximate", "--context-window", "4k", "--reserve", "500"]
ENV = {"CTXWIN_LOAD_PLUGINS": "", "PATH": "/usr/bin:/bin"}
CHAT = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "hello"},
]


def command(*args: str, module: str = "ctxwin") -> list[str]:
    return [sys.executable, "-m", module, *args]


def run(
    *args: str, stdin: str | bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m ctxwin ARGS``; text out, stdin as given."""
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    done = subprocess.run(command(*args), capture_output=True, input=data, timeout=120, env={**ENV, **(env or {})})
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    )


def assert_one_line_errors(stderr: str) -> None:
    """No traceback; every line a one-line problem report (a usage error is ``ctxwin CMD: error: --flag: ...``, with
    no usage block)."""
    assert "Traceback" not in stderr and "a ctxwin bug" not in stderr, stderr
    for line in stderr.splitlines():
        assert line.startswith(("error: ", "warning: ", "ctxwin ")), line


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path


def leftovers(folder: Path) -> list[str]:
    """Temporary output files left in ``folder``."""
    return sorted(name for name in os.listdir(folder) if ".ctxwin-tmp-" in name)


def plugin_site(folder: Path, name: str, module: str) -> dict[str, str]:
    """An installed plugin distribution ``name`` whose entry point is the module text ``module``; the environment
    that loads it (and only it)."""
    info = folder / f"ctxwin_{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: ctxwin-{name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[ctxwin]\n{name} = ctxwin_{name}_plugin\n")
    (folder / f"ctxwin_{name}_plugin.py").write_text(module)
    return {"PYTHONPATH": str(folder), "CTXWIN_LOAD_PLUGINS": name}
