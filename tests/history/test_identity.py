"""Records bound to their history (issue 52): every JSONL line and SQLite row carries its history's identity, so a
line, a row, a page or a ``-wal`` file of another history (or of another copy of this one) is refused, naming the
file, instead of being read as this history's. Real files and real SQLite throughout.

``CTXWIN_FUZZ_EXAMPLES=2000 pytest tests/history/test_identity.py`` is the longer run.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sqlite3
import tempfile
import threading
import warnings
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxwin.history._errors import HistoryFormatError, TornLineWarning
from ctxwin.history._jsonl import FileChatMessageHistory
from ctxwin.history._sqlite import SQLiteChatMessageHistory
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


# ---- SQLite ----

def sqlite_history(path: Path, messages: list[BaseMessage], session: str = "s") -> None:
    with SQLiteChatMessageHistory(path, session) as history:
        history.add_messages(messages)


def read_sqlite(path: Path, session: str = "s") -> list[BaseMessage]:
    with SQLiteChatMessageHistory(path, session) as history:
        return history.messages


def held_log(path: Path, batches: list[list[BaseMessage]]) -> bytes:
    """The ``-wal`` file of the history at ``path`` after ``batches`` were added with a reader's snapshot held
    (as a copy taken while it runs holds it): no checkpoint gets past the reader, so the log holds them all."""
    history = SQLiteChatMessageHistory(path, "s")
    pin = sqlite3.connect(path, isolation_level=None)
    pin.execute("BEGIN")
    pin.execute("SELECT count(*) FROM ctxwin_messages").fetchone()
    for batch in batches:
        history.add_messages(batch)
    wal = Path(f"{path}-wal").read_bytes()
    pin.close()
    history.close()
    return wal


@pytest.fixture
def ours(tmp_path: Path) -> Path:
    """A closed history of 5 messages (no -wal file beside it)."""
    path = tmp_path / "a.db"
    sqlite_history(path, conversation("A", 5))
    assert not Path(f"{path}-wal").exists()
    return path


def refused(path: Path, match: str) -> None:
    """Opening ``path`` with ``wal`` beside it is refused, naming the -wal file, and neither file is changed; with
    the -wal moved away, the history reads its own messages."""
    wal = Path(f"{path}-wal")
    before = path.read_bytes(), wal.read_bytes()
    with pytest.raises(HistoryFormatError, match=rf"{wal}: {match}.*not modified"):
        SQLiteChatMessageHistory(path, "s")
    assert (path.read_bytes(), wal.read_bytes()) == before
    wal.unlink()
    Path(f"{path}-shm").unlink(missing_ok=True)
    assert read_sqlite(path) == conversation("A", 5)


@pytest.mark.parametrize("cut", [False, True], ids=["whole", "cut-short"])
def test_the_wal_of_another_history_is_refused_before_sqlite_reads_it(ours: Path, tmp_path: Path, cut: bool) -> None:
    """The issue's reproducer: another history's -wal beside this one was replayed into it, its messages read
    back as this history's."""
    wal = held_log(tmp_path / "b.db", [conversation("B", 3), conversation("B", 4)])
    if cut:  # a copy cut short inside a frame, after its first commit
        wal = wal[: wal.index(b"B message 3")]
    Path(f"{ours}-wal").write_bytes(wal)
    refused(ours, r"frame \d+ ends a commit of another database")


