"""The lines of an open file handed to ``fit_many``'s workers as blocks of bytes, split and decoded there, so the
calling process does not pay per line what the workers should. Only files whose items the bytes alone determine
qualify (docs/batch.md).
"""

from __future__ import annotations

import codecs
import io
import mmap
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
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
    """Whole lines of a file, from item ``first`` on: ``len()`` items, ``(index, item)`` pairs when iterated."""

    first: int
    data: bytes
    count: int
    encoding: str | None  # None: a binary file, whose items are its lines as bytes
    errors: str

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        lines = self.data.split(b"\n")
        pieces = [line + b"\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
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
    """A file ``fit_many`` can hand out in blocks: the binary stream under it, its bytes left, its text settings."""

    binary: Any
    remaining: int
    encoding: str | None
    errors: str

    def blocks(self) -> Iterator[LineBlock]:
        first, carry = 0, b""
        while True:
            block = self.binary.read(BLOCK_BYTES)
            data = carry + block if block else carry
            end = data.rfind(b"\n") + 1 if block else len(data)  # at the end the last line may lack its newline
            whole, carry = data[:end], data[end:]
            if whole:
                count = whole.count(b"\n") + (not whole.endswith(b"\n"))
                yield LineBlock(first, whole, count, self.encoding, self.errors)
                first += count
            if not block:
                return


def file_lines(stream: Any) -> FileLines | None:
    """``stream`` as ``FileLines`` when it qualifies (docs/batch.md), else None."""
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
        return FileLines(binary, info.st_size - start, None, "strict")
    return FileLines(binary, info.st_size - start, *text)
