"""The user's shape comes back out, and no input line can stop a run: real subprocesses of count, fit and bench."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from cli_support import CHAT, FAST, assert_one_line_errors, run, write_json

CALL = [
    {"role": "user", "content": "weather?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
]
TOOLS = [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}]


@pytest.mark.slow
def test_an_object_comes_back_as_the_same_object(tmp_path: Path) -> None:
    document = {"id": "chat-1", "messages": CALL, "tools": TOOLS, "metadata": {"source": "prod"}}
    source = write_json(tmp_path / "chat.json", document)
    result = run("fit", str(source), *FAST)
    assert result.returncode == 0, result.stderr
    # null content included; the reserve given (FAST: 500) is the reply limit the request carries
    assert json.loads(result.stdout) == {**document, "max_completion_tokens": 500}
    assert list(json.loads(result.stdout)) == ["id", "messages", "tools", "metadata", "max_completion_tokens"]


@pytest.mark.slow
def test_jsonl_lines_keep_their_fields_and_get_the_plan_under_ctxwin(tmp_path: Path) -> None:
    lines = [
        {"id": 1, "messages": CALL, "split": "train", "ctxwin": "from an earlier run"},
        CHAT,
        {"messages": CHAT, "tools": TOOLS, "weight": 0.5},
    ]
    source = tmp_path / "many.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    result = run("fit", str(source), *FAST)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["ctxwin"]["line"] for row in rows] == [1, 2, 3]
    assert all(row["ctxwin"]["plan"]["fits"] for row in rows)
    limit = {"max_completion_tokens": 500}  # the reserve given (FAST)
    assert {k: v for k, v in rows[0].items() if k != "ctxwin"} == {"id": 1, "messages": CALL, "split": "train", **limit}
    assert rows[1]["messages"] == CHAT and set(rows[1]) == {"messages", "ctxwin", *limit}
    assert rows[2]["tools"] == TOOLS and rows[2]["weight"] == 0.5


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["json", "jsonl", "stdin"])
def test_a_byte_order_mark_is_accepted(tmp_path: Path, layout: str) -> None:
    text = json.dumps(CHAT) if layout != "jsonl" else "\n".join(json.dumps(m) for m in CHAT)
    data = b"\xef\xbb\xbf" + text.encode("utf-8")
    source = tmp_path / "bom.json"
    source.write_bytes(data)
    result = run("fit", "-", *FAST, stdin=data) if layout == "stdin" else run("fit", str(source), *FAST)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == CHAT


BAD_LINES = [
    ("deep", b"[" * 100_000 + b"]" * 100_000, "nested too deeply (limit about 1,000 levels)"),
    (
        "big int",
        b'[{"role": "user", "content": "x", "n": ' + b"9" * 5000 + b"}]",
        "not valid JSON: an integer with more than 4,300 digits",
    ),
    ("bad utf-8", b'[{"role": "user", "content": "\xff"}]', "not valid UTF-8 (byte 31: invalid start byte)"),
    ("not json", b"{oops", "not valid JSON: Expecting property name enclosed in double quotes at column 2"),
]


@pytest.mark.slow
@pytest.mark.parametrize("command", ["count", "fit", "bench"])
def test_a_bad_line_is_that_lines_error_and_the_run_goes_on(tmp_path: Path, command: str) -> None:
    surrogate = b'[{"role": "user", "content": "lone \\ud800 surrogate"}]'
    lines = [json.dumps(CHAT).encode(), *(raw for _, raw, _ in BAD_LINES), surrogate, json.dumps(CHAT).encode()]
    source = tmp_path / "many.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    args = ["-m", "gpt-4o-mini", *(["--context-window", "4k"] if command == "fit" else [])]
    result = run(command, str(source), *args)
    assert result.returncode == 1
    assert_one_line_errors(result.stderr)
    errors = result.stderr.splitlines()
    assert errors == [f"error: {source}:{n}: {text}" for n, (_, _, text) in enumerate(BAD_LINES, start=2)]
    if command == "fit":
        rows = [json.loads(line) for line in result.stdout.splitlines()]
        assert [row["ctxwin"]["line"] for row in rows] == [1, 6, 7]
        assert rows[1]["messages"][0]["content"] == "lone \ud800 surrogate"  # written as the JSON escape
    if command == "count":
        assert result.stdout.count("request overhead") == 3


@pytest.mark.slow
def test_a_file_nested_too_deeply_is_one_clear_error(tmp_path: Path) -> None:
    source = tmp_path / "deep.json"
    source.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    for command in ("count", "fit"):
        result = run(command, str(source), *(FAST if command == "fit" else []))
        assert result.returncode == 1
        assert result.stderr == f"error: {source}: nested too deeply (limit about 1,000 levels)\n"
    pretty = tmp_path / "deep-pretty.json"
    pretty.write_text("[\n" * 5000 + "]\n" * 5000, encoding="utf-8")
    result = run("count", str(pretty))
    assert result.stderr == f"error: {pretty}: nested too deeply (limit about 1,000 levels)\n"


@pytest.mark.slow
def test_lone_surrogates_round_trip_through_an_output_file(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "a \ud800 b \udfff c"}]
    source = tmp_path / "s.json"
    source.write_text(json.dumps(messages), encoding="ascii")  # the \\ud800 escapes
    out = tmp_path / "out.json"
    result = run("fit", str(source), "-m", "gpt-4o-mini", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text(encoding="utf-8")) == messages
    counted = run("count", str(source), "-m", "gpt-4o-mini", "--json")
    assert counted.returncode == 0 and json.loads(counted.stdout)["conversations"][0]["messages"][0]["preview"]


@pytest.mark.slow
def test_a_big_broken_document_is_read_once(tmp_path: Path) -> None:
    """200,000 lines with a broken last line: one error, not 200,000, in one pass (a quadratic reader takes hours)."""
    messages = [{"role": "user", "content": f"message {i}"} for i in range(50_000)]
    text = json.dumps(messages, indent=1)[:-1] + "oops]"
    source = tmp_path / "big.json"
    source.write_text(text, encoding="utf-8")
    result = run("count", str(source))
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1
    assert f"at line {text.count(chr(10)) + 1} column" in result.stderr


BINARIES = {
    "png": bytes.fromhex("89504e470d0a1a0a0000000d49484452") + bytes(range(256)) * 12,  # a line of header, then data
    "gzipped jsonl": gzip.compress("".join(json.dumps(CHAT) + f" {n}\n" for n in range(500)).encode(), mtime=0),
    "utf-16 json": json.dumps(CHAT).encode("utf-16"),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(BINARIES))
@pytest.mark.parametrize("command", ["count", "fit"])
def test_a_binary_file_is_one_error(tmp_path: Path, kind: str, command: str) -> None:
    source = tmp_path / "data.bin"
    source.write_bytes(BINARIES[kind])
    for args in ([str(source)], ["-"]):
        extra = [*FAST, "--workers", "2"] if command == "fit" else []
        result = run(command, *args, *extra, stdin=source.read_bytes() if args == ["-"] else None)
        assert result.returncode == 1
        [line] = result.stderr.splitlines()
        assert line.startswith("error: ") and "not a text file (a NUL byte at byte" in line


@pytest.mark.slow
def test_a_json_error_names_the_files_line_and_reads_once(tmp_path: Path) -> None:
    source = tmp_path / "many.jsonl"
    lines = [json.dumps(CHAT), json.dumps(CHAT), '{"messages": [{"role": "user"', '[{"role": "user", "content": "ab']
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run("count", str(source))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: {source}:3: not valid JSON: Expecting ',' delimiter at column {len(lines[2]) + 1}",
        f"error: {source}:4: not valid JSON: Unterminated string starting at column {lines[3].index('ab') }",
    ]
