"""Fuzzing ``ctxwin count`` and ``ctxwin fit``: generated and mutated conversation files never crash the CLI.

Files: JSON (compact or pretty) and JSONL (a conversation or a message per line) of random messages (unknown roles,
non-string content, tool calls with and without results, lone surrogates), then mutated (cut short, bytes inserted:
broken JSON, invalid UTF-8, byte-order marks, 5,000-digit integers, thousands of brackets). Every run must end with
an exit code in {0, 1, 2, 3}, no traceback, every stderr line a one-line ``error:``/``warning:``, and ``-o`` either
untouched or a complete JSON/JSONL file.

``main`` runs in-process for speed; one test runs a few examples as real subprocesses. The example counts are
small so that ``make test`` stays quick; before a release run longer, e.g.
``CTXWIN_FUZZ_EXAMPLES=5000 .venv/bin/python -m pytest tests/cli/test_cli_fuzz.py``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from cli_support import ENV, command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxwin.cli import main

EXAMPLES = int(os.environ.get("CTXWIN_FUZZ_EXAMPLES", "40"))
OLD = b"old content\n"
FIT = ["-c", "approximate", "--context-window", "300", "--reserve", "50"]

texts = st.text(max_size=30) | st.sampled_from(["\ud800", "lone \udfff end", "word " * 200, "数据库"])
calls = st.lists(
    st.fixed_dictionaries(
        {"id": st.sampled_from(["c1", "c2"]), "type": st.just("function")},
        optional={
            "function": st.fixed_dictionaries(
                {"name": st.sampled_from(["f", ""]), "arguments": st.sampled_from(["{}", '{"a": [1,', "[" * 3000])}
            )
        },
    ),
    max_size=2,
)
messages = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "tool", "developer", "ghost", "", 1])},
    optional={
        "content": texts | st.none() | st.integers() | st.lists(texts, max_size=2),
        "tool_calls": calls,
        "tool_call_id": st.sampled_from(["c1", "c2", ""]),
        "name": st.text(max_size=4),
    },
)
conversations = st.lists(messages, max_size=6)
documents = conversations | st.fixed_dictionaries(
    {"messages": conversations},
    optional={"tools": st.sampled_from([[], "x", [{"type": "function", "function": {"name": "f"}}], [1]]),
              "id": st.integers()},
)
JUNK = [b"\xff", b"\xef\xbb\xbf", b"{", b"]", b",", b"\n", b'"', b"9" * 5000, b"[" * 3000, b"\\ud800", b"\x00"]
mutations = st.lists(
    st.tuples(st.sampled_from(["cut", "insert"]), st.integers(min_value=0), st.sampled_from(JUNK)), max_size=2
)


def render(layout: str, items: list[Any], ascii_only: bool) -> bytes:
    def dump(value: Any, indent: int | None = None) -> bytes:
        return json.dumps(value, ensure_ascii=ascii_only, indent=indent).encode("utf-8", "surrogatepass")

    if layout == "json":
        return dump(items[0])
    if layout == "pretty":
        return dump(items[0], indent=2)
    if layout == "jsonl-messages":
        return b"\n".join(dump(m) for m in items[0] if isinstance(items[0], list))
    return b"\n".join(dump(item) for item in items)


def mutate(data: bytes, changes: list[tuple[str, int, bytes]]) -> bytes:
    for kind, position, junk in changes:
        at = position % (len(data) + 1)
        data = data[:at] if kind == "cut" else data[:at] + junk + data[at:]
    return data


files = st.builds(
    lambda layout, items, ascii_only, changes: mutate(render(layout, items, ascii_only), changes),
    st.sampled_from(["json", "pretty", "jsonl-conversations", "jsonl-messages"]),
    st.lists(documents, min_size=1, max_size=4),
    st.booleans(),
    mutations,
)


def check(code: int, stderr: str, target: Path) -> None:
    assert code in (0, 1, 2, 3), (code, stderr)
    assert "Traceback" not in stderr and "a ctxwin bug" not in stderr, stderr
    for line in stderr.splitlines():
        assert line.startswith(("error: ", "warning: ")), stderr
    written = target.read_bytes()
    if written != OLD:  # replaced: then by a complete file
        assert code in (0, 1), stderr
        text = written.decode("utf-8")
        try:
            json.loads(text)
        except json.JSONDecodeError:
            for line in text.splitlines():
                json.loads(line)


def run_in_process(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.slow
@settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(data=files, subcommand=st.sampled_from(["count", "fit"]))
def test_generated_files_give_a_result_or_one_line_errors(data: bytes, subcommand: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder) / "in.jsonl", Path(folder) / "out.json"
        source.write_bytes(data)
        target.write_bytes(OLD)
        argv = [subcommand, str(source)] + (["--json", *FIT, "-o", str(target)] if subcommand == "fit" else [])
        code, stdout, stderr = run_in_process(argv)
        check(code, stderr, target)
        if subcommand == "fit" and stdout:  # --json: only JSON on stdout
            json.loads(stdout)
        if subcommand == "count" and code == 0:
            assert json.loads(run_in_process([*argv, "--json"])[1])["errors"] == 0
        assert not [name for name in os.listdir(folder) if ".ctxwin-tmp-" in name]


@pytest.mark.slow
@settings(max_examples=max(3, EXAMPLES // 10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=files, subcommand=st.sampled_from(["count", "fit"]))
def test_generated_files_in_real_subprocesses(data: bytes, subcommand: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder) / "in.json", Path(folder) / "out.json"
        source.write_bytes(data)
        target.write_bytes(OLD)
        extra = ["--json", *FIT, "-o", str(target)] if subcommand == "fit" else []
        done = subprocess.run(command(subcommand, str(source), *extra), capture_output=True, timeout=120, env=ENV)
        check(done.returncode, done.stderr.decode("utf-8", "backslashreplace"), target)
