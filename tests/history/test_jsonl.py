"""FileChatMessageHistory: the JSONL format, torn-write recovery and refusal of corrupt or foreign files."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from ctxwin.history.errors import HistoryFormatError, TornLineWarning
from ctxwin.history.jsonl import FileChatMessageHistory
from ctxwin.messages import AIMessage, HumanMessage, message_from_dict


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "chat.jsonl"


def stored(path: Path, *texts: str) -> FileChatMessageHistory:
    history = FileChatMessageHistory(path)
    history.add_messages([HumanMessage(t) for t in texts])
    return history


def texts(history: FileChatMessageHistory) -> list[str]:
    return [str(m.content) for m in history.messages]


def test_one_message_to_dict_per_line(path: Path) -> None:
    stored(path, "a", "ünï")
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3
    assert [message_from_dict(json.loads(line)) for line in lines[:2]] == [HumanMessage("a"), HumanMessage("ünï")]
    assert "ünï" in path.read_text(encoding="utf-8")


def test_missing_file_is_an_empty_history_and_is_not_created_by_reading(path: Path) -> None:
    assert FileChatMessageHistory(path).messages == []
    FileChatMessageHistory(path).clear()
    assert not path.exists()


TAILS = [b'{"type": "human", "data": {"content": "half', b"{", b'{"type": "ai", "da\x00\x00\x00']


@pytest.mark.parametrize("tail", TAILS)
def test_torn_last_line_is_skipped_reported_and_sealed_by_the_next_append(path: Path, tail: bytes) -> None:
    stored(path, "a", "b")
    with open(path, "ab") as file:  # what a crash mid-write leaves behind
        file.write(tail)
    history = FileChatMessageHistory(path)
    with pytest.warns(TornLineWarning, match="line 3"):
        assert texts(history) == ["a", "b"]
    (skipped,) = history.skipped_lines
    assert (skipped.line, skipped.length, skipped.sealed) == (3, len(tail), False)

    history.add_message(HumanMessage("c"))  # must not glue onto the fragment
    assert path.read_bytes().count(tail + b"\n") == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # already reported by this instance
        assert texts(history) == ["a", "b", "c"]
    assert history.skipped_lines[0].sealed
    fresh = FileChatMessageHistory(path)
    with pytest.warns(TornLineWarning):
        assert texts(fresh) == ["a", "b", "c"]
    fresh.add_message(HumanMessage("d"))
    assert texts(fresh) == ["a", "b", "c", "d"]


def test_torn_seal_and_several_torn_lines_are_sealed_together(path: Path) -> None:
    stored(path, "a")
    with open(path, "ab") as file:  # a torn line, then a crash inside the next appender's seal write
        file.write(b'{"type": "human", "da\n{"ctxwin_torn_lin')
    history = FileChatMessageHistory(path)
    with pytest.warns(TornLineWarning):
        assert texts(history) == ["a"]
    assert len(history.skipped_lines) == 2
    history.add_message(HumanMessage("b"))
    with pytest.warns(TornLineWarning):
        assert texts(FileChatMessageHistory(path)) == ["a", "b"]


def test_complete_but_unterminated_last_line_is_kept_and_terminated(path: Path) -> None:
    stored(path, "a", "b")
    path.write_bytes(path.read_bytes()[:-1])  # the newline never made it
    history = FileChatMessageHistory(path)
    assert texts(history) == ["a", "b"]
    history.add_message(HumanMessage("c"))
    assert texts(history) == ["a", "b", "c"] and history.skipped_lines == []


def test_blank_lines_are_ignored(path: Path) -> None:
    stored(path, "a")
    with open(path, "ab") as file:
        file.write(b"\n  \n")
    history = stored(path, "b")
    assert texts(history) == ["a", "b"]


def test_corrupt_line_in_the_middle_raises(path: Path) -> None:
    stored(path, "a")
    with open(path, "ab") as file:
        file.write(b"garbage here\n")
    with pytest.raises(HistoryFormatError, match=r"line 2 .* is not JSON"):
        _ = FileChatMessageHistory(path).messages
    with pytest.raises(HistoryFormatError, match="refusing to append"):
        stored(path, "b")


def test_unsealed_torn_line_in_the_middle_raises(path: Path) -> None:
    stored(path, "a")
    with open(path, "ab") as file:  # a torn line followed by a message without a seal: not our doing
        file.write(b'{"type": "human", "da\n')
    with open(path, "ab") as file:
        file.write(json.dumps({"type": "human", "data": {"content": "x"}}).encode() + b"\n")
    with pytest.raises(HistoryFormatError, match=r"line 2 .* cut short but more messages follow"):
        _ = FileChatMessageHistory(path).messages


def test_seal_naming_the_wrong_lines_raises(path: Path) -> None:
    stored(path, "a")
    with open(path, "ab") as file:
        file.write(b'{"type": "human", "da\n{"ctxwin_torn_lines": [[0, 5]]}\n')
    with pytest.raises(HistoryFormatError, match="do not match"):
        _ = FileChatMessageHistory(path).messages


@pytest.mark.parametrize(
    "content, match",
    [
        (b"name,age\nann,3\n", "line 1"),
        (b'{"foo": 1}\n', "not a ctxwin message record"),
        (b'[1, 2]\n', "not a ctxwin message record"),
        (b'{"type": "alien", "data": {}}\n', "unexpected message type"),
    ],
)
def test_foreign_files_raise_and_are_never_modified(path: Path, content: bytes, match: str) -> None:
    path.write_bytes(content)
    history = FileChatMessageHistory(path)
    with pytest.raises(HistoryFormatError, match=match):
        _ = history.messages
    with pytest.raises(HistoryFormatError):
        history.add_message(HumanMessage("x"))
    with pytest.raises(HistoryFormatError):
        history.clear()
    assert path.read_bytes() == content


def test_invalid_message_record_names_the_line(path: Path) -> None:
    stored(path, "a")
    with open(path, "ab") as file:
        file.write(json.dumps({"type": "ai", "data": {"content": 5}}).encode() + b"\n")
    with pytest.raises(HistoryFormatError, match="line 2 is not a ctxwin message record"):
        _ = FileChatMessageHistory(path).messages


def test_two_instances_on_one_file_see_each_other(path: Path) -> None:
    first, second = FileChatMessageHistory(path), FileChatMessageHistory(path)
    first.add_message(HumanMessage("a"))
    second.add_message(AIMessage("b"))
    assert first.messages == second.messages == [HumanMessage("a"), AIMessage("b")]
