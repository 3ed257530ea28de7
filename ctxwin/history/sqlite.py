"""SQLiteChatMessageHistory: the embedded default for persistent chat histories (stdlib ``sqlite3``).

Concurrency and durability, and why:
- WAL journal: readers never block the writer, and a writer killed mid-transaction leaves the database intact
  (the uncommitted frames are ignored on the next open).
- Every append is one ``BEGIN IMMEDIATE`` transaction: the write lock is taken up front, so concurrent writers
  queue on the busy timeout instead of failing half-way; a batch is stored whole or not at all. Rows are numbered
  by an ``INTEGER PRIMARY KEY``, which only grows within a writer's sequence of commits, so each writer's order is
  kept. A retried ``BEGIN`` has written nothing, so retrying never duplicates a message.
- ``synchronous=FULL`` (default): in WAL mode this syncs the log on every commit, so a message is durable once
  ``add_message`` returns, even across a power loss. ``NORMAL`` survives a crash of the process but may lose the
  last commits on power loss; it is offered for speed, not the default.
- One connection per thread (SQLite connections must not be used by two threads at once), re-made after a
  ``fork``; the async methods run in worker threads, each with its own connection.
- The schema is versioned in a ``ctxwin_meta`` table; a foreign database, a newer schema or a file that is not
  SQLite raises ``HistoryFormatError`` and is left untouched, and so does a damaged one (SQLite's "database disk
  image is malformed" wherever it is met, opening, reading or writing): the error names the file.
- An existing database whose file or directory this process may not write (a read-only mount, someone else's
  history) is opened read-only: no switch to WAL, no schema, no write at all, and every write raises
  ``PermissionError``. Reading a WAL database needs its ``-shm`` index; where none exists and none can be made,
  SQLite's ``immutable`` mode reads the file as it is, which is exact only because no ``-wal`` file holds commits
  (with one, reading is refused rather than missing them).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Literal, TypeVar

from ctxwin.history.base import BaseChatMessageHistory, Form
from ctxwin.history.codec import is_utf8, message_json
from ctxwin.history.errors import HistoryFormatError
from ctxwin.messages import BaseMessage, message_from_dict

SCHEMA_NAME = "ctxwin.history"
SCHEMA_VERSION = 1
_SQLITE_HEADER = b"SQLite format 3\x00"
_SCHEMA = (
    "CREATE TABLE ctxwin_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE ctxwin_messages (seq INTEGER PRIMARY KEY, session_id TEXT NOT NULL, message TEXT NOT NULL, "
    "created_at REAL NOT NULL)",
    "CREATE INDEX ctxwin_messages_by_session ON ctxwin_messages (session_id, seq)",
)
T = TypeVar("T")
_BEGIN_ATTEMPTS = 5  # on top of the busy timeout, for SQLITE_BUSY that bypasses the busy handler


class SQLiteChatMessageHistory(BaseChatMessageHistory):
    """The messages of one session in an SQLite database file; many sessions may share a file.

    ``timeout`` is how long a writer waits for another's transaction (seconds). Call ``close()`` (or use it as a
    context manager) when done; it closes every thread's connection, so do it when no thread is using them.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        session_id: str,
        *,
        timeout: float = 30.0,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        form: Form = "messages",
    ) -> None:
        super().__init__(form=form)
        if not isinstance(session_id, str) or not session_id or not is_utf8(session_id):
            raise ValueError(f"session_id must be a non-empty string of valid Unicode, got {session_id!r}")
        if str(path) == ":memory:" or str(path).startswith("file::memory:"):
            raise ValueError(
                "an in-memory SQLite database is private to one connection; use InMemoryChatMessageHistory"
            )
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r}")
        self.path = Path(path)
        self.session_id = session_id
        self.timeout = timeout
        self.synchronous = synchronous
        self._registry = threading.Lock()
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._pid = os.getpid()
        # An existing database this process may not change is read without writing to it (module docstring).
        self.read_only = self.path.exists() and not all(os.access(p, os.W_OK) for p in (self.path, self.path.parent))
        self._has_schema = True
        self._writes = 0  # add_messages and clear calls, for revision()
        self._connection()  # open now, so a bad file fails here and not at first use

    def stored_messages(self) -> list[BaseMessage]:
        conn = self._connection()
        if not self._has_schema:  # an empty database opened read-only: nothing was ever stored
            return []
        with self._damage_named():
            rows = conn.execute(  # as bytes, so text that is not UTF-8 is a corrupt row, not a bare sqlite3 error
                "SELECT seq, CAST(message AS BLOB) FROM ctxwin_messages WHERE session_id = ? ORDER BY seq",
                (self.session_id,),
            )
            return [self._decode(seq, data) for seq, data in rows]

    def store_messages(self, batch: list[BaseMessage]) -> None:
        rows = [(self.session_id, message_json(m, i)) for i, m in enumerate(batch)]
        if not rows:
            return

        def insert(conn: sqlite3.Connection) -> None:
            now = time.time()
            conn.executemany(
                "INSERT INTO ctxwin_messages (session_id, message, created_at) VALUES (?, ?, ?)",
                [(session, text, now) for session, text in rows],
            )

        self._transaction(insert)
        self._wrote()

    def clear_stored(self) -> None:
        self._transaction(
            lambda conn: conn.execute("DELETE FROM ctxwin_messages WHERE session_id = ?", (self.session_id,))
        )
        self._wrote()

    def revision(self) -> tuple[Hashable, int]:
        """SQLite's ``data_version`` of this thread's connection changes whenever another connection (another
        process, thread or history object) commits to the file; this object's own writes are counted."""
        conn = self._connection()
        with self._damage_named():
            return (os.getpid(), id(conn), conn.execute("PRAGMA data_version").fetchone()[0]), self._writes

    def _wrote(self) -> None:
        with self._registry:
            self._writes += 1

    def close(self) -> None:
        with self._registry:
            connections, self._connections = self._connections, []
            self._local = threading.local()
        for conn in connections:
            conn.close()

    def __enter__(self) -> SQLiteChatMessageHistory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _decode(self, seq: int, data: bytes) -> BaseMessage:
        try:
            return message_from_dict(json.loads(data))
        except (ValueError, TypeError, RecursionError) as exc:
            raise HistoryFormatError(
                f"{self.path}: row {seq} of session {self.session_id!r} is corrupt: {exc}"
            ) from None

    def _connection(self) -> sqlite3.Connection:
        if os.getpid() != self._pid:  # a forked child must not use its parent's connections
            with self._registry:
                self._pid, self._local, self._connections = os.getpid(), threading.local(), []
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
            with self._registry:
                self._connections.append(conn)
        return conn

    def _connect(self) -> sqlite3.Connection:
        _check_header(self.path)
        if self.read_only:
            return self._connect_read_only()
        return self._open(self.path, self._prepare)

    def _prepare(self, conn: sqlite3.Connection) -> None:
        mode = _retry_busy(lambda: conn.execute("PRAGMA journal_mode=WAL").fetchone()[0])
        if str(mode).lower() != "wal":
            raise HistoryFormatError(f"{self.path}: SQLite could not switch to WAL mode (got {mode!r})")
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        if not self._schema_ok(conn):
            self._transaction(self._create_schema, conn)

    def _connect_read_only(self) -> sqlite3.Connection:
        """A connection that cannot write (see the module docstring): ``mode=ro``, else ``immutable`` without a WAL."""
        uri = self.path.resolve().as_uri() + "?mode=ro"
        try:
            return self._open(uri, self._note_schema)
        except sqlite3.OperationalError as exc:  # no -shm index, and no right to create one
            if Path(f"{self.path}-wal").exists():
                raise PermissionError(
                    f"{self.path}: cannot read this WAL database read-only: its -wal file may hold commits and SQLite "
                    f"would need to create {self.path.name}-shm in a directory that is not writable ({exc})"
                ) from None
        return self._open(uri + "&immutable=1", self._note_schema)

    def _note_schema(self, conn: sqlite3.Connection) -> None:
        self._has_schema = self._schema_ok(conn)

    def _open(self, target: Path | str, prepare: Callable[[sqlite3.Connection], None]) -> sqlite3.Connection:
        """A connection to ``target`` (a path, or a ``file:`` URI) after ``prepare``; closed again if that fails.

        Errors name the file: a damaged database is a ``HistoryFormatError``, sqlite3's own errors get the path.
        """
        try:
            conn = sqlite3.connect(target, timeout=self.timeout, isolation_level=None, check_same_thread=False,
                                   uri=isinstance(target, str))
        except sqlite3.OperationalError as exc:
            raise sqlite3.OperationalError(f"{self.path}: {exc}") from None
        try:
            with self._damage_named():
                prepare(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    @contextlib.contextmanager
    def _damage_named(self) -> Iterator[None]:
        """SQLite's errors about the file as errors naming it: a damaged or foreign file (a ``DatabaseError`` such as
        "database disk image is malformed", a schema without the columns our statements name, text that is not
        UTF-8) is a ``HistoryFormatError``; any other ``OperationalError`` (disk I/O, locks) keeps its type, with the
        path."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            if str(exc).startswith(("no such table", "no such column")):  # our own statements: the schema is damaged
                raise HistoryFormatError(f"{self.path}: not a usable ctxwin history, damaged ({exc}); not "
                                         "modified") from None
            if str(self.path) in str(exc):
                raise
            raise sqlite3.OperationalError(f"{self.path}: {exc}") from exc
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise HistoryFormatError(f"{self.path}: not a usable SQLite database, damaged or foreign ({exc}); not "
                                     "modified") from None

    def _schema_ok(self, conn: sqlite3.Connection) -> bool:
        """True when the ctxwin schema is there; False when the database is empty; an error when it is foreign."""
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "ctxwin_meta" not in tables:
            if tables:
                raise HistoryFormatError(
                    f"{self.path}: not a ctxwin history database (it has tables {sorted(tables)}); not modified"
                )
            return False
        meta = dict(conn.execute("SELECT key, value FROM ctxwin_meta").fetchall())
        version = meta.get("version", "")
        if meta.get("schema") != SCHEMA_NAME or not version.isdigit():
            raise HistoryFormatError(
                f"{self.path}: ctxwin_meta does not describe a ctxwin history ({meta}); not modified"
            )
        if int(version) > SCHEMA_VERSION:
            raise HistoryFormatError(
                f"{self.path}: history schema version {version} was written by a newer ctxwin; this one reads up to "
                f"version {SCHEMA_VERSION}. Upgrade ctxwin"
            )
        return True

    def _create_schema(self, conn: sqlite3.Connection) -> None:
        if self._schema_ok(conn):  # another process created it while we waited for the lock
            return
        for statement in _SCHEMA:
            conn.execute(statement)
        conn.executemany(
            "INSERT INTO ctxwin_meta (key, value) VALUES (?, ?)",
            [("schema", SCHEMA_NAME), ("version", str(SCHEMA_VERSION))],
        )

    def _transaction(
        self, work: Callable[[sqlite3.Connection], object], conn: sqlite3.Connection | None = None
    ) -> None:
        """Run ``work`` in a ``BEGIN IMMEDIATE`` transaction and commit; roll back if anything fails."""
        if self.read_only:
            raise PermissionError(
                f"{self.path}: opened read-only (the file or its directory is not writable by this process); "
                "cannot add or clear messages"
            )
        conn = self._connection() if conn is None else conn
        with self._damage_named():
            _retry_busy(lambda: conn.execute("BEGIN IMMEDIATE"))
            try:
                work(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise


def _retry_busy(action: Callable[[], T]) -> T:
    """``action()``, retried with back-off while SQLite reports the database busy or locked."""
    attempt = 0
    while True:
        try:
            return action()
        except sqlite3.OperationalError as exc:
            attempt += 1
            message = str(exc).lower()
            if attempt >= _BEGIN_ATTEMPTS or not ("locked" in message or "busy" in message):
                raise
            time.sleep(0.05 * 2**attempt)


def _check_header(path: Path) -> None:
    """A non-empty file that is not SQLite gets a clear error before sqlite3 can touch it."""
    try:
        with open(path, "rb") as file:
            header = file.read(len(_SQLITE_HEADER))
    except FileNotFoundError:
        return
    if header and header != _SQLITE_HEADER:
        raise HistoryFormatError(f"{path}: not an SQLite database (unexpected file header); not modified")
