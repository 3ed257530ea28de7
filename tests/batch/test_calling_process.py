"""What the calling process does while its workers fit: it runs no thread of its own, it never writes down input the
workers can read themselves (a list, an open file), and a pool it left running does not keep it from exiting.

The runs that depend on the caller being single-threaded are scripts in fresh subprocesses (pytest's own process
may run threads of earlier tests, e.g. tiktoken's thread pool).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from batch_support import ProcessTag, conversations, in_session

import ctxwin
from ctxwin.batch import fit_many
from ctxwin.batch._line_blocks import BadLine, file_lines
from ctxwin.batch._pool import WorkerPool

FIT = {"model": "gpt-4o", "context_window": 600, "reserve_output": 100}
CHECKOUT = str(Path(ctxwin.__file__).parents[1])  # the ctxwin under test, not whichever is installed
SUPPORT = str(Path(__file__).parent)

SCRIPT = """
import json, os, sys
from batch_support import ProcessTag
from ctxwin.batch import fit_many

def written():
    # this thread's own writes: the process's counters also take in those of the workers it reaped
    return int(dict(line.split(": ") for line in open("/proc/thread-self/io").read().splitlines())["wchar"])

def threads():
    return len(os.listdir("/proc/self/task"))

def main():
    path, source = sys.argv[1], sys.argv[2]
    options = {"workers": 2, "decode": json.loads, "progress": False, "output": "openai", "model": "gpt-4o",
               "context_window": 600, "reserve_output": 100, "strategies": [ProcessTag(), "trim"]}
    texts = open(path, encoding="utf-8").readlines()
    handle = open(path, encoding="utf-8")
    given = {"file": handle, "lines": texts, "generator": (text for text in texts)}[source]
    before = written()
    results, seen, rows = fit_many(given, **options), set(), []
    for result in results:
        seen.add(threads())
        tags = [w.split(": ")[1].split(":")[0] for w in (result.summary or {}).get("warnings", [])]
        rows.append([result.index, result.messages, result.error, tags])
        if source == "generator" and len(rows) == 70:
            break  # the generator is left open: the run ends with the interpreter
    print(json.dumps({"pid": os.getpid(), "written": written() - before, "threads": sorted(seen), "rows": rows}),
          flush=True)

if __name__ == "__main__":
    main()
"""


def _run(tmp_path: Path, path: Path, source: str) -> dict[str, Any]:
    script = tmp_path / "caller.py"
    script.write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "CTXWIN_LOAD_PLUGINS": "", "PYTHONPATH": os.pathsep.join([CHECKOUT, SUPPORT])}
    process = subprocess.Popen(
        [sys.executable, str(script), str(path), source], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        text=True, start_new_session=True,
    )
    stdout, stderr = process.communicate(timeout=300)  # a pool left running would keep it from ever ending
    assert process.returncode == 0, stderr[-3000:]
    deadline = time.monotonic() + 10
    while (left := in_session(process.pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == []  # no worker outlives it
    out: dict[str, Any] = json.loads(stdout)
    return out


def _corpus(path: Path) -> list[Any]:
    """About 100 conversations as JSON lines, each padded to ~60 KB (whitespace JSON allows: cheap to fit), 6 MB in
    all: a pool's worth of items, and of 1 MB blocks for the open file."""
    items = [json.loads(json.dumps(c)) for c in conversations(130, seed=21) if isinstance(c, list)]
    path.write_text("".join(json.dumps(c) + " " * 60_000 + "\n" for c in items), encoding="utf-8")
    return items


def _reference(items: list[Any]) -> list[list[Any]]:
    results = fit_many(items, workers=1, output="openai", strategies=[ProcessTag(), "trim"], **FIT)
    return [[r.index, r.messages, r.error] for r in results]


def _elsewhere(run: dict[str, Any]) -> bool:
    """Whether the workers fitted the items, not the calling process (a tag for each conversation over budget)."""
    tags = {tag for row in run["rows"] for tag in row[3]}
    return bool(tags) and str(run["pid"]) not in tags


pytestmark = pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="reads the caller's I/O from /proc")


