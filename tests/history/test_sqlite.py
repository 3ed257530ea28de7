"""SQLiteChatMessageHistory: persistence, sessions, WAL, schema versioning and refusal of foreign files."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxwin.history._errors import HistoryFormatError
from ctxwin.history._sqlite import SCHEMA_VERSION, SQLiteChatMessageHistory
from ctxwin.messages import AIMessage, HumanMessage


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "chat.db"


def test_persists_across_reopening_and_sessions_are_separate(path: Path) -> None:
    with SQLiteChatMessageHistory(path, "alice") as alice, SQLiteChatMessageHistory(path, "bob") as bob:
        alice.add_messages([HumanMessage("hi"), AIMessage("hello")])
        bob.add_user_message("other")
        bob.clear()
        bob.add_user_message("bob's")
    with SQLiteChatMessageHistory(path, "alice") as alice:
        assert alice.messages == [HumanMessage("hi"), AIMessage("hello")]
    with SQLiteChatMessageHistory(path, "bob") as bob:
        assert bob.messages == [HumanMessage("bob's")]


def test_wal_mode_and_versioned_schema(path: Path) -> None:
    SQLiteChatMessageHistory(path, "s").close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        meta = dict(conn.execute("SELECT key, value FROM ctxwin_meta").fetchall())
    conn.close()
    assert meta.pop("identity") and meta == {"schema": "ctxwin.history", "version": str(SCHEMA_VERSION)}


def test_newer_schema_is_refused(path: Path) -> None:
    SQLiteChatMessageHistory(path, "s").close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE ctxwin_meta SET value = ? WHERE key = 'version'", (str(SCHEMA_VERSION + 1),))
    conn.close()  # its commit copied into the database file: a -wal with it would not be a ctxwin commit
    with pytest.raises(HistoryFormatError, match="newer ctxwin"):
        SQLiteChatMessageHistory(path, "s")


def test_foreign_database_is_refused_and_left_alone(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
    with pytest.raises(HistoryFormatError, match=r"not a ctxwin history database .*users"):
        SQLiteChatMessageHistory(path, "s")
    with sqlite3.connect(path) as conn:
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    assert tables == ["users"]


def test_meta_table_of_someone_else_is_refused(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE ctxwin_meta (key TEXT, value TEXT)")
        conn.execute("INSERT INTO ctxwin_meta VALUES ('schema', 'other')")
    with pytest.raises(HistoryFormatError, match="does not describe a ctxwin history"):
        SQLiteChatMessageHistory(path, "s")


@pytest.mark.parametrize("content", [b"hello, this is a text file\n", b"SQLite format 3\x00" + b"\xff" * 200])
def test_non_sqlite_or_damaged_file_is_refused_and_not_modified(path: Path, content: bytes) -> None:
    path.write_bytes(content)
    with pytest.raises(HistoryFormatError, match="not"):
        SQLiteChatMessageHistory(path, "s")
    assert path.read_bytes() == content


def test_corrupt_row_names_the_row(path: Path) -> None:
    with SQLiteChatMessageHistory(path, "s") as history:
        history.add_user_message("ok")
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO ctxwin_messages (session_id, message, created_at) VALUES ('s', '{oops', 0)")
    conn.close()
    with SQLiteChatMessageHistory(path, "s") as history, pytest.raises(HistoryFormatError, match=r"row 2 .* corrupt"):
        _ = history.messages


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"session_id": ""}, "session_id"),
        ({"session_id": 3}, "session_id"),
        ({"session_id": "s", "synchronous": "OFF"}, "synchronous"),
    ],
)
def test_bad_arguments(path: Path, kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SQLiteChatMessageHistory(path, **kwargs)  # type: ignore[arg-type]


def test_in_memory_database_is_refused() -> None:
    with pytest.raises(ValueError, match="InMemoryChatMessageHistory"):
        SQLiteChatMessageHistory(":memory:", "s")


def test_batch_is_atomic(path: Path) -> None:
    with SQLiteChatMessageHistory(path, "s") as history:
        history.add_user_message("before")
        with pytest.raises(TypeError):
            history.add_messages([HumanMessage("a"), HumanMessage("b", additional_kwargs={"x": float("nan")})])
        assert history.messages == [HumanMessage("before")]


def _append_in_child(history: SQLiteChatMessageHistory) -> None:
    history.add_user_message("from the child")


def test_forked_child_uses_its_own_connection(path: Path) -> None:
    history = SQLiteChatMessageHistory(path, "s")
    history.add_user_message("from the parent")
    child = multiprocessing.get_context("fork").Process(target=_append_in_child, args=(history,))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    history.add_user_message("parent again")
    assert [m.content for m in history.messages] == ["from the parent", "from the child", "parent again"]
    history.close()


def test_missing_directory_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(sqlite3.OperationalError, match="no-such-dir"):
        SQLiteChatMessageHistory(tmp_path / "no-such-dir" / "chat.db", "s")


@pytest.mark.parametrize(
    ("stored", "problem"),
    [
        ("'{\"type\": \"alien\", \"data\": {}}'", "unexpected message type"),
        ("CAST(X'7B2274797065223A20FF' AS TEXT)", "corrupt"),  # not UTF-8: a row error, not sqlite3's own
        ("5", "expected a dict"),
        ("'" + "[" * 100_000 + "'", "corrupt"),  # json.loads would raise RecursionError
        ("'" + "1" * 5_000 + "'", "corrupt"),  # int() refuses over 4,300 digits
    ],
)
def test_unreadable_rows_name_the_file_and_row(path: Path, stored: str, problem: str) -> None:
    with SQLiteChatMessageHistory(path, "s") as history:
        history.add_user_message("ok")
    with sqlite3.connect(path) as conn:
        conn.execute(f"INSERT INTO ctxwin_messages (session_id, message, created_at) VALUES ('s', {stored}, 0)")
    conn.close()
    with SQLiteChatMessageHistory(path, "s") as history, pytest.raises(HistoryFormatError) as error:
        _ = history.messages
    assert f"{path}: row 2 of session 's' is corrupt" in str(error.value) and problem in str(error.value)


# --- a database this process may not write (issue 19: reading forced WAL and failed) ----------------------------

READER = """
import json, sys
from ctxwin.history._sqlite import SQLiteChatMessageHistory

