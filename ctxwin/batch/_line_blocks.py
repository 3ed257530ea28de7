"""An open file's lines handed to ``fit_many``'s workers in blocks cut at a newline: this process reads the bytes
once and counts the lines (so items keep their indexes); workers forked from it read each block from the file
themselves, others are sent its bytes; a worker splits and decodes the lines into what iterating the file gives.
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
_ENCODINGS = ("utf-8", "ascii")


@dataclass(frozen=True)
class BadLine:
    """An item whose bytes could not be decoded as text: fitted as that item's error."""

    error: str


@dataclass(frozen=True)
class LineBlock:
    """Whole lines of an open file, from item ``first`` on: ``count`` items, ``size`` bytes at ``offset`` of file
    descriptor ``descriptor`` (open in this process and in workers forked from it), or ``data``, those bytes, for a
    worker that does not hold the file. Iterated: ``(index, item)`` pairs."""

    first: int
    count: int
    descriptor: int
    offset: int
    size: int
    encoding: str | None  # None: a binary file, whose items are its lines as bytes
    errors: str
    data: bytes | None = None

    def __len__(self) -> int:
        return self.count

    def loaded(self) -> LineBlock:
        """The block with its bytes, for a worker that does not hold the file."""
        return self if self.data is not None else replace(self, data=self._bytes())

    def _bytes(self) -> bytes:
        return self.data if self.data is not None else os.pread(self.descriptor, self.size, self.offset)

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        lines = self._bytes().split(b"\n")
        pieces = [line + b"\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
        if len(pieces) != self.count:  # read again by a worker, and not what this process counted
            changed = BadLine("the file changed while it was read: its lines are no longer where they were")
            yield from ((index, changed) for index in range(self.first, self.first + self.count))
            return
        for index, piece in enumerate(pieces, self.first):
            yield index, self._item(piece)

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
        """The file's lines from ``start`` on, in blocks of about ``BLOCK_BYTES`` ending at a newline, read here
        (the stream ends where iterating it would); ``loaded``: each block carries its bytes."""
        first, offset, carry = 0, self.start, b""
        descriptor = self.binary.fileno()
        while True:
            block = self.binary.read(BLOCK_BYTES)
            if not block:
                if carry:  # the last line, without a newline
                    yield LineBlock(first, 1, descriptor, offset, len(carry), self.encoding, self.errors, carry)
                return
            cut = block.rfind(b"\n") + 1
            if not cut:  # no line ends in it: all of it belongs to the line carried
                carry += block
                continue
            count, size = block.count(b"\n", 0, cut), len(carry) + cut  # ``carry`` holds no newline
            data = carry + block[:cut] if loaded else None
            yield LineBlock(first, count, descriptor, offset, size, self.encoding, self.errors, data)
            first, offset, carry = first + count, offset + size, block[cut:]


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
