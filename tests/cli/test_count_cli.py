"""`ctxwin count` run as a real subprocess, on good and bad files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ctxwin.counters import get_counter, get_model
from ctxwin.counters._approximate.counter import ApproximateCounter
from ctxwin.messages import convert_to_messages

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "conversation.json"


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxwin.cli", *args], input=stdin, capture_output=True, text=True, timeout=60
    )


def test_count_table_matches_the_library() -> None:
    result = run("count", str(EXAMPLE))
    assert result.returncode == 0, result.stderr
    messages = convert_to_messages(json.loads(EXAMPLE.read_text(encoding="utf-8")))
    total = ApproximateCounter().count_messages(messages)
    assert result.stdout.strip().splitlines()[-1].endswith(f"= {total:,} tokens")
    assert f"{len(messages)} messages" in result.stdout


@pytest.mark.slow
def test_count_json_and_stdin() -> None:
    convo = [{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "你好"}]
    result = run("count", "-", "--json", stdin=json.dumps(convo))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)["conversations"][0]
    counter = ApproximateCounter()
    messages = convert_to_messages(convo)
    assert [row["tokens"] for row in report["messages"]] == [counter.count_message(m) for m in messages]
    assert report["total"] == counter.count_messages(messages)
    assert [row["role"] for row in report["messages"]] == ["user", "assistant"]


@pytest.mark.slow
def test_jsonl_conversations_report_bad_lines_and_continue(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps([{"role": "user", "content": "one"}]),
                "{not json",
                json.dumps({"messages": [{"role": "wizard", "content": "x"}]}),
                json.dumps({"messages": [{"role": "user", "content": "four"}]}),
            ]
        ),
        encoding="utf-8",
    )
    result = run("count", str(path), "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert [c["line"] for c in report["conversations"]] == [1, 4]
    assert report["errors"] == 2
    assert f"{path}:2: not valid JSON" in result.stderr
    assert f"{path}:3: messages[0]: unexpected message type: 'wizard'" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", "empty file"),
        ('{"messages": 5}', "expected a list of messages"),
        ('[{"role": "user", "content": 7}]', "messages[0]: content must be a string"),
    ],
)
def test_bad_files_exit_1_with_a_clear_message(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    result = run("count", str(path))
    assert result.returncode == 1
    assert expected in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_missing_file_and_usage_errors() -> None:
    missing = run("count", "/definitely/not/here.json")
    assert missing.returncode == 1 and "no such file" in missing.stderr
    usage = run("count")
    assert usage.returncode == 2


@pytest.mark.slow
def test_jsonl_of_messages_with_a_corrupt_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "messages.jsonl"
    path.write_text(
        '{"role": "user", "content": "a"}\n{"role": "assist\n{"role": "user", "content": "c"}\n', encoding="utf-8"
    )
    result = run("count", str(path))
    assert result.returncode == 1
    assert f"{path}:2: not valid JSON" in result.stderr


@pytest.mark.slow
def test_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path) -> None:
    """`ctxwin count big.json | head -1`: the closed pipe ends the run quietly."""
    big = tmp_path / "big.json"
    big.write_text(json.dumps([{"role": "user", "content": f"message {i}"} for i in range(20_000)]))
    pipeline = f"{sys.executable} -m ctxwin.cli count {big} | head -1"
    result = subprocess.run(["bash", "-o", "pipefail", "-c", pipeline], capture_output=True, text=True, cwd=ROOT)
    assert result.stdout.count("\n") == 1
    assert "Traceback" not in result.stderr and "BrokenPipeError" not in result.stderr
    assert result.returncode == 1


@pytest.mark.slow
@pytest.mark.parametrize("model", ["Qwen/Qwen3-8B", "gpt-4o"])
def test_the_request_total_is_explained_without_a_negative_overhead(model: str) -> None:
    """A Qwen3 template writes an earlier turn without the reasoning markers its count allows for: the request is
    shorter than the messages counted alone, and the table says so instead of adding a negative overhead."""
    long = ROOT / "examples" / "long_conversation.json"
    table = run("count", str(long), "-m", model)
    assert table.returncode == 0, table.stderr
    assert "+ -" not in table.stdout
    report = json.loads(run("count", str(long), "-m", model, "--json").stdout)["conversations"][0]
    counter = get_counter(get_model(model).counter)
    messages = convert_to_messages(json.loads(long.read_text(encoding="utf-8")))
    assert report["total"] == counter.count_messages(messages)
    assert report["request_overhead"] >= 0 and report["shorter_in_place"] >= 0
    assert report["total"] == report["message_tokens"] + report["request_overhead"] - report["shorter_in_place"]
    if report["shorter_in_place"]:
        assert f"- {report['shorter_in_place']:,} shorter in place" in table.stdout
    else:
        assert f"+ {report['request_overhead']:,} request overhead" in table.stdout