try:
    history = SQLiteChatMessageHistory(sys.argv[1], "s")
    report = {"read_only": history.read_only, "messages": [m.content for m in history.messages]}
    try:
        history.add_user_message("not allowed")
    except PermissionError as exc:
        report["write"] = str(exc)
except Exception as exc:
    report = {"error": f"{type(exc).__name__}: {exc}"}
print(json.dumps(report))
"""


def read_without_write_access(path: Path) -> dict[str, Any]:
    """Run READER in a process that cannot write where the permission bits say so.

    Root writes anywhere, so as root the child runs without the capabilities that allow it (``setpriv`` drops them
    from its bounding set), and the permission bits apply to it as to any owner.
    """
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        drop = [setpriv or "setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]
        if setpriv is None or subprocess.run([*drop, "true"], capture_output=True).returncode != 0:
            pytest.skip("running as root, and util-linux's setpriv cannot drop the capability to write anywhere")
        prefix = drop
    result = subprocess.run([*prefix, sys.executable, "-c", READER, str(path)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory holding a closed WAL history of two messages, made read-only for the test."""
    directory = tmp_path / "ro"
    directory.mkdir()
    with SQLiteChatMessageHistory(directory / "chat.db", "s") as history:
        history.add_messages([HumanMessage("hi"), AIMessage("hello")])
    yield directory
    directory.chmod(0o755)
    for file in directory.iterdir():
        file.chmod(0o644)


@pytest.mark.slow
def test_reads_a_history_in_a_read_only_directory_without_writing(read_only_dir: Path) -> None:
    files = {p.name: p.read_bytes() for p in read_only_dir.iterdir()}
    assert set(files) == {"chat.db"}  # closed cleanly: no -wal or -shm left, so SQLite cannot make its index
    read_only_dir.chmod(0o555)
    report = read_without_write_access(read_only_dir / "chat.db")
    assert report["read_only"] is True and report["messages"] == ["hi", "hello"]
    assert "opened read-only" in report["write"]
    assert {p.name: p.read_bytes() for p in read_only_dir.iterdir()} == files  # nothing created or changed


@pytest.mark.slow
def test_reads_a_read_only_file_in_a_writable_directory(read_only_dir: Path) -> None:
    database = read_only_dir / "chat.db"
    database.chmod(0o444)
    before = database.read_bytes()
    report = read_without_write_access(database)
    assert report["read_only"] is True and report["messages"] == ["hi", "hello"]
    assert "opened read-only" in report["write"] and database.read_bytes() == before


WRITE_AND_DIE = """
import os, sys
from ctxwin.history._sqlite import SQLiteChatMessageHistory
from ctxwin.messages import HumanMessage

history = SQLiteChatMessageHistory(sys.argv[1], "s")
history.add_message(HumanMessage("only in the WAL"))
os._exit(0)  # no checkpoint on close: the message lives in chat.db-wal, with its chat.db-shm index
"""


@pytest.mark.slow
def test_commits_left_in_a_wal_file_are_read_or_refused_never_missed(read_only_dir: Path) -> None:
    database = read_only_dir / "chat.db"
    subprocess.run([sys.executable, "-c", WRITE_AND_DIE, str(database)], check=True, timeout=60)
    assert {p.name for p in read_only_dir.iterdir()} == {"chat.db", "chat.db-wal", "chat.db-shm"}
    read_only_dir.chmod(0o555)
    report = read_without_write_access(database)
    assert report["messages"] == ["hi", "hello", "only in the WAL"]
    read_only_dir.chmod(0o755)
    (read_only_dir / "chat.db-shm").unlink()  # without the index, SQLite would need to create one here
    read_only_dir.chmod(0o555)
    report = read_without_write_access(database)
    assert report["error"].startswith(f"PermissionError: {database}: cannot read this WAL database read-only")


@pytest.mark.slow
def test_empty_database_file_in_a_read_only_directory_is_an_empty_history(tmp_path: Path) -> None:
    directory = tmp_path / "ro"
    directory.mkdir()
    (directory / "chat.db").touch()
    directory.chmod(0o555)
    try:
        report = read_without_write_access(directory / "chat.db")
    finally:
        directory.chmod(0o755)
    assert report["messages"] == [] and "opened read-only" in report["write"]
