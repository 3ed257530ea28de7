"""docs/quickstart.md runs as written: its python blocks in order in one namespace, its `ctxwin` commands as
subprocesses on copies of the example files they name."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "quickstart.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.M | re.S)


def blocks(language: str, text: str | None = None) -> list[str]:
    """The bodies of the page's fenced blocks in ``language``, in order."""
    return [body for lang, body in BLOCK.findall(PAGE.read_text(encoding="utf-8") if text is None else text)
            if lang == language]


def commands(text: str | None = None) -> list[list[str]]:
    """The ``$ ctxwin ...`` lines of the page's console blocks, split as a shell would (the install line is not
    one of them)."""
    return [shlex.split(line[2:]) for body in blocks("console", text) for line in body.splitlines()
            if line.startswith("$ ctxwin ")]


def test_the_blocks_are_found() -> None:
    text = "```python\nx = 1\n```\n\n```console\n$ pip install ctxwin\n$ ctxwin count a.json -m gpt-4o\n```\n"
    assert blocks("python", text) == ["x = 1\n"]
    assert commands(text) == [["ctxwin", "count", "a.json", "-m", "gpt-4o"]]
    assert len(blocks("python")) >= 4 and len(commands()) >= 2


@pytest.mark.slow
def test_the_python_snippets_run_in_order() -> None:
    namespace: dict[str, object] = {"__name__": "quickstart"}
    for number, body in enumerate(blocks("python"), 1):
        # The traceback names the block that broke by the file name given here.
        exec(compile(body, f"docs/quickstart.md python block {number}", "exec"), namespace)


@pytest.mark.slow
def test_the_cli_commands_run(tmp_path: Path) -> None:
    for argv in commands():
        for argument in argv:
            if argument.startswith("examples/"):
                (tmp_path / "examples").mkdir(exist_ok=True)
                shutil.copy(ROOT / argument, tmp_path / argument)
        done = subprocess.run([sys.executable, "-m", "ctxwin", *argv[1:]], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, f"{shlex.join(argv)} exited {done.returncode}: {done.stderr}"
    assert (tmp_path / "fitted.json").stat().st_size > 0

