"""A file of lines mapped on every core: each worker reads its own byte range (the lines that start in it), maps each
line and writes its own output chunk; this process only cuts ranges and joins chunks, so its cost grows with the
number of ranges, not of lines.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections import deque
from collections.abc import Callable, Generator, Iterator
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import IO, Protocol

from ctxwin.batch._item import describe
from ctxwin.batch._pool import WORKER_DIED, Task, WorkerPool

# Bytes per range: small enough that a range is fitted in a fraction of a second (so an interrupt, a dead worker
# or the last range costs little) and every worker gets many; large enough that the per-range work here is noise.
DEFAULT_SHARD_BYTES = 4 << 20
IN_FLIGHT_PER_WORKER = 4  # ranges submitted per worker ahead of the oldest one not yet appended
BLOCK = 1 << 20


@dataclass(frozen=True)
class Mapped:
    """What a line became: its output ``text`` (ending with a newline), or the ``error`` that stopped it.

    ``flagged`` counts the line in ``ShardResult.flagged`` (``ctxwin fit``: a conversation that does not fit)."""

    text: str | None = None
    error: str | None = None
    flagged: bool = False


class LineMapper(Protocol):
    def __call__(self, number: int, line: bytes) -> Mapped | None: ...


@dataclass
class ShardResult:
    """One range's work, in file order: its output chunks, the lines written and flagged, the bad lines' errors."""

    chunks: list[str] = field(default_factory=list)
    written: int = 0
    flagged: int = 0
    errors: list[tuple[int, str]] = field(default_factory=list)

    def add(self, other: ShardResult) -> None:
        self.chunks += other.chunks
        self.written += other.written
        self.flagged += other.flagged
        self.errors += other.errors


def ranges(size: int, shard_bytes: int) -> list[tuple[int, int]]:
    return [(start, min(start + shard_bytes, size)) for start in range(0, size, shard_bytes)]


def _count_newlines(mapper: LineMapper, path: str, start: int, end: int) -> int:
    count = 0
    with open(path, "rb") as handle:
        handle.seek(start)
        while start < end and (block := handle.read(min(BLOCK, end - start))):
            count += block.count(b"\n")
            start += len(block)
    return count


def lines_in(handle: IO[bytes], start: int, end: int, before: int) -> Iterator[tuple[int, int, bytes]]:
    """``(offset, line number, line)`` for each line that starts in ``[start, end)``; ``before`` is the number of
    newlines in the file before ``start``."""
    number, position = before, start
    if start:
        handle.seek(start - 1)
        if handle.read(1) != b"\n":  # the line in progress at ``start`` belongs to the range before
            partial = handle.readline()
            number += partial.endswith(b"\n")
            position += len(partial)
    while position < end and (line := handle.readline()):
        yield position, number + 1, line
        number += line.endswith(b"\n")
        position += len(line)


def _map_range(mapper: LineMapper, path: str, start: int, end: int, before: int, folder: str) -> ShardResult:
    result = ShardResult()
    descriptor, chunk = tempfile.mkstemp(dir=folder, suffix=".jsonl")
    result.chunks.append(chunk)
    with open(path, "rb") as handle, open(descriptor, "w", encoding="utf-8", errors="backslashreplace") as out:
        for _, number, line in lines_in(handle, start, end, before):
            try:
                mapped = mapper(number, line)
            except Exception as exc:  # the mapper's own failure is still only this line's
                mapped = Mapped(error=describe(exc))
            if mapped is None:
                continue
            if mapped.error is not None:
                result.errors.append((number, mapped.error))
                continue
            out.write(mapped.text or "")
            result.written += 1
            result.flagged += mapped.flagged
    return result


def append(chunk: str, out: IO[str]) -> None:
    """Append a chunk's bytes to ``out`` through the kernel (``sendfile``), without reading them here."""
    out.flush()
    with open(chunk, "rb") as source:
        try:
            target = out.fileno()
        except (OSError, ValueError, AttributeError):  # a stream with no file under it (io.StringIO)
            out.write(source.read().decode("utf-8"))
            return
        size, offset = os.fstat(source.fileno()).st_size, 0
        while offset < size:
            try:
                sent = os.sendfile(target, source.fileno(), offset, size - offset)
            except OSError:  # a target sendfile cannot write to: copy through this process
                source.seek(offset)
                out.write(source.read().decode("utf-8"))
                return
            offset += sent


