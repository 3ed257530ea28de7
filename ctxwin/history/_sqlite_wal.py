"""Whether an SQLite ``-wal`` file holds commits SQLite will not read: damage that would shorten a history silently.

SQLite reads a WAL from its first frame up to the first frame whose salts or cumulative checksum do not match (and
ignores the whole file when its header is bad), taking that for the end of the log: commits after a damaged frame
are dropped without an error. Each frame's checksum continues from the checksum stored in the frame before it, so a
frame after the damage can still be checked on its own against its predecessor's. A frame of the log's current
generation (its salts are the header's) that passes that check and ends a transaction (a commit frame) was written
after the damage and committed. Frames of an earlier generation (a log reset after a checkpoint leaves them
behind, with other salts) are not the log's and are ignored.

Those commits are lost only if the database file lacks them: a checkpoint may already have copied them there. So
the pages the dropped frames wrote are compared with the database's (a damaged frame's page by its checksum, which
the database's copy must pass), and a page SQLite would still read from the log's shorter part (an older version)
counts as lost too.

File format: https://www.sqlite.org/fileformat2.html#walformat
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

_MAGIC = (0x377F0682, 0x377F0683)  # the low bit: checksums over big-endian words
_HEADER = 32
_FRAME_HEADER = 24
_MASK = 0xFFFFFFFF


@dataclass(frozen=True)
class _Frame:
    page: int
    commit: bool
    head: bytes  # the first 8 bytes of its header, which its checksum covers
    data: bytes
    previous: tuple[int, int]  # the checksum stored in the frame (or header) before it
    stored: tuple[int, int]
    valid: bool  # of the current generation, and its checksum continues from ``previous``


def lost_commit(wal: Path, database: Path, page_size: int) -> int | None:
    """The 1-based number of the frame SQLite stops at in ``wal`` (0: the header is damaged, so SQLite ignores the
    whole file) when commits after it are not in ``database`` either; ``None`` when nothing committed is lost (no
    file, an intact log, a log whose end a crash tore before its commit, or commits a checkpoint already copied)."""
    try:
        data = wal.read_bytes()
    except FileNotFoundError:
        return None
    if (len(data) - _HEADER) // (_FRAME_HEADER + page_size) < 1:
        return None
    magic = struct.unpack(">I", data[:4])[0]
    for order in [">" if magic & 1 else "<"] if magic in _MAGIC else [">", "<"]:
        header_ok = (
            magic in _MAGIC
            and struct.unpack(">I", data[8:12])[0] in (page_size, page_size & 0xFFFF)
            and _checksum(order, data[:24], 0, 0) == struct.unpack(">II", data[24:32])
        )
        frames = _frames(data, order, page_size, header_ok)
        first_bad = 0 if not header_ok else next((i + 1 for i, f in enumerate(frames) if not f.valid), None)
        if first_bad is None:
            return None
        commits = [i for i in range(first_bad, len(frames)) if frames[i].valid and frames[i].commit]
        if not commits:
            continue
        read = frames[: max((i + 1 for i in range(first_bad - 1) if frames[i].commit), default=0)]
        dropped = frames[len(read) : commits[-1] + 1]
        if _missing(dropped, {frame.page for frame in read}, database, page_size, order):
            return first_bad
    return None


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
