"""FileChatMessageHistory: a chat history in a JSONL file, safe against crashes and concurrent appenders (``flock``,
one ``O_APPEND`` write, ``fsync``; docs/history.md). ``fcntl`` is imported at first use, so ``import ctxwin`` works
everywhere.
"""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path

from ctxwin.history._base import BaseChatMessageHistory, Form
from ctxwin.history._codec import message_json
from ctxwin.history._errors import HistoryFormatError, TornLineWarning
from ctxwin.history._identity import new_identity, seed
from ctxwin.history._jsonl_format import (
    Header,
    Line,
    SkippedLine,
    check_first_line,
    check_record,
    check_torn_tail,
    decode,
    header_line,
    is_checked,
    is_header,
    is_seal,
    message_lines,
    parse_history,
    record_seq,
    seal_record,
    split_lines,
)
from ctxwin.messages import BaseMessage

_CHUNK = 64 * 1024


class FileChatMessageHistory(BaseChatMessageHistory):
    """Messages stored one ``message_to_dict`` JSON object per line in ``file_path``.

    LangChain's class of this name rewrites one JSON array on every message; this one only ever appends, so a
    crash can cost at most the message being written. The file's first line gives it a random identity that every
    record's checksum starts from, so a line of another history is refused, not read as this one's. A torn last
    line is skipped with a ``TornLineWarning`` and listed in ``skipped_lines``; a corrupt or foreign file raises
    ``HistoryFormatError`` and is never modified.
    ``add_messages`` stores a batch whole or, when a write fails (disk full, ...), not at all; a crash of the process
    mid-write may still leave part of it (each line whole, a torn last line skipped).
    """

    def __init__(
        self, file_path: str | os.PathLike[str], *, ensure_ascii: bool = False, form: Form = "messages"
    ) -> None:
        super().__init__(form=form)
        self.file_path = Path(file_path)
        self.ensure_ascii = ensure_ascii
        self.skipped_lines: list[SkippedLine] = []
        self._state = threading.Lock()
        self._warned: set[tuple[int, int]] = set()
        self._checked_files: set[tuple[int, int]] = set()  # files (device, inode) this instance checked whole
        self._headers: dict[tuple[int, int], Header] = {}
        self._dir_synced = False

    def stored_messages(self) -> list[BaseMessage]:
        try:
            with open(self.file_path, "rb") as file:
                _flock(file.fileno(), exclusive=False)
                data = file.read()
        except FileNotFoundError:
            data = b""
        messages, skipped, _ = parse_history(data, str(self.file_path))
        with self._state:
            self.skipped_lines = skipped
            fresh = [s for s in skipped if (s.offset, s.length) not in self._warned]
            self._warned.update((s.offset, s.length) for s in fresh)
        if fresh:
            where = ", ".join(f"line {s.line} ({s.length} bytes at byte {s.offset})" for s in fresh)
            warnings.warn(
                TornLineWarning(f"{self.file_path}: skipped lines cut short by a crash: {where}"), stacklevel=2
            )
        return messages

    def store_messages(self, batch: list[BaseMessage]) -> None:
        if not batch:
            return
        # A batch that cannot be stored is refused before any I/O.
        texts = [message_json(m, i, ensure_ascii=self.ensure_ascii).encode("utf-8") for i, m in enumerate(batch)]
        fd = os.open(self.file_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            _flock(fd, exclusive=True)
            header = self._header(fd)
            repair, last = _tail_repair(fd, str(self.file_path), header)
            if header is None:  # a new file (or one written before identities): it gets its identity here
                identity = new_identity()
                first = header_line(identity)
                header = Header(os.fstat(fd).st_size + len(repair), first[:-1], seed(identity))
                payload = repair + first + message_lines(texts, first_seq=1, seed=header.seed)
            else:
                payload = repair + message_lines(texts, first_seq=(last or 0) + 1, seed=header.seed)
            _append_whole(fd, payload, str(self.file_path))
            self._headers[_inode(fd)] = header
        finally:
            os.close(fd)  # also releases the lock
        if not self._dir_synced:  # the file's directory entry must be durable too
            _fsync_dir(self.file_path.parent)
            self._dir_synced = True

    def clear_stored(self) -> None:
        try:
            fd = os.open(self.file_path, os.O_RDWR)
        except FileNotFoundError:
            return
        try:
            _flock(fd, exclusive=True)
            check_first_line(_first_line(fd), str(self.file_path))  # a damaged history may be cleared, not another file
            os.ftruncate(fd, 0)
            os.fsync(fd)
        finally:
            os.close(fd)
        with self._state:
            self._warned.clear()

    def _header(self, fd: int) -> Header | None:
        """The header of the file behind ``fd`` (``None``: it has none yet), under the caller's exclusive lock.

        Before this instance's first append to a file, every line is checked, so that nothing is appended after
        damage (later appends check the lines at the end: ``_tail_repair``). The header found is kept, and found
        again at its offset; if the file changed under it (cleared by another process), it is looked for again.
        """
        inode = _inode(fd)
        if inode not in self._checked_files:
            header = _checked_whole(fd, str(self.file_path))
            self._checked_files.add(inode)
        else:
            known = self._headers.get(inode)
            if known is not None and os.pread(fd, len(known.data) + 1, known.offset) == known.data + b"\n":
                return known
            header = check_first_line(_first_line(fd), str(self.file_path))
            if header is None and os.fstat(fd).st_size:  # written before identities: its header may follow old lines
                header = _checked_whole(fd, str(self.file_path))
        if header is not None:
            self._headers[inode] = header
        return header


def _checked_whole(fd: int, path: str) -> Header | None:
    """The header of the file behind ``fd``, found by reading every line: damage refuses the append."""
    try:
        return parse_history(_read_all(fd), path)[2]
    except HistoryFormatError as exc:
        raise HistoryFormatError(f"{exc}; refusing to append") from None


def _inode(fd: int) -> tuple[int, int]:
    stat = os.fstat(fd)
    return stat.st_dev, stat.st_ino


def _first_line(fd: int) -> Line | None:
    """The first line of the file behind ``fd`` (``None`` when it is empty), read up to its newline."""
    size = os.fstat(fd).st_size
    first = b""
    while b"\n" not in first and len(first) < size:
        block = os.pread(fd, _CHUNK, len(first))
        if not block:
            break
        first += block
    return Line(1, 0, first.split(b"\n", 1)[0]) if first else None


def _read_all(fd: int) -> bytes:
    """The file behind ``fd`` (opened for appending, so read by offset), up to its size (a device such as
    /dev/full has none, and would read forever)."""
    size = os.fstat(fd).st_size
    blocks: list[bytes] = []
    offset = 0
    while offset < size and (block := os.pread(fd, min(_CHUNK * 16, size - offset), offset)):
        blocks.append(block)
        offset += len(block)
    return b"".join(blocks)


def _flock(fd: int, *, exclusive: bool) -> None:
    """Lock ``fd`` whole (released when it is closed); ``fcntl`` is imported here, not at import time."""
    try:
        import fcntl
    except ImportError:
        raise NotImplementedError(
            "FileChatMessageHistory needs fcntl file locks (POSIX: Linux, macOS); "
            "use SQLiteChatMessageHistory or InMemoryChatMessageHistory on this platform"
        ) from None
    fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)


