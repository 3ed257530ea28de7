"""`ctxwin fit FILE.jsonl --workers N` as a real subprocess: the same output as one process, in input order."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from batch_support import TOOLS, conversations, expected

from ctxwin.cli.io import fitted_document
from ctxwin.messages.request_body import request_form
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
        want = expected(item, **{**FIT, "output": request_form(item)})  # written back in its own form
        assert isinstance(want, Plan)
        # output="openai" gives the caller's own dicts back for the kept messages (a null content as given)
        original = item if isinstance(item, dict) else {"messages": item}
        assert row == {**fitted_document(original, want.request), "ctxwin": row["ctxwin"]}
        assert row["ctxwin"]["plan"] == want.summary()
    failed = {n for n, item in by_line.items() if not isinstance(expected(item, **FIT), Plan)}
    assert failed and failed.isdisjoint(numbers)
    assert all(f"{source}:{n}: " in two.stderr for n in failed)


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


def test_a_bad_worker_count_is_a_usage_error(tmp_path: Path) -> None:
    source = tmp_path / "one.jsonl"
    source.write_text('[{"role": "user", "content": "hi"}]\n', encoding="utf-8")
    for bad in ("-1", "many"):
        result = run("fit", str(source), *FIT_ARGS, "--workers", bad)
        assert result.returncode == 2 and "--workers" in result.stderr and "Traceback" not in result.stderr
