"""Whether SQLite may read the ``-wal`` file beside a history, judged from the files' bytes before SQLite opens them:
what it would replay must be this database's own log, and no commit may lie beyond a damaged frame
(https://www.sqlite.org/fileformat2.html#walformat)."""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass
from pathlib import Path

_MAGIC = (0x377F0682, 0x377F0683)  # the low bit: checksums over big-endian words
_VERSION = 3007000
_HEADER = 32
_FRAME_HEADER = 24
_MASK = 0xFFFFFFFF
_DB_HEADER = 100
_SQLITE_HEADER = b"SQLite format 3\x00"
COMMITS = 2**31 - 1  # a history's commits are numbered 1..COMMITS, then from 1 again
_READS = 20  # attempts at reading both files between two writes of a live writer


@dataclass(frozen=True)
class Stamp:
    """What every ctxwin commit writes into the database header (page 1, so into the log with the commit): the
    history's identity (SQLite's ``application_id``, 0 for a database without one) and the commit's number (its
    ``user_version``). A log that does not carry this database's identity and continue its number is not its own."""

    identity: int
    commit: int


def stamp_of(page: bytes) -> Stamp | None:
    """The stamp in a database header; ``None`` when the bytes are not one."""
    if len(page) < _DB_HEADER or not page.startswith(_SQLITE_HEADER):
        return None
    return Stamp(int.from_bytes(page[68:72], "big", signed=True), int.from_bytes(page[60:64], "big", signed=True))


def next_commit(commit: int) -> int:
    return commit % COMMITS + 1


@dataclass(frozen=True)
class _Frame:
    page: int
    commit: bool
    head: bytes  # the first 8 bytes of its header, which its checksum covers
    data: bytes
    previous: tuple[int, int]  # the checksum stored in the frame (or header) before it
    stored: tuple[int, int]
    valid: bool  # of the current generation, and its checksum continues from ``previous``


def wal_problem(wal: Path, database: Path) -> str | None:
    """What makes ``wal`` unfit for SQLite to read into ``database``, as a sentence that ends with what to do; ``None``
    when it is fit, absent, or holds nothing SQLite would read.

    A live writer may reset or extend the log while it is read: the log's header is read before the database's
    header and again after the log, and a log that changed in between is read again.
    """
    for _ in range(_READS):
        before = _read(wal, _HEADER)
        head = _read(database, _DB_HEADER)
        data = _read(wal)
        if before == data[:_HEADER] == _read(wal, _HEADER):
            return _problem(data, head, database)
        time.sleep(0.001)
    return None  # reset again and again: a live writer's own log


def _read(path: Path, size: int = -1) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read(size)
    except FileNotFoundError:
        return b""


def _problem(data: bytes, head: bytes, database: Path) -> str | None:
    db = stamp_of(head)
    if db is None or not data.strip(b"\x00"):
        # No database yet (SQLite deletes a log beside an empty file), or nothing in the log: an empty one, or the
        # zeros a power loss can leave where a log was being started.
        return None
    raw = int.from_bytes(head[16:18], "big")
    page_size = 65536 if raw == 1 else raw
    move = "move it away (SQLite would replay it into this history); the history then reads as its database file has it"
    header_ok = len(data) >= _HEADER and _header_ok(data, _order(data))
    size = struct.unpack(">I", data[8:12])[0] if header_ok else 0
    if header_ok and size in (page_size, page_size & 0xFFFF):
        frames = _frames(data, _order(data), page_size, header_ok=True)
        lost = _lost_commit(frames, True, database, page_size, _order(data))
        return _lost(lost) if lost is not None else _foreign(frames, db, move)
    # SQLite ignores a log whose header it does not accept: what it loses is commits a damaged header hides.
    if len(data) >= _HEADER + _FRAME_HEADER + page_size:
        for order in [">", "<"]:
            lost = _lost_commit(_frames(data, order, page_size, header_ok=False), False, database, page_size, order)
            if lost is not None:
                return _lost(lost)
    if header_ok:
        return f"it is another database's log (pages of {size} bytes, this one's are {page_size}); not modified: {move}"
    return f"it is not an SQLite log (cut short, or other bytes); not modified: {move}"


def _lost(frame: int) -> str:
    where = "its header is damaged" if frame == 0 else f"frame {frame} is damaged"
    return (
        f"{where}, and commits after it would be dropped without an error; not modified: restore the database "
        "and its -wal file from a backup, or salvage with the sqlite3 shell (.recover)"
    )


