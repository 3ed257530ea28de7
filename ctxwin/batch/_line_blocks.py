"""An open file's lines handed to ``fit_many``'s workers in blocks cut at a newline: this process reads only the
bytes around each cut; workers forked from it read each block from the file themselves, others are sent its bytes;
a worker splits and decodes the lines into what iterating the file gives, numbered from the block's first line.
"""

from __future__ import annotations

import codecs
import io
import mmap
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

# Bytes per block (more when one line is longer): a few conversations of the agent corpus each.
BLOCK_BYTES = 1 << 20
_PROBE = 64 << 10  # bytes read at a time to find a block's last newline
_ENCODINGS = ("utf-8", "ascii")


@dataclass(frozen=True)
class BadLine:
    """An item whose bytes could not be decoded as text: fitted as that item's error."""

    error: str


@dataclass(frozen=True)
class LineBlock:
    """Whole lines of an open file: ``size`` bytes at ``offset`` of file descriptor ``descriptor`` (open in this
    process and in workers forked from it), or ``data``, those bytes, for a worker that does not hold the file;
    ``last``: the block ends the file (its last line may lack its newline). Iterated: ``(number, item)`` pairs,
    numbered from 0 within the block (this process does not count lines: ``fit_in_pool`` numbers the results)."""

    descriptor: int
    offset: int
    size: int
    last: bool
    encoding: str | None  # None: a binary file, whose items are its lines as bytes
    errors: str
    data: bytes | None = None

    def loaded(self) -> LineBlock:
        """The block with its bytes, for a worker that does not hold the file."""
        return self if self.data is not None else replace(self, data=self._bytes())

    def _bytes(self) -> bytes:
        return self.data if self.data is not None else os.pread(self.descriptor, self.size, self.offset)

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        data = self._bytes()
        if len(data) != self.size or not (data.endswith(b"\n") or (self.last and self._at_end())):  # cut elsewhere
            yield 0, BadLine("the file changed while it was read: its lines are no longer where they were")
            return
        lines = data.split(b"\n")
        pieces = [line + b"\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
        for number, piece in enumerate(pieces):
            yield number, self._item(piece)

    def _at_end(self) -> bool:
        """Whether the file still ends where this block does (sent bytes: it did)."""
        return self.data is not None or os.fstat(self.descriptor).st_size == self.offset + self.size

    def _item(self, piece: bytes) -> Any:
        if self.encoding is None:
            return piece
        try:
            return piece.decode(self.encoding, self.errors)
        except UnicodeDecodeError as exc:
            return BadLine(f"the line is not valid {self.encoding} ({exc})")


@dataclass(frozen=True)
class FileLines:
    """A file ``fit_many`` can hand out in blocks: the binary stream under it, where it stands, its bytes left,
    its text settings."""

    binary: Any
    start: int
    remaining: int
    encoding: str | None
    errors: str

    def blocks(self, *, loaded: bool) -> Iterator[LineBlock]:
        """The file's lines from ``start`` on, in blocks of about ``BLOCK_BYTES`` ending at a newline; ``loaded``:
        each block carries its bytes. At the end the stream stands where iterating it would: at its end."""
        descriptor, offset, end = self.binary.fileno(), self.start, self.start + self.remaining
        while offset < end:
            cut = _cut(descriptor, offset, end)
            block = LineBlock(descriptor, offset, cut - offset, cut == end, self.encoding, self.errors)
            yield block.loaded() if loaded else block
            offset = cut
        self.binary.seek(end)


def _cut(descriptor: int, start: int, end: int) -> int:
    """Where the block from ``start`` ends: after the last newline in its ``BLOCK_BYTES``, else (one line longer
    than that) after the line's newline, else at ``end``. Only the bytes searched are read: those after the last
    newline, which the next block holds."""
    position = target = start + BLOCK_BYTES
    if target >= end:
        return end
    while position > start:  # backwards, a probe at a time
        low = max(start, position - _PROBE)
        found = os.pread(descriptor, position - low, low).rfind(b"\n")
        if found >= 0:
            return low + found + 1
        position = low
    while target < end:
        probe = os.pread(descriptor, min(_PROBE, end - target), target)
        found = probe.find(b"\n")
        if found >= 0:
            return target + found + 1
        if not probe:
            break
        target += len(probe)
    return end


def file_lines(stream: Any) -> FileLines | None:
    """``stream`` as ``FileLines`` when the bytes alone determine its items, else None: a regular binary file, or
    a regular text file in UTF-8 or ASCII not yet read from and holding no carriage return (then universal
    newlines, ``newline=""`` and ``newline="\\n"`` all end lines at each newline and translate nothing; a file with
    ``"\\r\\n"`` endings is iterated as before). A line whose bytes are not valid in the file's encoding is that
    item's error (a ``BadLine``), as anything ``decode`` raises is: the run goes on."""
    if isinstance(stream, io.TextIOWrapper):
        try:
            encoding = codecs.lookup(stream.encoding).name
            fresh = stream.seekable() and stream.tell() == stream.buffer.tell()  # no text read ahead and held
        except (LookupError, OSError, ValueError, AttributeError):
            return None
        if encoding not in _ENCODINGS or not fresh:
            return None
        binary: Any = stream.buffer
        text: tuple[str, str] | None = (encoding, stream.errors or "strict")
    elif isinstance(stream, (io.BufferedReader, io.BufferedRandom)):
        binary, text = stream, None
    else:
        return None
    try:
        info = os.fstat(binary.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None
        start = binary.tell()
        if text is not None and info.st_size > start:
            with mmap.mmap(binary.fileno(), 0, access=mmap.ACCESS_READ) as view:
                if view.find(b"\r", start) != -1:
                    return None
    except (OSError, ValueError, AttributeError):
        return None
    if text is None:
        return FileLines(binary, start, info.st_size - start, None, "strict")
    return FileLines(binary, start, info.st_size - start, *text)