def _tail_repair(fd: int, path: str, header: Header | None) -> tuple[bytes, int | None]:
    """What to write before new lines so they do not glue onto a torn tail (a newline and/or a seal record), and
    the sequence number of the file's last message record (``None``: none after the ``header``, or one written
    before records had one). A tail a crash cannot have left (a damaged last line, complete or not, or one of
    another history) raises ``HistoryFormatError``: nothing is appended after damage."""
    size = os.fstat(fd).st_size
    if size == 0:
        return b"", None
    ends_with_newline = os.pread(fd, 1, size - 1) == b"\n"

    def where(line: Line) -> str:
        return _where(fd, line)

    span = _CHUNK
    while True:
        start = max(0, size - span)
        lines = list(split_lines(os.pread(fd, size - start, start), start))
        if start > 0:
            lines = lines[1:]  # may begin mid-line; re-read with a wider span if the scan gets that far
        torn: list[Line] = []
        parsed = False
        last: int | None = None
        try:
            for line in reversed(lines):
                if not line.data.strip():
                    continue
                bound = header is not None and line.offset > header.offset
                record = decode(line, path, header.seed if bound and header else 0, where)
                if record is None:
                    if not parsed:
                        torn.append(line)
                    continue
                check_record(record, line, path, where)
                parsed = True
                if is_header(record):  # the numbering starts after it
                    if header is None or line.offset != header.offset:
                        raise HistoryFormatError(f"{path}: {where(line)} is a second history header: lines of "
                                                 "another history were spliced in")
                    break
                if is_seal(record):  # seals follow the last message: it holds the number to continue from
                    if bound and not is_checked(line):
                        raise HistoryFormatError(f"{path}: {where(line)} has no checksum, so it does not belong "
                                                 "to this history")
                    continue
                last = record_seq(record, line, path, where, bound=bound)
                break
            else:
                if start > 0:
                    span *= 4
                    continue
            torn.reverse()
            check_torn_tail(torn, not ends_with_newline, path, where)
        except HistoryFormatError as exc:
            raise HistoryFormatError(f"{exc}; refusing to append") from None
        seal = seal_record(torn, header.seed if header else 0) if torn else b""
        return (b"" if ends_with_newline else b"\n") + seal, last


def _where(fd: int, line: Line) -> str:
    """A line found by its offset, named by its number (the file read up to it: on the way to an error only)."""
    number = 1
    for offset in range(0, line.offset, _CHUNK):
        number += os.pread(fd, min(_CHUNK, line.offset - offset), offset).count(b"\n")
    return f"line {number} (byte {line.offset})"


def _append_whole(fd: int, data: bytes, path: str) -> None:
    """Append ``data`` and sync it, or leave the file as it was: a failed write (disk full, quota, file size limit,
    I/O error) is cut off again, so the caller can retry the batch without storing part of it twice.

    The caller holds the exclusive lock, so the size before the write is where this append began.
    """
    size = os.fstat(fd).st_size
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException as exc:
        try:
            os.ftruncate(fd, size)
            os.fsync(fd)
        except OSError:
            pass  # the original error is the one to report
        if isinstance(exc, OSError) and exc.filename is None:  # name the file: "[Errno 28] ...: 'chat.jsonl'"
            raise OSError(exc.errno, exc.strerror, path) from exc
        raise


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
