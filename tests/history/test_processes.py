"""Real processes against the persistent histories: concurrent appenders, live readers and SIGKILLed writers."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from ctxwin.history._base import BaseChatMessageHistory
from ctxwin.history._errors import TornLineWarning
from ctxwin.history._jsonl import FileChatMessageHistory
from ctxwin.history._sqlite import SQLiteChatMessageHistory
from ctxwin.messages import HumanMessage

Spawn = Callable[..., subprocess.Popen[str]]
KINDS = ["sqlite", "jsonl"]


def open_history(kind: str, path: Path) -> BaseChatMessageHistory:
    return SQLiteChatMessageHistory(path, "shared") if kind == "sqlite" else FileChatMessageHistory(path)


def store_path(kind: str, tmp_path: Path) -> Path:
    return tmp_path / ("history.db" if kind == "sqlite" else "history.jsonl")


def by_writer(contents: list[str]) -> dict[str, list[int]]:
    sequences: dict[str, list[int]] = {}
    for text in contents:
        writer, index = text.split(":")
        sequences.setdefault(writer, []).append(int(index))
    return sequences


def acks(output: str) -> list[int]:
    return [int(line.split()[1]) for line in output.splitlines() if line.startswith("ack ")]


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_concurrent_appenders_store_every_message_once_in_writer_order(
    kind: str, tmp_path: Path, spawn_writer: Spawn
) -> None:
    path = store_path(kind, tmp_path)
    count, names = 40, [f"w{n}" for n in range(4)]
    writers = [spawn_writer(kind, path, name, count) for name in names]
    reader = open_history(kind, path) if kind == "sqlite" else FileChatMessageHistory(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TornLineWarning)  # a reader must never see a write in progress
        while any(w.poll() is None for w in writers):
            for sequence in by_writer([str(m.content) for m in reader.messages]).values():
                assert sequence == list(range(len(sequence)))  # a live read shows a prefix of each writer's run
    for writer in writers:
        out, err = writer.communicate(timeout=60)
        assert writer.returncode == 0, err
        assert acks(out) == list(range(count))
    contents = [str(m.content) for m in open_history(kind, path).messages]
    assert len(contents) == len(set(contents)) == count * len(names)
    assert by_writer(contents) == {name: list(range(count)) for name in names}


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_sigkilled_writer_loses_nothing_it_acknowledged(kind: str, tmp_path: Path, spawn_writer: Spawn) -> None:
    path = store_path(kind, tmp_path)
    # Large JSONL lines make a write() that the kill cuts short (a torn line) possible.
    victim = spawn_writer(kind, path, "victim", 0, 300_000 if kind == "jsonl" else 1_000)
    bystander = spawn_writer(kind, path, "bystander", 30)
    assert victim.stdout is not None
    acknowledged: list[int] = []
    while len(acknowledged) < 20:
        line = victim.stdout.readline()
        assert line, victim.stderr.read() if victim.stderr else "writer died"
        acknowledged.extend(acks(line))
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=30)
    acknowledged.extend(acks(victim.stdout.read()))  # acks already in the pipe when it died
    _, err = bystander.communicate(timeout=60)
    assert bystander.returncode == 0, err

    history = open_history(kind, path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sequences = by_writer([str(m.content) for m in history.messages])
    assert all(issubclass(w.category, TornLineWarning) for w in caught)
    stored = sequences["victim"]
    assert stored == list(range(len(stored)))  # in order, no duplicate, no gap
    assert len(stored) >= len(acknowledged)  # everything acknowledged is there
    assert sequences["bystander"] == list(range(30))
    if kind == "sqlite":
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)

    history.add_message(HumanMessage("after:0"))  # the store takes new messages after the crash
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TornLineWarning)
        after = by_writer([str(m.content) for m in open_history(kind, path).messages])
    assert after["after"] == [0]
    assert after["victim"] == stored


@pytest.mark.slow
def test_jsonl_writer_killed_repeatedly_mid_line_keeps_the_file_readable(tmp_path: Path, spawn_writer: Spawn) -> None:
    """Kill writers of very large lines at random points; every restart must append cleanly after any torn tail."""
    path = tmp_path / "history.jsonl"
    acknowledged: dict[str, list[int]] = {}
    for round_ in range(3):
        name = f"r{round_}"
        writer = spawn_writer("jsonl", path, name, 0, 2_000_000)
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "ready"
        acked = acks(writer.stdout.readline())
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=30)
        acknowledged[name] = acked + acks(writer.stdout.read())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TornLineWarning)
        sequences = by_writer([str(m.content) for m in FileChatMessageHistory(path).messages])
    for name, acked in acknowledged.items():
        stored = sequences.get(name, [])
        assert stored == list(range(len(stored)))
        assert len(stored) >= len(acked)


@pytest.mark.slow
def test_histories_opened_while_others_write_never_take_the_live_log_for_another(
    tmp_path: Path, spawn_writer: Spawn
) -> None:
    """Each new history object judges the -wal file beside the database (issue 52) while writers in other processes
    commit, checkpoint and reset it: the live log is never refused as another database's or another copy's."""
    path = store_path("sqlite", tmp_path)
    SQLiteChatMessageHistory(path, "shared").close()
    writers = [spawn_writer("sqlite", path, f"w{n}", 40) for n in range(3)]
    opened = 0
    while any(w.poll() is None for w in writers):
        with SQLiteChatMessageHistory(path, "shared") as history:
            for sequence in by_writer([str(m.content) for m in history.messages]).values():
                assert sequence == list(range(len(sequence)))
        opened += 1
    for writer in writers:
        _, err = writer.communicate(timeout=60)
        assert writer.returncode == 0, err
    assert opened > 3
    assert by_writer([str(m.content) for m in open_history("sqlite", path).messages]) == {
        f"w{n}": list(range(40)) for n in range(3)
    }