@pytest.mark.slow
@pytest.mark.parametrize("source", ["file", "lines"])
def test_workers_forked_from_the_caller_read_the_file_or_the_list_themselves(tmp_path: Path, source: str) -> None:
    """Issue 49: over an open file the caller wrote every block of lines to a worker (a pipe's worth of bytes per
    line), and a thread of its own fed each pipe; now workers forked from it read the blocks from the file."""
    path = tmp_path / "chats.jsonl"
    items = _corpus(path)
    run = _run(tmp_path, path, source)
    assert _elsewhere(run) and run["threads"] == [1]  # the caller ran no thread of its own while workers fitted
    assert run["written"] < path.stat().st_size / 50  # indexes and places in the file, not the lines
    rows = run["rows"]
    assert [r[0] for r in rows] == list(range(len(items)))
    assert [[i, m, e] for i, m, e, _ in rows] == json.loads(json.dumps(_reference(items)))


@pytest.mark.slow
def test_a_run_left_open_ends_with_the_interpreter(tmp_path: Path) -> None:
    """A generator's items travel pickled, to workers of the fork server; the caller still runs no thread, and a
    run the script never closed is stopped when the interpreter exits (its workers with it)."""
    path = tmp_path / "chats.jsonl"
    items = _corpus(path)
    run = _run(tmp_path, path, "generator")
    assert _elsewhere(run) and run["threads"] == [1]
    assert run["written"] > 70 * 60_000  # the generator's lines were written to the workers
    assert [[i, m, e] for i, m, e, _ in run["rows"]] == json.loads(json.dumps(_reference(items)[:70]))


def _echo(state: Any, payload: bytes) -> bytes:
    return payload[::-1]


@pytest.mark.slow
def test_big_tasks_and_big_answers_at_once_neither_block_nor_need_a_thread() -> None:
    """Each task and each answer is larger than a pipe holds: a worker reads its next task while it writes an
    answer, so the caller never waits on a worker that waits on it."""
    before = set(threading.enumerate())
    pool = WorkerPool(2, dict)
    try:
        payloads = [bytes([n]) * (3 << 20) + b"end" for n in range(8)]
        tasks = [pool.submit(_echo, payload) for payload in payloads]
        assert set(threading.enumerate()) == before
        assert [task.result() for task in tasks] == [payload[::-1] for payload in payloads]
    finally:
        pool.shutdown()


def test_a_block_read_again_after_the_file_changed_is_an_error_not_other_lines(tmp_path: Path) -> None:
    path = tmp_path / "lines.jsonl"
    path.write_text('"a"\n"b"\n"c"\n', encoding="utf-8")
    with open(path, "rb") as handle:
        lines = file_lines(handle)
        assert lines is not None
        (block,) = lines.blocks(loaded=False)
        assert list(block) == [(0, b'"a"\n'), (1, b'"b"\n'), (2, b'"c"\n')]
        path.write_text('"a"\n\n"b"\n"c"\n', encoding="utf-8")  # the same file, a line more
        read = list(block)
    assert len(read) == 1 and isinstance(read[0][1], BadLine) and "file changed" in read[0][1].error


@pytest.mark.parametrize("loaded", [False, True])
def test_blocks_are_cut_at_newlines_from_the_bytes_around_each_cut(tmp_path: Path, loaded: bool) -> None:
    """Issue 49: this process read every byte of the file to count its lines; now it reads only where a block ends
    (a line longer than a block included), and the results are numbered as they come back."""
    sizes = [10, 700_000, 1_500_000, 5, *[100_000] * 40]  # one line longer than a block
    lines = [b"x" * size + b"\n" for size in sizes] + [b"tail"]
    path = tmp_path / "lines.bin"
    path.write_bytes(b"".join(lines))
    with open(path, "rb") as handle:
        file = file_lines(handle)
        assert file is not None
        before = _read_bytes()
        blocks = list(file.blocks(loaded=loaded))
        read = _read_bytes() - before
        assert handle.read() == b""  # the stream ends where iterating it would
        assert [item for block in blocks for _, item in block] == lines
    assert all(block.data is not None for block in blocks) == loaded
    assert [block.last for block in blocks] == [False] * (len(blocks) - 1) + [True]
    if not loaded:
        assert read < path.stat().st_size / 2


def _read_bytes() -> int:
    return int(dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())["rchar"])
