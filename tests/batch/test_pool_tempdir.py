"""Worker pools under a deep temporary directory: the forkserver's AF_UNIX socket path would pass the kernel's cap
there, so the pool starts its workers another way instead of failing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxwin.batch._pool import start_method

START_A_POOL = """
from ctxwin.batch._pool import WorkerPool, _ready
pool = WorkerPool(2, dict)
try:
    print(pool.submit(_ready).result())
finally:
    pool.shutdown()
"""


def deep(tmp_path: Path, length: int) -> Path:
    folder = tmp_path / ("d" * max(1, length - len(str(tmp_path)) - 1))
    folder.mkdir()
    return folder


def test_the_start_method_leaves_the_forkserver_where_its_socket_path_would_pass_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(deep(tmp_path, 90)))
    assert start_method() == "spawn"
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path.anchor))
    assert start_method() == ("forkserver" if sys.platform == "linux" else start_method())


@pytest.mark.slow
def test_a_pool_starts_under_a_temporary_directory_too_deep_for_a_unix_socket(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(deep(tmp_path, 95)), "CTXWIN_LOAD_PLUGINS": ""}
    done = subprocess.run([sys.executable, "-c", START_A_POOL], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "AF_UNIX" not in done.stderr
