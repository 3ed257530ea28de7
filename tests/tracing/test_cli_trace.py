"""``ctxwin fit --trace`` as a real subprocess: the span tree on stderr, the fitted conversation as without it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_spans import SECRET, conversation

from ctxwin.messages import convert_to_openai_messages

ENV = {"CTXWIN_LOAD_PLUGINS": "", "PATH": "/usr/bin:/bin"}
FLAGS = ["--model", "gpt-4o", "--context-window", "1500", "--reserve", "0", "--keep-last", "12"]


def ctxwin(*args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """``ctxwin ARGS`` in a fresh interpreter, after ``prelude`` (Python run before the CLI starts)."""
    code = f"import sys\n{prelude}\nfrom ctxwin.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env=ENV, check=False
    )


@pytest.mark.slow
def test_trace_prints_the_span_tree_to_stderr(tmp_path: Path) -> None:
    source = tmp_path / "chat.json"
    source.write_text(json.dumps(convert_to_openai_messages(conversation())), encoding="utf-8")
    traced = ctxwin("fit", str(source), *FLAGS, "--trace")
    plain = ctxwin("fit", str(source), *FLAGS)
    assert traced.returncode == plain.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout  # the fitted conversation does not change
    tree = traced.stderr.split("trace:\n", 1)[1].splitlines()
    names = [line.split(" (")[0] for line in tree]
    assert names[:2] == ["ctxwin.fit_many.item", "  ctxwin.plan"]
    steps = [name.strip() for name in names if name.startswith("    ctxwin.step ")]
    assert steps == ["ctxwin.step drop_compacted", "ctxwin.step clear_reasoning", "ctxwin.step filter",
                     "ctxwin.step truncate_tool_output",
                     "ctxwin.step summarize", "ctxwin.step trim", "ctxwin.step recall", "ctxwin.step ledger"]
    step_lines = [line for line in tree if line.startswith("    ctxwin.step ")]
    assert all(" ms)  " in line and "ctxwin.step.name=" in line for line in step_lines)
    assert "ctxwin.messages.summarized=" in step_lines[3] and "gen_ai.request.model=gpt-4o" in tree[1]
    # the trace carries no message content (the report above it names the query recall answered: the user's own)
    assert SECRET not in traced.stderr.split("trace:\n", 1)[1]


@pytest.mark.slow
def test_trace_over_many_lines_needs_this_process(tmp_path: Path) -> None:
    source = tmp_path / "chats.jsonl"
    line = json.dumps(convert_to_openai_messages(conversation(2)))
    source.write_text(f"{line}\n{line}\n", encoding="utf-8")
    done = ctxwin("fit", str(source), *FLAGS, "--trace", "-o", str(tmp_path / "out.jsonl"))
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("\nctxwin.fit_many.item") == 2
    refused = ctxwin("fit", str(source), *FLAGS, "--trace", "--workers", "2")
    assert refused.returncode == 2 and "--trace:" in refused.stderr and "--workers" in refused.stderr


@pytest.mark.slow
def test_trace_without_the_sdk_is_a_usage_error(tmp_path: Path) -> None:
    source = tmp_path / "chat.json"
    source.write_text(json.dumps(convert_to_openai_messages(conversation(2))), encoding="utf-8")
    done = ctxwin("fit", str(source), *FLAGS, "--trace", prelude="sys.modules['opentelemetry'] = None")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "ctxwin fit: error: --trace: needs the OpenTelemetry SDK: pip install opentelemetry-sdk"
    ]
