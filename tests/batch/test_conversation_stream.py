"""Reading conversation files as a stream: every layout as before, JSONL conversations without reading ahead."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxwin.batch._conversation import ConversationFileError
from ctxwin.cli._io import (
    ConversationLine,
    RawConversation,
    read_conversations,
    read_raw_conversations,
    request_from_json,
)

HI = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def read(path: Path) -> list[RawConversation | ConversationLine]:
    return list(read_raw_conversations(str(path)))


def lines_of(items: list[RawConversation | ConversationLine]) -> list[tuple[int, Any]]:
    """Each line's number and what it parses to (the error text for a bad one)."""
    out: list[tuple[int, Any]] = []
    for item in items:
        assert isinstance(item, ConversationLine)
        try:
            out.append((item.line, request_from_json(item.text)["messages"]))
        except ConversationFileError as exc:
            out.append((item.line, str(exc)))
    return out


def test_a_pretty_printed_document_is_one_conversation(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"messages": HI, "tools": []}, indent=2), encoding="utf-8")
    assert read(path) == [RawConversation(str(path), HI, [], document={"messages": HI, "tools": []})]


def test_one_line_is_one_document_and_message_lines_are_one_conversation(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(HI) + "\n", encoding="utf-8")
    assert read(path) == [RawConversation(str(path), HI)]
    path.write_text("\n".join(json.dumps(m) for m in HI) + "\n\n", encoding="utf-8")
    assert read(path) == [RawConversation(str(path), HI)]


def test_a_broken_message_line_fails_the_whole_conversation(tmp_path: Path) -> None:
    path = tmp_path / "messages.jsonl"
    path.write_text(json.dumps(HI[0]) + "\n{oops\n" + json.dumps(HI[1]) + "\n", encoding="utf-8")
    with pytest.raises(ConversationFileError, match=r"messages.jsonl:2: not valid JSON"):
        read(path)


def test_lines_are_handed_out_unparsed_with_their_numbers(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    path.write_text("\n{oops\n" + json.dumps(HI) + "\n\n" + json.dumps({"messages": HI}) + "\n", encoding="utf-8")
    assert lines_of(read(path)) == [
        (2, "not valid JSON: Expecting property name enclosed in double quotes at column 2"),
        (3, HI),
        (5, HI),
    ]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("{oops", "not valid JSON"),
        ("42", "expected a list of messages or an object with a 'messages' list"),
        ('{"messages": [], "tools": {}}', "'tools' must be a list"),
    ],
)
def test_a_line_that_is_not_a_conversation_says_why(text: str, error: str) -> None:
    with pytest.raises(ConversationFileError, match=error):
        request_from_json(text)
    assert request_from_json(json.dumps({"messages": HI, "tools": []})) == {"messages": HI, "tools": []}


def test_converted_conversations_report_bad_lines_and_bad_files(tmp_path: Path) -> None:
    many = tmp_path / "many.jsonl"
    many.write_text(json.dumps(HI) + "\n" + json.dumps([{"role": "ghost", "content": "x"}]) + "\n{\n", encoding="utf-8")
    first, second, third = read_conversations(str(many))
    assert not isinstance(first, ConversationFileError) and [m.type for m in first.messages] == ["human", "ai"]
    assert first.line == 1
    assert isinstance(second, ConversationFileError) and f"{many}:2: messages[0]" in str(second)
    assert isinstance(third, ConversationFileError) and f"{many}:3: not valid JSON" in str(third)
    one = tmp_path / "one.json"
    one.write_text(json.dumps([{"role": "ghost", "content": "x"}]), encoding="utf-8")
    with pytest.raises(ConversationFileError, match=r"one.json: messages\[0\]"):
        list(read_conversations(str(one)))


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", "empty file"),
        (b"\n  \n", "empty file"),
        (b'[{"role": "user", "content": "\xff"}]', r"bad.jsonl: not valid UTF-8 \(byte 31"),
    ],
)
def test_unreadable_files_are_errors(tmp_path: Path, content: bytes, match: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(ConversationFileError, match=match):
        read(path)
    with pytest.raises(ConversationFileError, match="no such file"):
        read(tmp_path / "missing.jsonl")


def test_jsonl_conversations_are_yielded_before_the_file_ends(tmp_path: Path) -> None:
    """A FIFO whose writer waits for the first conversation to be read: reading the whole file first would hang."""
    fifo = tmp_path / "stream.jsonl"
    os.mkfifo(fifo)
    first_read = threading.Event()
    waited: list[bool] = []

    def writer() -> None:
        with open(fifo, "w", encoding="utf-8") as pipe:
            pipe.write(json.dumps(HI) + "\n" + json.dumps(HI) + "\n")
            pipe.flush()
            waited.append(first_read.wait(timeout=20))
            pipe.write(json.dumps(HI) + "\n")

    thread = threading.Thread(target=writer)
    thread.start()
    items = read_raw_conversations(str(fifo))
    first = next(items)
    first_read.set()
    rest = list(items)
    thread.join()
    assert waited == [True]
    assert lines_of([first, *rest]) == [(1, HI), (2, HI), (3, HI)]


conversation_values = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": st.text(max_size=20)}),
    min_size=1,
    max_size=3,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(conversation_values, st.integers(0, 2)), min_size=2, max_size=12))
def test_every_conversation_line_comes_back_with_its_line_number(
    tmp_path: Path, rows: list[tuple[list[dict[str, Any]], int]]
) -> None:
    path = tmp_path / "property.jsonl"
    lines: list[str] = []
    want: list[tuple[int, Any]] = []
    for messages, blanks in rows:
        lines += [""] * blanks
        lines.append(json.dumps(messages, ensure_ascii=False))
        want.append((len(lines), messages))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert lines_of(read(path)) == want
