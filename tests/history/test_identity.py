"""Records bound to their history (issue 52): every JSONL line carries its history's identity, so a line of another
history is refused, naming the file, instead of being read as this history's. Real files throughout.

``CTXWIN_FUZZ_EXAMPLES=2000 pytest tests/history/test_identity.py`` is the longer run.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import warnings
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxwin.history._errors import HistoryFormatError, TornLineWarning
from ctxwin.history._jsonl import FileChatMessageHistory
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, message_to_dict

EXAMPLES = int(os.environ.get("CTXWIN_FUZZ_EXAMPLES") or 200)
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def conversation(prefix: str, count: int) -> list[BaseMessage]:
    return [(HumanMessage if i % 2 == 0 else AIMessage)(f"{prefix} message {i}: " + "x" * (i * 13 % 70))
            for i in range(count)]


# ---- JSONL ----

def jsonl(path: Path, messages: list[BaseMessage]) -> bytes:
    FileChatMessageHistory(path).add_messages(messages)
    return path.read_bytes()


def read_jsonl(path: Path) -> list[BaseMessage]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TornLineWarning)
        return FileChatMessageHistory(path).messages


def test_every_file_starts_with_an_identity_of_its_own(tmp_path: Path) -> None:
    firsts = [jsonl(tmp_path / f"{name}.jsonl", conversation(name, 2)).split(b"\n", 1)[0] for name in "ab"]
    headers = [json.loads(first) for first in firsts]
    assert all(header.keys() == {"ctxwin_history", "identity", "crc"} for header in headers)
    assert headers[0]["identity"] != headers[1]["identity"]


@pytest.mark.parametrize("how", ["replaces", "inserted", "appended"])
def test_a_line_of_another_history_is_refused_naming_the_file_and_line(tmp_path: Path, how: str) -> None:
    """The issue's finding: a line of another history at the same place (its number the one expected there) read as
    this history's. Its checksum is bound to the other history's identity now."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    ours = jsonl(a, conversation("A", 3)).splitlines(keepends=True)
    theirs = jsonl(b, conversation("B", 5)).splitlines(keepends=True)
    if how == "replaces":  # B's record 2 where A's record 2 was
        lines, where = [*ours[:2], theirs[2], *ours[3:]], 3
    elif how == "inserted":
        lines, where = [*ours[:2], theirs[2], *ours[2:]], 3
    else:  # B's record 4 after A's record 3
        lines, where = [*ours, theirs[4]], 5
    spliced = b"".join(lines)
    a.write_bytes(spliced)
    message = rf"{a}: line {where} \(byte \d+\) is damaged: its checksum does not match its bytes and this history's"
    with pytest.raises(HistoryFormatError, match=message) as error:
        read_jsonl(a)
    assert "another history" in str(error.value)
    with pytest.raises(HistoryFormatError, match="refusing to append"):
        FileChatMessageHistory(a).add_message(HumanMessage("after"))
    assert a.read_bytes() == spliced


def test_a_line_moved_within_the_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = jsonl(path, conversation("A", 4)).splitlines(keepends=True)
    path.write_bytes(b"".join([lines[0], *lines[2:], lines[1]]))  # record 1 moved to the end
    with pytest.raises(HistoryFormatError, match=rf"{path}: line 2 \(byte \d+\) is record 2 but record 1 was expected"
                                                 r".*\(damaged, moved or spliced lines\)"):
        read_jsonl(path)


@pytest.mark.slow
def test_a_crash_while_the_first_append_writes_the_header_is_recovered(tmp_path: Path) -> None:
    """A new file's first append writes its header and records in one write; a crash at any byte of the header or
    the first record leaves a torn line (skipped with a warning, never called another history's), and the next
    append seals it and gives the file its identity."""
    path = tmp_path / "a.jsonl"
    whole = jsonl(path, conversation("A", 2))
    header_end = whole.index(b"\n") + 1
    second_line_end = whole.index(b"\n", header_end) + 1
    for cut in [*range(1, header_end + 1), *range(header_end + 1, second_line_end - 1, 5), second_line_end - 1]:
        path.write_bytes(whole[:cut])  # the file as the crash left it
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert FileChatMessageHistory(path).messages == conversation("A", 2)[: int(cut == second_line_end - 1)]
        assert all(issubclass(w.category, TornLineWarning) for w in caught)
        FileChatMessageHistory(path).add_message(HumanMessage("after"))
        assert read_jsonl(path) == [*conversation("A", 2)[: int(cut == second_line_end - 1)], HumanMessage("after")]
        headers = [line for line in path.read_bytes().splitlines() if line.startswith(b'{"ctxwin_history": ')]
        assert sum(header.endswith(b'"}') for header in headers) == 1  # one whole header: the torn one is sealed


