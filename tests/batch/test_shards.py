"""Byte-range shards of a file mapped in worker processes: every line once, with its number, in file order, and a
worker that dies (killed from outside, or by its line) recovered. Real processes, real files."""

from __future__ import annotations

import io
import os
import signal
import tempfile
import threading
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest
from batch_support import KILL, SLOW, make_numbered, numbered
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxwin.batch._pool import WORKER_DIED, WorkerPool, _ready
from ctxwin.batch._shards import lines_in, map_file, ranges

WORDS = ["alpha", "beta", "", "fat gamma", "bad delta", "ünïcødé 数据", "  "]


def in_one_process(text: str) -> tuple[str, list[tuple[int, str]], int]:
    """What mapping every line here, in order, gives: the output, the errors, the flagged count."""
    out, errors, flagged = [], [], 0
    for number, line in enumerate(io.BytesIO(text.encode("utf-8")), start=1):
        mapped = numbered(number, line)
        if mapped is None:
            continue
        if mapped.error is not None:
            errors.append((number, mapped.error))
        else:
            out.append(mapped.text or "")
            flagged += mapped.flagged
    return "".join(out), errors, flagged


def mapped(path: Path, workers: int, shard_bytes: int) -> tuple[str, list[tuple[int, str]], int]:
    out = io.StringIO()
    errors, flagged = [], 0
    for result in map_file(str(path), out, make_numbered, workers=workers, shard_bytes=shard_bytes):
        errors += result.errors
        flagged += result.flagged
    return out.getvalue(), errors, flagged


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(WORDS), max_size=30), st.integers(1, 40), st.booleans())
def test_every_line_is_in_exactly_one_range_with_its_number(
    tmp_path: Path, words: list[str], shard_bytes: int, final_newline: bool
) -> None:
    data = ("\n".join(words) + ("\n" if final_newline else "")).encode("utf-8")
    path = tmp_path / "lines.txt"
    path.write_bytes(data)
    want = [(number, line) for number, line in enumerate(io.BytesIO(data), start=1)]
    got = []
    with open(path, "rb") as handle:
        for start, end in ranges(len(data), shard_bytes):
            got += [(n, line) for _, n, line in lines_in(handle, start, end, data[:start].count(b"\n"))]
    assert got == want


@pytest.mark.slow
def test_two_workers_give_what_one_process_gives(tmp_path: Path) -> None:
    text = "".join(f"{WORDS[i % len(WORDS)]} {i}\n" if i % 9 else "\n" for i in range(3_000))
    path = tmp_path / "lines.txt"
    path.write_text(text, encoding="utf-8")
    want = in_one_process(text)
    assert want[1] and want[2]  # errors and flagged lines are there to be counted
    assert mapped(path, 2, 997) == want  # ranges that cut lines anywhere, many per worker
    assert mapped(path, 2, 1 << 20) == want  # a single range


@pytest.mark.slow
def test_a_line_that_kills_its_worker_is_that_lines_error(tmp_path: Path) -> None:
    lines = [f"line {i}" for i in range(400)]
    lines[57] = lines[301] = KILL
    path = tmp_path / "lines.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out, errors, _ = mapped(path, 2, 500)
    assert errors == [(58, WORKER_DIED), (302, WORKER_DIED)]
    assert out == "".join(f"{n}:{text}\n" for n, text in enumerate(lines, start=1) if text != KILL)


HELPERS = (b"multiprocessing.forkserver", b"multiprocessing.resource_tracker")


def _workers_of(parent: int) -> list[int]:
    """The pool's worker processes: the fork server's children (or the parent's own, with spawn). Never the fork
    server or the resource tracker, which are leaves too until the first worker starts."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry))

    def command(pid: int) -> bytes:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return b"multiprocessing.forkserver"  # gone: counted as no worker

    def helper(pid: int) -> bool:
        return any(name in command(pid) for name in HELPERS)

    # Forked from a fork server or spawned, by the process's temporary directory (ctxwin.batch._pool): both kinds.
    own = children.get(parent, [])
    servers = [pid for pid in own if b"multiprocessing.forkserver" in command(pid)]
    return [pid for server in servers for pid in children.get(server, [])] + [pid for pid in own if not helper(pid)]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the workers through /proc")
def test_a_worker_killed_from_outside_mid_run_is_replaced_and_nothing_is_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chunks = tmp_path / "tmp"
    chunks.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(chunks))  # where map_file keeps its chunks: they show the progress
    # Slow lines spread through the file: the run lasts half a second or more on two workers, however fast the machine,
    # so the killer below sees it under way (a fast machine once mapped it all between two of its looks).
    text = "".join(
        (f"{SLOW} {i}" if i % 100 == 0 else f"{WORDS[i % len(WORDS)]} {i} " + "x" * 200) + "\n" for i in range(20_000)
    )
    path = tmp_path / "lines.txt"
    path.write_text(text, encoding="utf-8")
    killed: list[int] = []

    def kill_one() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not killed:
            workers = _workers_of(os.getpid())
            if len(workers) >= 2 and any(os.listdir(folder) for folder in chunks.iterdir()):  # mapping under way
                os.kill(workers[0], signal.SIGKILL)
                killed.append(workers[0])
            time.sleep(0.01)

    killer = threading.Thread(target=kill_one)
    killer.start()
    got = mapped(path, 2, 64 << 10)
    killer.join()
    assert killed, "no worker was found to kill"
    assert got == in_one_process(text)
    # no chunk left behind (multiprocessing's own pymp-* folder is the fork server's, when this test started it)
    assert [p for p in chunks.iterdir() if not p.name.startswith("pymp-")] == []


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_a_pool_broken_between_two_submits_fails_the_next_task_not_the_submit() -> None:
    """A worker killed while the caller is still submitting: ``submit`` returns a failed future (recovered where the
    caller reads results), it does not raise in the middle of the caller's loop."""
    pool = WorkerPool(1, dict)
    try:
        (worker,) = _workers_of(os.getpid())
        os.kill(worker, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while _running(worker) and time.monotonic() < deadline:  # dead, only not yet reaped
            time.sleep(0.01)
        future = pool.submit(_ready)
        with pytest.raises(BrokenProcessPool):
            future.result()
        pool.restart()
        assert pool.submit(_ready).result() is None
    finally:
        pool.shutdown(kill=True)
