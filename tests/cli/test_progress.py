"""The progress bar ``ctxwin fit`` draws on a terminal counts the conversations fitted apart from the errors: a
real pseudo-terminal as stderr, read as a person would see it."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest
from cli_support import CHAT, ENV, FAST, command


def terminal_stderr(*args: str) -> tuple[int, str]:
    """Run ``ctxwin ARGS`` with stderr on a pseudo-terminal; its exit code and what the terminal showed."""
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(command(*args), stdout=subprocess.DEVNULL, stderr=follower, env=ENV, timeout=120)
    finally:
        os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's other end is closed and everything was read
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    return done.returncode, shown.decode("utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_bar_counts_what_was_fitted_apart_from_the_errors(tmp_path: Path, workers: str) -> None:
    lines = [json.dumps(CHAT)] * 60
    lines[10:10] = ["{not json"]
    lines[40:40] = ['{"messages": 3}']
    source = tmp_path / "many.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, shown = terminal_stderr("fit", str(source), *FAST, "--workers", workers, "-o", str(tmp_path / "out.jsonl"))
    assert code == 1  # the two bad lines
    last = shown.replace("\r\n", "\n").split("\n")
    final = [part for line in last for part in line.split("\r") if part.startswith("fitted ")][-1]
    assert final == "fitted 60, 2 errors", shown