def map_file(
    path: str, out: IO[str], make_mapper: Callable[[], LineMapper], *, workers: int, shard_bytes: int | None = None
) -> Generator[ShardResult, None, None]:
    """Map every line of the regular file ``path`` on ``workers`` processes; append the output to ``out`` in file
    order, yielding each range's result (after its output is appended) so the caller can report its errors.

    A worker that dies is replaced: the range that was oldest is mapped again alone, and when it kills its worker
    again, line by line, the line that does it getting ``WORKER_DIED`` as its error. Building the mapper raises in
    this process when it fails in the first worker. Stopping (an exception, Ctrl-C, closing the iterator) kills
    the workers and removes the chunks; ``out`` then holds only whole ranges.
    """
    spans = ranges(os.path.getsize(path), shard_bytes or DEFAULT_SHARD_BYTES)
    pool = WorkerPool(workers, make_mapper)
    folder = tempfile.mkdtemp(prefix="ctxwin-chunks-")
    finished = False
    try:
        befores = _befores(pool, path, spans)
        pending: deque[tuple[int, Task[ShardResult]]] = deque()
        for index, (start, end) in enumerate(spans):
            pending.append((index, pool.submit(_map_range, path, start, end, befores[index], folder)))
            if len(pending) >= IN_FLIGHT_PER_WORKER * workers:
                yield _appended(_collect(pending, pool, path, spans, befores, folder), out)
        while pending:
            yield _appended(_collect(pending, pool, path, spans, befores, folder), out)
        finished = True
    finally:
        pool.shutdown(kill=not finished)
        shutil.rmtree(folder, ignore_errors=True)


def _befores(pool: WorkerPool, path: str, spans: list[tuple[int, int]]) -> list[int]:
    """The newlines before each range, counted by the workers (again in a new pool if one dies)."""
    while True:
        futures = [pool.submit(_count_newlines, path, start, end) for start, end in spans]
        try:
            counts = [future.result() for future in futures]
        except BrokenProcessPool:
            pool.restart()
            continue
        befores, total = [], 0
        for count in counts:
            befores.append(total)
            total += count
        return befores


def _appended(result: ShardResult, out: IO[str]) -> ShardResult:
    for chunk in result.chunks:
        append(chunk, out)
        with contextlib.suppress(OSError):
            os.unlink(chunk)
    return result


def _collect(
    pending: deque[tuple[int, Task[ShardResult]]],
    pool: WorkerPool,
    path: str,
    spans: list[tuple[int, int]],
    befores: list[int],
    folder: str,
) -> ShardResult:
    index, future = pending.popleft()
    try:
        return future.result()
    except BrokenProcessPool:
        pass
    pool.restart()
    start, end = spans[index]
    try:
        result = pool.submit(_map_range, path, start, end, befores[index], folder).result()
    except BrokenProcessPool:
        pool.restart()
        result = _line_by_line(pool, path, start, end, befores[index], folder)
    for i, (other, _) in enumerate(pending):
        pending[i] = (other, pool.submit(_map_range, path, *spans[other], befores[other], folder))
    return result


def _line_by_line(pool: WorkerPool, path: str, start: int, end: int, before: int, folder: str) -> ShardResult:
    """A range that kills its worker twice, one line at a time: the lines that kill it again are the culprits."""
    result = ShardResult()
    with open(path, "rb") as handle:
        lines = [(offset, number, len(line)) for offset, number, line in lines_in(handle, start, end, before)]
    for offset, number, length in lines:
        try:
            result.add(pool.submit(_map_range, path, offset, offset + length, number - 1, folder).result())
        except BrokenProcessPool:
            pool.restart()
            result.errors.append((number, WORKER_DIED))
    return result
