"""SQLiteChatMessageHistory: persistence, sessions, WAL, schema versioning and refusal of foreign files."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from ctxwin.history.errors import HistoryFormatError
from ctxwin.history.sqlite import SCHEMA_VERSION, SQLiteChatMessageHistory
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
    assert meta == {"schema": "ctxwin.history", "version": str(SCHEMA_VERSION)}


def test_newer_schema_is_refused(path: Path) -> None:
    SQLiteChatMessageHistory(path, "s").close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE ctxwin_meta SET value = ? WHERE key = 'version'", (str(SCHEMA_VERSION + 1),))
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