@pytest.mark.parametrize("log", ["its schema", "a data page"])
def test_the_wal_of_a_database_that_is_not_a_history_is_refused(ours: Path, tmp_path: Path, log: str) -> None:
    other = tmp_path / "users.db"
    conn = sqlite3.connect(other, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    if log == "a data page":
        conn.execute("CREATE TABLE users (name TEXT)")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("INSERT INTO users VALUES ('x')")  # only the table's page changes
    else:
        conn.execute("CREATE TABLE users (name TEXT)")
    Path(f"{ours}-wal").write_bytes(Path(f"{other}-wal").read_bytes())
    conn.close()
    refused(ours, r"frame \d+ ends a commit (ctxwin did not make|of another database)")


def test_the_wal_of_an_older_copy_of_this_history_is_refused(ours: Path) -> None:
    """A -wal file copied with the database earlier, put back beside it after more was added: SQLite would put the
    older pages back over the newer ones."""
    old = held_log(ours, [conversation("more", 2)])
    sqlite_history(ours, conversation("later", 3))
    Path(f"{ours}-wal").write_bytes(old)
    with pytest.raises(HistoryFormatError, match=rf"{ours}-wal: it holds commits \d+-\d+ of this history, which do not "
                                                 r"continue the database file's commit \d+.*not modified"):
        read_sqlite(ours)
    Path(f"{ours}-wal").unlink()
    assert read_sqlite(ours) == [*conversation("A", 5), *conversation("more", 2), *conversation("later", 3)]


def test_an_older_copy_of_the_database_file_beside_the_wal_is_refused(ours: Path, tmp_path: Path) -> None:
    older = ours.read_bytes()
    sqlite_history(ours, conversation("more", 2))
    wal = held_log(ours, [conversation("later", 3)])
    ours.write_bytes(older)  # the log's commits follow a database state this file does not have
    Path(f"{ours}-wal").write_bytes(wal)
    with pytest.raises(HistoryFormatError, match=rf"{ours}-wal: .* do not continue the database file's commit"):
        read_sqlite(ours)


@pytest.mark.parametrize("content", [b"\x8b garbage, not a log " * 500, b"7\x7f\x06\x82\x00-\xe2\x18 cut short"],
                         ids=["other-bytes", "cut-short-header"])
def test_bytes_that_are_no_log_beside_a_history_are_refused(ours: Path, content: bytes) -> None:
    Path(f"{ours}-wal").write_bytes(content)
    refused(ours, r"it is not an SQLite log")


def test_an_empty_or_zeroed_log_beside_a_history_is_nothing_to_read(ours: Path) -> None:
    """What SQLite leaves (an empty log) and what a power loss can leave where a log was being started (zeros) are
    no one's log: the history reads as its database file holds it."""
    for content in (b"", bytes(4096 * 3)):
        Path(f"{ours}-wal").write_bytes(content)
        assert read_sqlite(ours) == conversation("A", 5)


@pytest.mark.slow
def test_this_history_s_own_log_cut_short_reads_a_prefix_without_an_error(ours: Path) -> None:
    """A crash (or a copy taken while a writer ran) cuts the log short at any byte: what is left of it is this
    history's own, read as a shorter history (the commits cut off were never in the database file), never refused."""
    database = ours.read_bytes()
    wal = held_log(ours, [[m] for m in conversation("more", 6)])
    rng = random.Random(52)
    for cut in [0, 32, len(wal), *rng.sample(range(33, len(wal)), 30)]:
        ours.write_bytes(database)
        Path(f"{ours}-wal").write_bytes(wal[:cut])
        Path(f"{ours}-shm").unlink(missing_ok=True)
        read = read_sqlite(ours)
        assert read == [*conversation("A", 5), *conversation("more", 6)][: len(read)] and len(read) >= 5, cut


def test_a_page_of_another_history_is_never_read_as_this_one(tmp_path: Path) -> None:
    """Each page of another history (same session, same shape, other words) written over the same page of this
    one: every message of this history read back, or an error naming the file; never the other's messages."""
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    sqlite_history(a, conversation("A", 60))
    sqlite_history(b, conversation("B", 60))
    ours, theirs = a.read_bytes(), b.read_bytes()
    refusals = 0
    for page in range(min(len(ours), len(theirs)) // 4096):
        mixed = ours[: page * 4096] + theirs[page * 4096 : (page + 1) * 4096] + ours[(page + 1) * 4096 :]
        if mixed == ours:
            continue
        path = tmp_path / f"page{page}.db"
        path.write_bytes(mixed)
        try:
            assert read_sqlite(path) == conversation("A", 60), f"page {page + 1}"
        except HistoryFormatError as exc:
            assert str(path) in str(exc)
            refusals += 1
    assert refusals >= 3  # the header, the messages, the sessions' last numbers at least


@pytest.mark.slow
@pytest.mark.parametrize(("statements", "match"), [
    (["UPDATE ctxwin_messages SET (message, crc) = (SELECT message, crc FROM b.ctxwin_messages WHERE n = 2) "
      "WHERE n = 2"], r"row 2 of session 's' is damaged: its checksum does not match this history's identity"),
    (["DELETE FROM ctxwin_messages WHERE n = 3", "UPDATE ctxwin_sessions SET (last, crc) = (SELECT last, crc FROM "
      "b.ctxwin_sessions)"], r"the last row number of session 's' \(2\) is damaged or another history's"),
], ids=["message", "session"])
def test_a_row_of_another_history_is_refused(tmp_path: Path, statements: list[str], match: str) -> None:
    """Rows copied from another history with their checksums (by SQL, so SQLite finds nothing wrong)."""
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    sqlite_history(a, conversation("A", 3))
    sqlite_history(b, conversation("B", 2))
    conn = sqlite3.connect(a)
    with conn:
        conn.execute("ATTACH ? AS b", (str(b),))
        for statement in statements:
            conn.execute(statement)
    conn.close()
    with pytest.raises(HistoryFormatError, match=rf"{a}: {match}"):
        read_sqlite(a)


def version_2(path: Path, sessions: dict[str, list[BaseMessage]]) -> None:
    """A database as ctxwin wrote it before identities (schema version 2): rows numbered, with the CRC-32 of
    their session, number and message."""
    conn = sqlite3.connect(path)
    with conn:
        conn.executescript(
            "PRAGMA journal_mode=WAL;"
            "CREATE TABLE ctxwin_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "CREATE TABLE ctxwin_messages (seq INTEGER PRIMARY KEY, session_id TEXT NOT NULL, message TEXT NOT NULL,"
            " created_at REAL NOT NULL, n INTEGER, crc INTEGER);"
            "CREATE INDEX ctxwin_messages_by_session ON ctxwin_messages (session_id, seq);"
            "CREATE TABLE ctxwin_sessions (session_id TEXT PRIMARY KEY, last INTEGER NOT NULL);"
            "INSERT INTO ctxwin_meta VALUES ('schema', 'ctxwin.history'), ('version', '2');"
        )
        for session, messages in sessions.items():
            for n, message in enumerate(messages, 1):
                text = json.dumps(message_to_dict(message), ensure_ascii=False)
                crc = zlib.crc32(text.encode(), zlib.crc32(f"{session}\x00{n}\x00".encode()))
                conn.execute("INSERT INTO ctxwin_messages (session_id, message, created_at, n, crc) "
                             "VALUES (?, ?, 0, ?, ?)", (session, text, n, crc))
            conn.execute("INSERT INTO ctxwin_sessions VALUES (?, ?)", (session, len(messages)))
    conn.close()


@pytest.mark.slow
def test_a_database_written_before_identities_gets_one_at_its_first_writer(ours: Path, tmp_path: Path) -> None:
    """The decision for databases without an identity (schema version 2): the first instance that may write it
    checks every row's old checksum and gives the history its identity, rows and sessions re-checksummed with it;
    from then on its -wal is bound to it too."""
    path = tmp_path / "v2.db"
    version_2(path, {"s": conversation("A", 5), "t": conversation("T", 2)})
    assert read_sqlite(path) == conversation("A", 5) and read_sqlite(path, "t") == conversation("T", 2)
    conn = sqlite3.connect(path)
    meta = dict(conn.execute("SELECT key, value FROM ctxwin_meta").fetchall())
    header = conn.execute("PRAGMA application_id").fetchone()[0]
    conn.close()
    assert meta["version"] == "3" and header == int.from_bytes(bytes.fromhex(meta["identity"][:4 * 2]), "big",
                                                               signed=True)
    Path(f"{path}-wal").write_bytes(held_log(tmp_path / "b.db", [conversation("B", 2)]))
    with pytest.raises(HistoryFormatError, match=rf"{path}-wal: frame \d+ ends a commit of another database"):
        read_sqlite(path)


@pytest.mark.slow
def test_a_log_holding_commits_from_before_the_identity_opens_after_the_upgrade(tmp_path: Path) -> None:
    """A version 2 database's log can still hold commits made before it had an identity (not yet copied into the
    database file) when a writer gives it one: they precede the commit that gave it one (its commit 1), and the log
    is this history's, before and after a checkpoint copies it."""
    path = tmp_path / "v2.db"
    version_2(path, {"s": conversation("A", 3)})
    pin = sqlite3.connect(path, isolation_level=None)  # a reader's snapshot: no checkpoint gets past it
    pin.execute("BEGIN")
    pin.execute("SELECT count(*) FROM ctxwin_messages").fetchone()
    older = sqlite3.connect(path, isolation_level=None)  # what a ctxwin before identities appended, left in the log
    text = json.dumps(message_to_dict(HumanMessage("older")), ensure_ascii=False)
    older.execute("INSERT INTO ctxwin_messages (session_id, message, created_at, n, crc) VALUES ('s', ?, 0, 4, ?)",
                  (text, zlib.crc32(text.encode(), zlib.crc32(b"s\x004\x00"))))
    older.execute("UPDATE ctxwin_sessions SET last = 4")
    expected = [*conversation("A", 3), HumanMessage("older")]
    with SQLiteChatMessageHistory(path, "s") as writer:  # gives the history its identity, in the log after them
        writer.add_message(HumanMessage("newer"))
        expected.append(HumanMessage("newer"))
        assert read_sqlite(path) == expected
        pin.close()
        older.execute("PRAGMA wal_checkpoint(PASSIVE)")  # the log copied into the database file, and left as it is
        assert older.execute("PRAGMA application_id").fetchone()[0] != 0
        assert read_sqlite(path) == expected
    older.close()


def test_a_damaged_row_stops_a_database_from_getting_its_identity(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    version_2(path, {"s": conversation("A", 3), "t": conversation("T", 2)})
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE ctxwin_messages SET message = replace(message, 'T message', 'X message') WHERE seq = 5")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(HistoryFormatError, match=rf"{path}: row 5 of session 't' is damaged: its checksum does "
                                                 r"not match; not modified \(a database is given its identity only"):
        SQLiteChatMessageHistory(path, "s")
    assert path.read_bytes() == before


@pytest.mark.slow
@pytest.mark.parametrize("log", ["emptied", "live"])
def test_a_file_replaced_under_an_open_history_is_refused(tmp_path: Path, log: str) -> None:
    """Another thread's first use opens the path again: a file that now holds another history is not written. With
    the open history's log still beside it, SQLite reads that log into the other file: refused too."""
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    sqlite_history(b, conversation("B", 2))
    history = SQLiteChatMessageHistory(a, "s")
    history.add_messages(conversation("A", 2))
    if log == "emptied":
        conn = sqlite3.connect(a)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
    shutil.copy(b, tmp_path / "copy.db")
    os.replace(tmp_path / "copy.db", a)
    errors: list[Exception] = []

    def write() -> None:
        try:
            history.add_message(HumanMessage("into which history?"))
        except HistoryFormatError as exc:
            errors.append(exc)

    thread = threading.Thread(target=write)
    thread.start()
    thread.join()
    history.close()
    expected = ("now holds another history than when this object opened it" if log == "emptied"
                else "its header and its ctxwin_meta table name different histories")
    assert len(errors) == 1 and str(errors[0]).startswith(f"{a}: {expected}")
    if log == "emptied":  # (closing the live log's last connection copies it into the file: SQLite's doing)
        assert read_sqlite(a) == conversation("B", 2)
