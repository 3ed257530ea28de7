"""The on-disk SQLite cache of the counts networked counters get back, so an unchanged request is never sent twice.
A cache that cannot be opened is skipped with a warning: counting still works, through the network.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

CACHE_ENV = "CTXWIN_API_CACHE"
_SCHEMA = "CREATE TABLE IF NOT EXISTS ctxwin_api_counts (scope TEXT, digest TEXT, tokens INTEGER NOT NULL, " \
    "PRIMARY KEY (scope, digest))"
# Counts also kept in memory, per process, before an in-memory cache starts over (it must not grow forever).
_MEMORY_SIZE = 65_536


def default_cache_path() -> Path:
    """``$CTXWIN_API_CACHE``, else the user cache directory's ``ctxwin/api-counts.sqlite``."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ctxwin" / "api-counts.sqlite"


def request_digest(request: Mapping[str, Any]) -> str:
    """SHA-256 of the request as canonical JSON (sorted keys, no spaces), the cache key within a scope."""
    text = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class StoredCounts:
    """Token counts of requests by ``(scope, request)``, in memory and in the SQLite file at ``path``."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self._memory: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._usable = True

    def _connect(self) -> sqlite3.Connection | None:
        # A connection per operation, so threads and forked workers share none; WAL, so readers never wait.
        if not self._usable:
            return None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=30.0)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(_SCHEMA)
            return connection
        except (OSError, sqlite3.Error) as exc:
            self._usable = False
            warnings.warn(f"token-count cache {self.path} unusable ({exc}); set {CACHE_ENV} to a writable file. "
                          "Counting goes to the network every time.", RuntimeWarning, stacklevel=3)
            return None

    def get(self, scope: str, digest: str) -> int | None:
        key = (scope, digest)
        with self._lock:
            if key in self._memory:
                return self._memory[key]
        connection = self._connect()
        if connection is None:
            return None
        try:
            with connection:
                row = connection.execute("SELECT tokens FROM ctxwin_api_counts WHERE scope = ? AND digest = ?",
                                         key).fetchone()
        except sqlite3.Error:
            return None
        finally:
            connection.close()
        if row is None:
            return None
        self._remember(key, int(row[0]))
        return int(row[0])

    def put(self, scope: str, digest: str, tokens: int) -> None:
        self._remember((scope, digest), tokens)
        connection = self._connect()
        if connection is None:
            return
        try:
            with connection:
                connection.execute("INSERT OR REPLACE INTO ctxwin_api_counts VALUES (?, ?, ?)",
                                   (scope, digest, tokens))
        except sqlite3.Error as exc:
            warnings.warn(f"token-count cache {self.path}: cannot store a count ({exc})", RuntimeWarning,
                          stacklevel=2)
        finally:
            connection.close()

    def _remember(self, key: tuple[str, str], tokens: int) -> None:
        with self._lock:
            if len(self._memory) >= _MEMORY_SIZE:
                self._memory.clear()
            self._memory[key] = tokens

    def count(self, scope: str, request: Mapping[str, Any], fetch: Callable[[Mapping[str, Any]], int]) -> int:
        """The cached count of ``request``, else ``fetch(request)``, stored for next time."""
        digest = request_digest(request)
        tokens = self.get(scope, digest)
        if tokens is None:
            tokens = fetch(request)
            self.put(scope, digest, tokens)
        return tokens