text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=30)


@pytest.mark.slow
@FUZZ
@given(
    a=st.lists(st.lists(text, min_size=1, max_size=3), min_size=1, max_size=3),
    b=st.lists(st.lists(text, min_size=1, max_size=3), min_size=1, max_size=3),
    which=st.integers(0, 100), where=st.integers(0, 100), replace=st.booleans(),
)
def test_any_line_of_another_history_spliced_in_is_refused(
    a: list[list[str]], b: list[list[str]], which: int, where: int, replace: bool
) -> None:
    """The property of the issue: for two histories with any contents, any line of one spliced into the other (in
    place of a line or between two, the header included) is refused, never read as the other's."""
    with tempfile.TemporaryDirectory() as directory:
        files = []
        for name, batches in (("a", a), ("b", b)):
            path = Path(directory) / f"{name}.jsonl"
            for batch in batches:
                FileChatMessageHistory(path).add_messages([HumanMessage(t) for t in batch])
            files.append(path)
        ours = files[0].read_bytes().splitlines(keepends=True)
        theirs = files[1].read_bytes().splitlines(keepends=True)
        line = theirs[which % len(theirs)]
        place = where % (len(ours) + (not replace))
        files[0].write_bytes(b"".join([*ours[:place], line, *ours[place + replace :]]))
        with pytest.raises(HistoryFormatError, match=re.escape(str(files[0]))):
            read_jsonl(files[0])


def test_a_file_written_before_identities_is_read_and_gets_one_at_its_first_append(tmp_path: Path) -> None:
    """The decision for files without an identity (written before issue 52, in both earlier formats): read as
    before; the first append writes a header after their lines and binds what follows, so a line of another history
    (or one in the old format) added after it is refused. The old lines stay unbound."""
    path = tmp_path / "old.jsonl"
    old = [json.dumps(message_to_dict(m), ensure_ascii=False).encode() for m in conversation("old", 2)]
    for seq, message in enumerate(conversation("numbered", 2), 1):  # issue 44's lines: a CRC of the line alone
        body = json.dumps(message_to_dict(message), ensure_ascii=False).encode()[:-1] + b', "seq": %d, "crc": "' % seq
        old.append(body + b"%08x" % zlib.crc32(body) + b'"}')
    path.write_bytes(b"\n".join(old) + b"\n")
    before = [*conversation("old", 2), *conversation("numbered", 2)]
    assert read_jsonl(path) == before
    FileChatMessageHistory(path).add_messages(conversation("new", 2))
    lines = path.read_bytes().splitlines()
    assert lines[:4] == old and json.loads(lines[4]).keys() == {"ctxwin_history", "identity", "crc"}
    assert read_jsonl(path) == [*before, *conversation("new", 2)]
    FileChatMessageHistory(path).add_message(HumanMessage("third"))  # found again after the old lines
    assert read_jsonl(path)[-1] == HumanMessage("third")
    bound = path.read_bytes()

    other = jsonl(tmp_path / "other.jsonl", conversation("other", 5)).splitlines(keepends=True)
    path.write_bytes(bound + other[4])  # the other history's record 4, numbered as this one's next
    with pytest.raises(HistoryFormatError, match=rf"{path}: line 9 .* checksum does not match"):
        read_jsonl(path)
    path.write_bytes(bound + old[0] + b"\n")  # a line in the format before checksums
    with pytest.raises(HistoryFormatError, match=rf"{path}: line 9 .* has no checksum, so it does not belong"):
        read_jsonl(path)
