"""`ctxwin fit FILE.jsonl --workers N` as a real subprocess: the same output as one process, in input order."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from batch_support import TOOLS, conversations, expected, in_session
from test_shards import _workers_of

from ctxwin.cli._fit_file import fit_file
from ctxwin.cli._io import fitted_document
from ctxwin.messages._request_forms.registry import form_of
from ctxwin.planner import Plan

FIT_ARGS = ["-m", "gpt-4o", "--context-window", "2500", "--reserve", "500"]
FIT = {"model": "gpt-4o", "context_window": 2500, "reserve_output": 500}


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"CTXWIN_LOAD_PLUGINS": "", "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "ctxwin.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        input=stdin,
    )


def write_jsonl(path: Path, items: list[Any]) -> dict[int, Any]:
    """Conversations as JSONL lines (JSON-ready ones only), with a blank line and a broken line mixed in."""
    lines: list[str] = []
    by_line: dict[int, Any] = {}
    for item in items:
        if len(lines) == 5:
            lines.append("")  # blank lines are skipped but still counted
        if len(lines) == 9:
            lines.append("{not json")
        lines.append(json.dumps(item, ensure_ascii=False))
        by_line[len(lines)] = item
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return by_line


def json_ready(items: list[Any]) -> list[Any]:
    """Items a JSONL line can hold as a conversation: lists of messages, or request objects."""
    return [
        [list(m) if isinstance(m, tuple) else m for m in item] if isinstance(item, list) else item
        for item in items
        if isinstance(item, list) or (isinstance(item, dict) and "messages" in item)
    ]


@pytest.mark.slow
def test_workers_give_the_same_output_as_one_process(tmp_path: Path) -> None:
    source = tmp_path / "many.jsonl"
    by_line = write_jsonl(source, json_ready(conversations(90, seed=11, bad_every=17)))
    one = run("fit", str(source), *FIT_ARGS)
    two = run("fit", str(source), *FIT_ARGS, "--workers", "2")
    assert one.returncode == two.returncode == 1  # the broken line and the bad rows
    assert two.stdout == one.stdout
    assert sorted(two.stderr.splitlines()) == sorted(one.stderr.splitlines())
    assert f"{source}:10: not valid JSON" in one.stderr
    rows = [json.loads(line) for line in two.stdout.splitlines()]
    numbers = [row["ctxwin"]["line"] for row in rows]
    assert numbers == sorted(numbers)
    for row in rows:
        item = by_line[row["ctxwin"]["line"]]
        want = expected(item, **{**FIT, "output": form_of(item).name})  # written back in its own form
        assert isinstance(want, Plan)
        # output="openai" gives the caller's own dicts back for the kept messages (a null content as given)
        original = item if isinstance(item, dict) else {"messages": item}
        reserved = "reserve_output" in FIT  # a reserve given is each request's reply limit
        assert row == {**fitted_document(original, want.request, reserved=reserved), "ctxwin": row["ctxwin"]}
        assert row["ctxwin"]["plan"] == want.summary()
    failed = {n for n, item in by_line.items() if not isinstance(expected(item, **FIT), Plan)}
    assert failed and failed.isdisjoint(numbers)
    assert all(f"{source}:{n}: " in two.stderr for n in failed)


@pytest.mark.slow
def test_all_cores_json_reports_and_stdin(tmp_path: Path) -> None:
    items = json_ready(conversations(20, seed=12))
    items = [{"messages": c, "tools": TOOLS} if i % 3 == 0 and isinstance(c, list) else c for i, c in enumerate(items)]
    text = "\n".join(json.dumps(item, ensure_ascii=False) for item in items) + "\n"
    one = run("fit", "-", *FIT_ARGS, "--json", stdin=text)
    every = run("fit", "-", *FIT_ARGS, "--json", "--workers", "0", stdin=text)
    assert one.returncode == every.returncode == 0, every.stderr
    assert every.stdout == one.stdout
    first = json.loads(every.stdout.splitlines()[0])
    plan = first["ctxwin"]["plan"]
    assert first["ctxwin"]["line"] == 1 and plan["tools_tokens"] > 0 and "steps" in plan


@pytest.mark.slow
def test_a_bad_worker_count_is_a_usage_error(tmp_path: Path) -> None:
    source = tmp_path / "one.jsonl"
    source.write_text('[{"role": "user", "content": "hi"}]\n', encoding="utf-8")
    for bad in ("-1", "many"):
        result = run("fit", str(source), *FIT_ARGS, "--workers", bad)
        assert result.returncode == 2 and "--workers" in result.stderr and "Traceback" not in result.stderr


def _big(path: Path, count: int) -> Path:
    items = json_ready(conversations(count, seed=13, bad_every=31))
    path.write_text("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items), encoding="utf-8")
    return path


def _start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
    """The CLI fitting a big file on 2 workers, its own session and temporary folder; returns when workers write."""
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    process = subprocess.Popen(
        [sys.executable, "-m", "ctxwin.cli", "fit", *args, *FIT_ARGS, "--workers", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"CTXWIN_LOAD_PLUGINS": "", "PATH": "/usr/bin:/bin", "TMPDIR": str(temp)},
        start_new_session=True,
    )
    deadline = time.monotonic() + 90
    while not any(os.listdir(folder) for folder in temp.glob("ctxwin-chunks-*")):
        assert time.monotonic() < deadline and process.poll() is None, process.communicate()
        time.sleep(0.01)
    return process, temp


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "code", "said"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_ctrl_c_or_sigterm_with_workers_leaves_no_partial_output(
    tmp_path: Path, signum: int, code: int, said: str
) -> None:
    source = _big(tmp_path / "big.jsonl", 3_000)
    target = tmp_path / "out.jsonl"
    target.write_text("old\n", encoding="utf-8")
    process, temp = _start(tmp_path, str(source), "-o", str(target))
    os.killpg(process.pid, signum) if signum == signal.SIGINT else process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == code and stderr.decode() == f"error: {said}\n"
    assert target.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.jsonl", "out.jsonl", "tmp"]
    assert list(temp.iterdir()) == []  # the workers' chunks are gone too
    assert _workers_of(process.pid) == []


@pytest.mark.slow
def test_a_worker_killed_mid_run_is_replaced_and_the_output_is_whole(tmp_path: Path) -> None:
    source = _big(tmp_path / "big.jsonl", 1_500)
    one = run("fit", str(source), *FIT_ARGS)
    process, _ = _start(tmp_path, str(source))
    workers = _workers_of(process.pid)
    assert workers, "no worker found"
    os.kill(workers[0], signal.SIGKILL)
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == one.returncode == 1  # the bad rows
    assert stdout.decode() == one.stdout
    assert stderr.decode().splitlines() == one.stderr.splitlines()


@pytest.mark.slow
def test_stdin_with_workers_is_fitted_from_a_copy(tmp_path: Path) -> None:
    source = _big(tmp_path / "some.jsonl", 200)
    text = source.read_text(encoding="utf-8")
    one = run("fit", "-", *FIT_ARGS, stdin=text)
    two = run("fit", "-", *FIT_ARGS, "--workers", "2", stdin=text)
    assert one.returncode == two.returncode == 1
    assert two.stdout == one.stdout and two.stderr == one.stderr and "error: <stdin>:31: " in two.stderr


@pytest.mark.slow
def test_fit_file_writes_what_the_command_writes(tmp_path: Path) -> None:
    source = tmp_path / "many.jsonl"
    write_jsonl(source, json_ready(conversations(150, seed=14, bad_every=13)))
    command = run("fit", str(source), *FIT_ARGS)
    for workers in (1, 2):
        out = tmp_path / f"out{workers}.jsonl"
        result = fit_file(str(source), str(out), workers=workers, **FIT)
        assert out.read_text(encoding="utf-8") == command.stdout
        assert [f"error: {e}" for e in result.errors] == command.stderr.splitlines()[: len(result.errors)]
        assert result.fitted == len(command.stdout.splitlines()) and result.over_budget == 0
    with pytest.raises(ValueError, match="gpt-99-ultra"):
        fit_file(str(source), str(tmp_path / "never.jsonl"), workers=2, model="gpt-99-ultra")
    assert not (tmp_path / "never.jsonl").exists()



@pytest.mark.slow
def test_kill_9_of_the_command_leaves_no_process_behind_and_releases_its_pipes(tmp_path: Path) -> None:
    """Issue 44: the fork server, both workers and the resource tracker outlived a ``kill -9`` of the command,
    blocked on a pipe and holding its stderr open, so ``communicate()`` never returned."""
    source = _big(tmp_path / "big.jsonl", 3_000)
    process, _ = _start(tmp_path, str(source), "-o", str(tmp_path / "out.jsonl"))
    started = in_session(process.pid)
    assert len(started) >= 4, started  # the command, the fork server, the resource tracker, the workers
    process.kill()
    process.communicate(timeout=30)  # EOF on stdout and stderr: no process holds them any more
    deadline = time.monotonic() + 10
    while (left := in_session(process.pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == [], [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in left]
