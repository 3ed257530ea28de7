"""FileChatMessageHistory: the JSONL format, torn-write recovery and refusal of corrupt or foreign files."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from ctxwin.history._errors import HistoryFormatError, TornLineWarning
from ctxwin.history._jsonl import FileChatMessageHistory
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


def test_one_message_to_dict_per_line_after_the_header(path: Path) -> None:
    stored(path, "a", "ünï")
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 4
    assert json.loads(lines[0]).keys() == {"ctxwin_history", "identity", "crc"}
    assert [message_from_dict(json.loads(line)) for line in lines[1:3]] == [HumanMessage("a"), HumanMessage("ünï")]
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
    with pytest.warns(TornLineWarning, match="line 4"):
        assert texts(history) == ["a", "b"]
    (skipped,) = history.skipped_lines
    assert (skipped.line, skipped.length, skipped.sealed) == (4, len(tail), False)

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
    with pytest.raises(HistoryFormatError, match=r"line 3 .* is not JSON"):
        _ = FileChatMessageHistory(path).messages
    with pytest.raises(HistoryFormatError, match="refusing to append"):
        stored(path, "b")


def test_unsealed_torn_line_in_the_middle_raises(path: Path) -> None:
    stored(path, "a")
    with open(path, "ab") as file:  # a torn line followed by a message without a seal: not our doing
        file.write(b'{"type": "human", "da\n')
    with open(path, "ab") as file:
        file.write(json.dumps({"type": "human", "data": {"content": "x"}}).encode() + b"\n")
    with pytest.raises(HistoryFormatError, match=r"line 3 .* cut short but more messages follow"):
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
    with pytest.raises(HistoryFormatError, match="line 3 is not a ctxwin message record"):
        _ = FileChatMessageHistory(path).messages


def test_two_instances_on_one_file_see_each_other(path: Path) -> None:
    first, second = FileChatMessageHistory(path), FileChatMessageHistory(path)
    first.add_message(HumanMessage("a"))
    second.add_message(AIMessage("b"))
    assert first.messages == second.messages == [HumanMessage("a"), AIMessage("b")]


@pytest.mark.parametrize(
    ("line", "match"),
    [
        (b"[" * 100_000, "nested too deeply to read"),  # json.loads would raise RecursionError
        (b"1" * 5_000, r"line 3 .* is not JSON"),  # int() refuses over 4,300 digits with a bare ValueError
        (b'{"type": 5}', r"line 3 is not a ctxwin message"),
    ],
)
def test_unreadable_lines_name_the_file_and_line(path: Path, line: bytes, match: str) -> None:
    stored(path, "a")
    with open(path, "ab") as file:
        file.write(line + b"\n")
    with pytest.raises(HistoryFormatError, match=match) as error:
        _ = FileChatMessageHistory(path).messages
    assert str(path) in str(error.value)


FILL_UP = """
import os, resource, signal, sys
from ctxwin.history._jsonl import FileChatMessageHistory
from ctxwin.messages import HumanMessage

path = sys.argv[1]
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing us
resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(path) + 1_000, resource.RLIM_INFINITY))
try:
    FileChatMessageHistory(path).add_messages([HumanMessage(f"batch {i} " + "x" * 100) for i in range(40)])
except OSError as exc:
    print(exc.errno, exc)
"""


@pytest.mark.slow
def test_failed_batch_write_stores_nothing_so_a_retry_does_not_duplicate(path: Path) -> None:
    """The fuzzing finding: a batch that hit a full disk had stored its first lines; retrying duplicated them.

    A real file size limit (RLIMIT_FSIZE) in a child process makes the write stop part-way, as a full disk does.
    """
    stored(path, "before")
    before = path.read_bytes()
    result = subprocess.run([sys.executable, "-c", FILL_UP, str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{errno.EFBIG} ") and str(path) in result.stdout  # the error names the file
    assert path.read_bytes() == before  # the lines that did fit were cut off again
    batch = [HumanMessage(f"batch {i} " + "x" * 100) for i in range(40)]
    history = FileChatMessageHistory(path)
    history.add_messages(batch)  # the retry
    assert history.messages == [HumanMessage("before"), *batch]


def test_full_device_stores_nothing_and_names_the_file(path: Path) -> None:
    path.symlink_to("/dev/full")
    with pytest.raises(OSError, match="No space left on device") as error:
        FileChatMessageHistory(path).add_messages([HumanMessage("a")])
    assert error.value.errno == errno.ENOSPC and error.value.filename == str(path)


@pytest.mark.slow
def test_a_crash_at_any_byte_of_a_batch_leaves_a_readable_prefix(path: Path) -> None:
    """What a writer killed mid-``write()`` leaves, at every byte: the earlier lines, whole batch lines, then a torn
    line that is skipped; and the next append seals it and goes on."""
    stored(path, "before")
    base = path.read_bytes()
    batch = [HumanMessage("one"), AIMessage("two, ünï"), HumanMessage("three")]
    FileChatMessageHistory(path).add_messages(batch)
    written = path.read_bytes()[len(base) :]
    for cut in range(len(written) + 1):
        path.write_bytes(base + written[:cut])
        history = FileChatMessageHistory(path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TornLineWarning)
            messages = history.messages
        torn = not written[:cut].endswith(b"\n") and cut > 0 and not decode_whole(written[:cut])
        whole = written[:cut].count(b"\n") + (cut > 0 and decode_whole(written[:cut]))  # complete but unterminated
        assert messages == [HumanMessage("before"), *batch[:whole]], cut
        assert len(history.skipped_lines) == torn, cut
    path.write_bytes(base + written[: written.rindex(b"three")])  # torn inside the last line
    history = FileChatMessageHistory(path)
    history.add_message(HumanMessage("after"))  # seals the torn line and goes on
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TornLineWarning)
        assert history.messages == [HumanMessage("before"), *batch[:2], HumanMessage("after")]


def decode_whole(data: bytes) -> bool:
    """Whether the last, unterminated line of ``data`` is a complete JSON record."""
    try:
        json.loads(data.rsplit(b"\n", 1)[-1])
    except ValueError:  # includes the empty line
        return False
    return True
