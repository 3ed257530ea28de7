"""Fixtures shared by the history tests: one of each history kind, and writer processes."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ctxwin.history._base import BaseChatMessageHistory
from ctxwin.history._jsonl import FileChatMessageHistory
from ctxwin.history._memory import InMemoryChatMessageHistory
from ctxwin.history._sqlite import SQLiteChatMessageHistory

WRITER = Path(__file__).with_name("writer.py")


@pytest.fixture(params=["memory", "jsonl", "sqlite"])
def history(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseChatMessageHistory]:
    if request.param == "memory":
        yield InMemoryChatMessageHistory()
    elif request.param == "jsonl":
        yield FileChatMessageHistory(tmp_path / "history.jsonl")
    else:
        with SQLiteChatMessageHistory(tmp_path / "history.db", "session") as store:
            yield store


@pytest.fixture
def spawn_writer() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start ``writer.py`` processes; any still running at the end of the test are killed."""
    processes: list[subprocess.Popen[str]] = []

    def spawn(kind: str, path: Path, writer: str, count: int, pad: int = 0) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, str(WRITER), kind, str(path), writer, str(count), str(pad)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        processes.append(process)
        return process

    yield spawn
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
