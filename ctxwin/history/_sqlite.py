"""SQLiteChatMessageHistory: the embedded default for persistent chat histories (stdlib ``sqlite3``): WAL journal, one
``BEGIN IMMEDIATE`` transaction per append, every row numbered and checksummed from the history's identity, so that a
read gives back every acknowledged message of this history or raises naming the file (docs/history.md: what is
checked, and why)."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Literal, TypeVar

from ctxwin._errors import InvalidInputError
from ctxwin.history._base import BaseChatMessageHistory, Form
from ctxwin.history._codec import is_utf8, message_json
from ctxwin.history._errors import HistoryFormatError
from ctxwin.history._identity import is_identity, new_identity, seed
from ctxwin.history._sqlite_wal import next_commit, wal_problem
from ctxwin.messages import BaseMessage, message_from_dict

SCHEMA_NAME = "ctxwin.history"
SCHEMA_VERSION = 3
_SQLITE_HEADER = b"SQLite format 3\x00"
_SCHEMA = (
    "CREATE TABLE ctxwin_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE ctxwin_messages (seq INTEGER PRIMARY KEY, session_id TEXT NOT NULL, message TEXT NOT NULL, "
    "created_at REAL NOT NULL)",
    "CREATE INDEX ctxwin_messages_by_session ON ctxwin_messages (session_id, seq)",
)
# Version 2 (issue 44): each row's number in its session and checksum, and each session's last number.
_NUMBERED = (
    "ALTER TABLE ctxwin_messages ADD COLUMN n INTEGER",
    "ALTER TABLE ctxwin_messages ADD COLUMN crc INTEGER",
    "CREATE TABLE ctxwin_sessions (session_id TEXT PRIMARY KEY, last INTEGER NOT NULL)",
)
# Version 3 (issue 52): the history's identity, in ctxwin_meta and every checksum; each session's last number checked.
_BOUND = ("ALTER TABLE ctxwin_sessions ADD COLUMN crc INTEGER",)
T = TypeVar("T")
_BEGIN_ATTEMPTS = 5  # on top of the busy timeout, for SQLITE_BUSY that bypasses the busy handler
_WAL_LOOKS = (0.01, 0.05)  # pauses before looking again at a -wal file that seems wrong


class SQLiteChatMessageHistory(BaseChatMessageHistory):
    """The messages of one session in an SQLite database file; many sessions may share a file.

    The file's random identity starts every row's checksum and is stamped with every commit, so a row, a page or a
    ``-wal`` file of another history (or another copy of this one) is refused, not read as this one's. ``timeout``
    is how long a writer waits for another's transaction (seconds). ``synchronous="FULL"`` syncs the log on every
    commit, so a message is durable once ``add_message`` returns, even across a power loss; ``"NORMAL"`` is faster
    and survives a crash of the process only. Call ``close()`` (or use it as a context manager) when done; it closes
    every thread's connection, so do it when no thread is using them.
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
            raise InvalidInputError(f"session_id must be a non-empty string of valid Unicode, got {session_id!r}")
        if str(path) == ":memory:" or str(path).startswith("file::memory:"):
            raise InvalidInputError(
                "an in-memory SQLite database is private to one connection; use InMemoryChatMessageHistory"
            )
        if synchronous not in ("FULL", "NORMAL"):
            raise InvalidInputError(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r}")
        self.path = Path(path)
        self.session_id = session_id
        self.timeout = timeout
        self.synchronous = synchronous
        self._registry = threading.Lock()
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._pid = os.getpid()
        # An existing database this process may not change (a read-only mount, someone else's history) is read
        # without writing to it: no switch to WAL, no schema, and every write raises PermissionError.
        self.read_only = self.path.exists() and not all(os.access(p, os.W_OK) for p in (self.path, self.path.parent))
        self._has_schema = True
        self._version = SCHEMA_VERSION  # of the file, once a connection has looked
        self._identity: str | None = None  # the file's, once a connection has looked (None: written before them)
        self._seed = seed(None)
        self._verified = False  # the file checked whole (quick_check, -wal) by this instance
        self._writes = 0  # add_messages and clear calls, for revision()
        self._connection()  # open now, so a bad file fails here and not at first use

    def stored_messages(self) -> list[BaseMessage]:
        conn = self._connection()
        if not self._has_schema:  # an empty database opened read-only: nothing was ever stored
            return []
        numbered = self._version >= 2
        with self._damage_named():
            conn.execute("BEGIN")  # the rows and the session's last number from one snapshot
            try:
                rows = conn.execute(  # as bytes, so text that is not UTF-8 is a corrupt row, not a bare sqlite3 error
                    f"SELECT seq, {'n, crc' if numbered else 'NULL, NULL'}, CAST(message AS BLOB) FROM ctxwin_messages "
                    "WHERE session_id = ? ORDER BY seq",
                    (self.session_id,),
                ).fetchall()
                last = self._last(conn) if numbered else 0
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")
        self._check_rows(rows, last)
        return [self._decode(seq, data) for seq, _, _, data in rows]

    def store_messages(self, batch: list[BaseMessage]) -> None:
        texts = [message_json(m, i) for i, m in enumerate(batch)]
        if not texts:
            return

        def insert(conn: sqlite3.Connection) -> None:
            now, last = time.time(), self._last(conn)
            conn.executemany(
                "INSERT INTO ctxwin_messages (session_id, message, created_at, n, crc) VALUES (?, ?, ?, ?, ?)",
                [
                    (self.session_id, text, now, n, row_crc(self._seed, self.session_id, n, text.encode("utf-8")))
                    for n, text in enumerate(texts, last + 1)
                ],
            )
            total = last + len(texts)
            conn.execute(
                "INSERT INTO ctxwin_sessions (session_id, last, crc) VALUES (?, ?, ?) "
                "ON CONFLICT (session_id) DO UPDATE SET last = excluded.last, crc = excluded.crc",
                (self.session_id, total, session_crc(self._seed, self.session_id, total)),
            )

        self._transaction(insert)
        self._wrote()

    def clear_stored(self) -> None:
        def delete(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM ctxwin_messages WHERE session_id = ?", (self.session_id,))
            conn.execute("DELETE FROM ctxwin_sessions WHERE session_id = ?", (self.session_id,))

        self._transaction(delete)
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

    def _last(self, conn: sqlite3.Connection) -> int:
        """The session's last row number (0: none since it was last cleared, or none numbered)."""
        row = conn.execute(
            f"SELECT last, {'crc' if self._version >= 3 else 'NULL'} FROM ctxwin_sessions WHERE session_id = ?",
            (self.session_id,),
        ).fetchone()
        if row is None:
            return 0
        last, crc = row
        if isinstance(last, bool) or not isinstance(last, int) or last < 0:
            raise HistoryFormatError(
                f"{self.path}: the last row number of session {self.session_id!r} is damaged ({last!r}); not modified"
            )
        if self._version >= 3 and crc != session_crc(self._seed, self.session_id, last):
            raise HistoryFormatError(
                f"{self.path}: the last row number of session {self.session_id!r} ({last}) is damaged or another "
                "history's: its checksum does not match this history's identity; not modified: restore the file"
            )
        return last

    def _check_rows(self, rows: list[tuple[int, int | None, int | None, bytes]], last: int) -> None:
        """Refuse rows that do not prove the session whole: numbered rows must be 1..``last`` in order, each with its
        checksum (rows written before numbering, ``n`` NULL, are unchecked)."""
        expected = 1
        for seq, n, crc, data in rows:
            if n is None and crc is None:
                continue
            if n != expected or not isinstance(data, bytes) or crc != row_crc(self._seed, self.session_id, n, data):
                what = (
                    "its checksum does not match this history's identity (damaged, or another history's row)"
                    if n == expected
                    else f"it is number {n} where {expected} was expected (rows are missing or out of place)"
                )
                raise HistoryFormatError(
                    f"{self.path}: row {seq} of session {self.session_id!r} is damaged: {what}; not modified"
                )
            expected += 1
        if expected - 1 != last:
            raise HistoryFormatError(
                f"{self.path}: session {self.session_id!r} should hold rows numbered up to {last}, but the last one "
                f"read is {expected - 1}: rows are missing (a damaged database); not modified"
            )

    def _decode(self, seq: int, data: bytes) -> BaseMessage:
        try:
            return message_from_dict(json.loads(data))
        except (ValueError, TypeError, RecursionError) as exc:
            raise HistoryFormatError(
                f"{self.path}: row {seq} of session {self.session_id!r} is corrupt: {exc}"
            ) from None

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection (an SQLite connection must not be used by two threads at once)."""
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
        verify = not self._verified
        if verify:  # before anything writes: a write could reset the log and lose the evidence
            self._check_wal()
        conn = self._connect_read_only() if self.read_only else self._open(self.path, self._prepare)
        if verify:
            try:
                self._quick_check(conn)
            except BaseException:
                conn.close()
                raise
            self._verified = True
        return conn

    def _check_wal(self) -> None:
        """Refuse a ``-wal`` file SQLite would read wrongly into this database: another database's or another copy's
        log, bytes that are no log, or a log that would drop commits (``sqlite_wal``). Judged from the files alone,
        before any connection: a connection that may write would, when it closes as the last one, copy the log
        into the database and delete it."""
        wal = Path(f"{self.path}-wal")
        problem = wal_problem(wal, self.path)
        for pause in _WAL_LOOKS:  # a problem seen while a live writer checkpoints is gone a moment later
            if problem is None:
                return
            time.sleep(pause)
            problem = wal_problem(wal, self.path)
        if problem is not None:
            raise HistoryFormatError(f"{wal}: {problem}")

    def _quick_check(self, conn: sqlite3.Connection) -> None:
        """SQLite's check of every b-tree page (not of indexes against their tables: the row numbers catch a
        lost index entry)."""
        with self._damage_named():
            problems = [row[0] for row in conn.execute("PRAGMA quick_check(5)")]
        if problems != ["ok"]:
            raise HistoryFormatError(
                f"{self.path}: the database is damaged (PRAGMA quick_check: {'; '.join(map(str, problems))}); "
                "not modified"
            )

    def _prepare(self, conn: sqlite3.Connection) -> None:
        # WAL: readers never block the writer, and a writer killed mid-transaction leaves the database intact.
        mode = _retry_busy(lambda: conn.execute("PRAGMA journal_mode=WAL").fetchone()[0])
        if str(mode).lower() != "wal":
            raise HistoryFormatError(f"{self.path}: SQLite could not switch to WAL mode (got {mode!r})")
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        if self.synchronous == "FULL":
            # Each commit copied into the database file at once (a passive checkpoint), so the -wal file holds at
            # most the last commit, already in the database: damage to the log costs nothing. Otherwise damage to
            # the log's last commit cannot be told from a crash while writing it, and SQLite drops it silently.
            conn.execute("PRAGMA wal_autocheckpoint=1")
        if not self._schema_ok(conn) or self._version < SCHEMA_VERSION:
            self._transaction(self._create_schema, conn)
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")  # the identity into the database file, which binds its log
            self._schema_ok(conn)  # the identity it was given, once committed

    def _connect_read_only(self) -> sqlite3.Connection:
        """A connection that cannot write: ``mode=ro``; where no ``-shm`` index exists and none can be made,
        ``immutable``, which reads the file as it is: exact only without a ``-wal`` file (else refused, rather than
        missing its commits)."""
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
            # our own statements' tables and columns missing, or text that is not UTF-8: the file is damaged
            if str(exc).startswith(("no such table", "no such column", "Could not decode to UTF-8")) or (
                "has no column named" in str(exc)
            ):
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
        self._version = int(version)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(ctxwin_messages)")}
        expected = {"seq", "session_id", "message", "created_at"} | ({"n", "crc"} if self._version >= 2 else set())
        if not expected <= columns:
            raise HistoryFormatError(
                f"{self.path}: ctxwin_messages lacks the columns {sorted(expected - columns)}: the schema is damaged; "
                "not modified"
            )
        if self._version >= 3:
            self._note_identity(conn, meta.get("identity"))
        return True

    def _note_identity(self, conn: sqlite3.Connection, identity: str | None) -> None:
        """Take the file's identity, after checking the database header carries it too (pages of another database
        written over this one's would not both name it) and that it is the one this object first saw."""
        if not is_identity(identity):
            raise HistoryFormatError(
                f"{self.path}: the identity in ctxwin_meta is damaged ({identity!r}); not modified"
            )
        if conn.execute("PRAGMA application_id").fetchone()[0] != header_id(identity):
            raise HistoryFormatError(
                f"{self.path}: its header and its ctxwin_meta table name different histories: pages of another "
                "database were written into it; not modified: restore the file"
            )
        if self._identity not in (None, identity):
            raise HistoryFormatError(
                f"{self.path}: now holds another history than when this object opened it (the file was replaced); "
                "not modified: open it again"
            )
        self._identity, self._seed = identity, seed(identity)

    def _create_schema(self, conn: sqlite3.Connection) -> None:
        """Create the schema, or upgrade an older one (unless another process did while we waited for the lock)."""
        if not self._schema_ok(conn):
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.executemany(
                "INSERT INTO ctxwin_meta (key, value) VALUES (?, ?)",
                [("schema", SCHEMA_NAME), ("version", "1")],
            )
            self._version = 1
        if self._version < 2:
            for statement in _NUMBERED:
                conn.execute(statement)
        if self._version < 3:
            self._bind(conn)
        conn.execute("UPDATE ctxwin_meta SET value = ? WHERE key = 'version'", (str(SCHEMA_VERSION),))
        self._version = SCHEMA_VERSION

    def _bind(self, conn: sqlite3.Connection) -> None:
        """Give the history its identity (schema version 3): every numbered row is checked against its old checksum
        first, so that damage is not sealed in under the new ones."""
        for statement in _BOUND:
            conn.execute(statement)
        identity = new_identity()
        new = seed(identity)
        rows = conn.execute(
            "SELECT seq, session_id, n, crc, CAST(message AS BLOB) FROM ctxwin_messages WHERE n IS NOT NULL"
        ).fetchall()
        for seq, session, n, crc, data in rows:
            if crc != row_crc(seed(None), session, n, data):
                raise HistoryFormatError(
                    f"{self.path}: row {seq} of session {session!r} is damaged: its checksum does not match; not "
                    "modified (a database is given its identity only whole): restore the file"
                )
        conn.executemany(
            "UPDATE ctxwin_messages SET crc = ? WHERE seq = ?",
            [(row_crc(new, session, n, data), seq) for seq, session, n, _, data in rows],
        )
        sessions = conn.execute("SELECT session_id, last FROM ctxwin_sessions").fetchall()
        conn.executemany(
            "UPDATE ctxwin_sessions SET crc = ? WHERE session_id = ?",
            [(session_crc(new, session, last), session) for session, last in sessions],
        )
        conn.execute("INSERT INTO ctxwin_meta (key, value) VALUES ('identity', ?)", (identity,))
        conn.execute(f"PRAGMA application_id = {header_id(identity)}")
        conn.execute("PRAGMA user_version = 0")  # this commit is the history's commit 1 (``sqlite_wal``)

    def _transaction(
        self, work: Callable[[sqlite3.Connection], object], conn: sqlite3.Connection | None = None
    ) -> None:
        """Run ``work`` in a ``BEGIN IMMEDIATE`` transaction and commit; roll back if anything fails.

        The write lock is taken up front, so concurrent writers queue on the busy timeout instead of failing
        half-way, and a retried ``BEGIN`` has written nothing (a retry never duplicates a message). Rows are numbered
        by an ``INTEGER PRIMARY KEY``, which only grows from one commit to the next, so each writer's order is kept.
        """
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
                # The commit's number, in the database header: it is in the log with the commit, and binds the log
                # to this database (``sqlite_wal``).
                number = next_commit(conn.execute("PRAGMA user_version").fetchone()[0])
                conn.execute(f"PRAGMA user_version = {number}")
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


def header_id(identity: str) -> int:
    """The identity's first 32 bits, as SQLite's ``application_id`` holds them (a signed integer)."""
    return int.from_bytes(bytes.fromhex(identity[:8]), "big", signed=True)


def row_crc(seed: int, session_id: str, n: int, data: bytes) -> int:
    """The checksum of row ``n`` of a session holding the message ``data``, in the history whose identity gives
    ``seed``."""
    return zlib.crc32(data, zlib.crc32(f"{session_id}\x00{n}\x00".encode(), seed))


def session_crc(seed: int, session_id: str, last: int) -> int:
    return zlib.crc32(f"{session_id}\x00{last}".encode(), seed)


def _check_header(path: Path) -> None:
    """A non-empty file that is not SQLite gets a clear error before sqlite3 can touch it."""
    try:
        with open(path, "rb") as file:
            header = file.read(len(_SQLITE_HEADER))
    except FileNotFoundError:
        return
    if header and header != _SQLITE_HEADER:
        raise HistoryFormatError(f"{path}: not an SQLite database (unexpected file header); not modified")