def _foreign(frames: list[_Frame], db: Stamp, move: str) -> str | None:
    """Why the commits SQLite would replay from ``frames`` are not this database's (``db``: its header's stamp)."""
    commits: list[tuple[int, Stamp | None]] = []  # the frame ending each commit, and its database header's stamp
    page_one: Stamp | None = None
    for number, frame in enumerate(frames, 1):
        if not frame.valid:
            break  # SQLite reads the log up to here
        if frame.page == 1:
            page_one = stamp_of(frame.data)
        if frame.commit:
            commits.append((number, page_one))
            page_one = None
    # The first commit made with an identity; those before it were made before the history had one, and the commit
    # that gave it one (numbered 1) ends them: its upgrade, not yet copied into the database file.
    stamped = [(k, stamp) for k, (_, stamp) in enumerate(commits) if stamp is not None and stamp.identity]
    if not stamped:
        return None if not commits or db.identity == 0 else _not_ours(commits[0][0], move)
    start, head = stamped[0]
    if start and head.commit != 1:
        return _not_ours(commits[0][0], move)
    identity = db.identity or head.identity
    previous: int | None = None
    for number, stamp in commits[start:]:
        if stamp is not None and stamp.identity not in (0, identity):
            return (
                f"frame {number} ends a commit of another database (its header names another history); not "
                f"modified: {move}"
            )
        if stamp is None or not stamp.identity or (previous is not None and stamp.commit != next_commit(previous)):
            return _not_ours(number, move)
        previous = stamp.commit
    first, last = head.commit, previous or 0
    copied = db.commit >= 1 and (db.commit - first) % COMMITS <= (last - first) % COMMITS
    if next_commit(db.commit) == first or copied:
        return None  # the database file is where the log began, or has some of its commits copied in
    return (
        f"it holds commits {first}-{last} of this history, which do not continue the database file's commit "
        f"{db.commit}: it is the log of another copy of this history (an older one, or one the database file was not "
        f"copied with); not modified: {move}, or put back the database file it was copied with"
    )


def _not_ours(frame: int, move: str) -> str:
    return (
        f"frame {frame} ends a commit ctxwin did not make: it is another database's log, or another program's writing "
        "to this history; not modified: if such a program has this database open, close it (SQLite then copies its "
        f"log into the database file), else {move}"
    )


def _lost_commit(frames: list[_Frame], header_ok: bool, database: Path, page_size: int, order: str) -> int | None:
    """The 1-based number of the frame SQLite stops at in a log (0: the header is damaged, so SQLite ignores the
    whole log) when commits after it are not in ``database`` either; ``None`` when nothing committed is lost (an
    intact log, a log whose end a crash tore before its commit, or commits a checkpoint already copied).

    SQLite reads a log up to the first frame whose salts or cumulative checksum do not match, taking that for its
    end. Each frame's checksum continues from the one stored in the frame before it, so a frame after the damage can
    still be checked against its predecessor: one of the log's current generation (its salts are the header's) that
    passes and ends a transaction was committed after the damage. Those commits are lost only if the database file
    lacks them (a checkpoint may have copied them): the pages they wrote are compared with the database's (a damaged
    frame's by its checksum, which the database's copy must pass), and a page SQLite would still read from the log's
    shorter part (an older version) counts as lost too.
    """
    first_bad = 0 if not header_ok else next((i + 1 for i, f in enumerate(frames) if not f.valid), None)
    if first_bad is None:
        return None
    commits = [i for i in range(first_bad, len(frames)) if frames[i].valid and frames[i].commit]
    if not commits:
        return None
    read = frames[: max((i + 1 for i in range(first_bad - 1) if frames[i].commit), default=0)]
    dropped = frames[len(read) : commits[-1] + 1]
    return first_bad if _missing(dropped, {frame.page for frame in read}, database, page_size, order) else None


def _order(data: bytes) -> str:
    return ">" if struct.unpack(">I", data[:4])[0] & 1 else "<"


def _header_ok(data: bytes, order: str) -> bool:
    magic, version = struct.unpack(">II", data[:8])
    checksum = struct.unpack(">II", data[24:32])
    return magic in _MAGIC and version == _VERSION and _checksum(order, data[:24], 0, 0) == checksum


def _frames(data: bytes, order: str, page_size: int, header_ok: bool) -> list[_Frame]:
    size = _FRAME_HEADER + page_size
    salts = {data[16:24]} if header_ok else {data[16:24], data[_HEADER + 8 : _HEADER + 16]}
    previous = struct.unpack(">II", data[24:32])
    frames = []
    for start in range(_HEADER, len(data) - size + 1, size):
        head = data[start : start + _FRAME_HEADER]
        page, commit = struct.unpack(">II", head[:8])
        stored = struct.unpack(">II", head[16:24])
        body = data[start + _FRAME_HEADER : start + size]
        valid = head[8:16] in salts and page != 0 and stored == _checksum(order, head[:8] + body, *previous)
        frames.append(_Frame(page, commit != 0, head[:8], body, previous, stored, valid))
        previous = stored
    return frames


def _missing(dropped: list[_Frame], read: set[int], database: Path, page_size: int, order: str) -> bool:
    """Whether the last version of any page the ``dropped`` frames wrote is not what SQLite will read: the page
    is among those it reads from the log (``read``), or the database's copy differs from it."""
    latest = {frame.page: frame for frame in dropped}
    if read & latest.keys():
        return True
    try:
        with open(database, "rb") as handle:
            for page, frame in latest.items():
                handle.seek((page - 1) * page_size)
                copy = handle.read(page_size)
                if frame.valid and copy != frame.data:
                    return True
                if not frame.valid and _checksum(order, frame.head + copy, *frame.previous) != frame.stored:
                    return True
    except OSError:
        return True
    return False


def _checksum(order: str, data: bytes, s0: int, s1: int) -> tuple[int, int]:
    """SQLite's WAL checksum of ``data`` (a multiple of 8 bytes), continuing from ``(s0, s1)``."""
    words = struct.unpack(f"{order}{len(data) // 4}I", data)
    for x0, x1 in zip(words[::2], words[1::2], strict=True):
        s0 = (s0 + x0 + s1) & _MASK
        s1 = (s1 + x1 + s0) & _MASK
    return s0, s1
