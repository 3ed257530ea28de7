"""``fit_many``'s work on a ``WorkerPool``: chunks of conversations out, compact results back, in input order.

What travels per chunk: its range of indexes to workers forked with the conversations in their memory, a file's
block as its place in the file (or its bytes), else each item pickled on its own (docs/batch.md has the costs).
"""

from __future__ import annotations

import dataclasses
import itertools
import pickle
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from ctxwin.batch._item import FitResult, Fitter, describe
from ctxwin.batch._line_blocks import BadLine, LineBlock
from ctxwin.batch._pool import WORKER_DIED, Task, WorkerPool, shared

# Two chunks per worker: one being fitted, one queued, so a worker never waits for the next chunk's transfer.
IN_FLIGHT_PER_WORKER = 2

Chunk = list[tuple[int, Any]]
Written = tuple[list[int], list[bytes]]  # a chunk's indices, and its items each pickled
Sent = Chunk | Written | range | LineBlock  # a range: indexes into the pool's shared conversations


def _fit_chunk(fitter: Fitter, chunk: Sent) -> list[FitResult]:
    return [
        FitResult(index, error=describe(ValueError(item.error))) if isinstance(item, BadLine)
        else fitter.fit(index, item)
        for index, item in read(chunk)
    ]


def sent(chunk: Chunk | LineBlock, pool: WorkerPool) -> Sent:
    """What travels to ``pool``'s worker for ``chunk``: its indexes, or a file's block as its place in the file,
    when the workers hold the conversations or the file (forked); else a block with its bytes (the worker splits
    it) or ``written(chunk)``."""
    if isinstance(chunk, LineBlock):
        return chunk if pool.shares else chunk.loaded()
    if pool.shares and isinstance(pool.data, tuple):  # fit_many's list, as it was at the call
        return range(chunk[0][0], chunk[-1][0] + 1)
    return written(chunk)  # conversations, or a file's lines one by one (``_isolated``)


def written(chunk: Chunk) -> Chunk | Written:
    """The chunk as it travels: its items pickled one by one, which costs about three quarters of what pickling the
    chunk at once does (a chunk's pickle memo grows with every string of every conversation in it); or the chunk
    itself when one cannot be pickled (the pool then fails to send it, and ``_collect`` fits it here). (``marshal``
    writes plain data faster still, but it writes a ``bytearray`` or ``memoryview`` as ``bytes``: the worker would
    have to walk every item to tell, which costs more than the writing saves.)"""
    try:
        return [index for index, _ in chunk], [pickle.dumps(item, pickle.HIGHEST_PROTOCOL) for _, item in chunk]
    except Exception:  # anything pickling raises (a generator, a lambda, nesting too deep)
        return chunk


def read(chunk: Sent) -> Chunk:
    """The chunk as ``sent`` took it."""
    if isinstance(chunk, range):
        items = shared()
        return [(index, items[index]) for index in chunk]
    if isinstance(chunk, tuple):
        return list(zip(chunk[0], map(pickle.loads, chunk[1]), strict=True))
    return list(chunk)


def chunked(items: Iterable[tuple[int, Any]], size: int) -> Iterator[Chunk]:
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def fit_in_pool(
    chunks: Iterable[Chunk | LineBlock], pool: WorkerPool, *, local: Callable[[], Fitter]
) -> Generator[FitResult, None, None]:
    """Fit chunks of ``(index, item)`` pairs (``chunked``, or a file's ``LineBlock``s) on ``pool`` (whose workers
    hold a ``Fitter``); yield the results in input order. At most ``IN_FLIGHT_PER_WORKER`` chunks per worker are
    submitted and not yet taken: the input is read only as fast as results are taken.

    A chunk that cannot travel to a worker or back (a conversation given as a generator, an object whose class
    the worker cannot import) is fitted by ``local()`` in this process instead, so it still gets its own results.
    An item that kills its worker (a crash in a tokenizer or plugin, the OOM killer) gets that as its error and
    the run goes on in a new pool; see ``_collect``. The pool is shut down at the end, or when the caller stops.
    """
    pending: deque[tuple[Chunk | LineBlock, Task[list[FitResult]]]] = deque()
    finished = False
    taken = 0  # results yielded: the index of the next one
    try:
        for chunk in chunks:
            pending.append((chunk, pool.submit(_fit_chunk, sent(chunk, pool))))
            if len(pending) >= IN_FLIGHT_PER_WORKER * pool.workers:
                results = _numbered(pending, pool, local, taken)
                taken += len(results)
                yield from results
        while pending:
            results = _numbered(pending, pool, local, taken)
            taken += len(results)
            yield from results
        finished = True
    finally:  # stopped early by the caller, or interrupted: queued chunks are dropped, running ones stopped
        pool.shutdown(kill=not finished)


def _numbered(
    pending: deque[tuple[Chunk | LineBlock, Task[list[FitResult]]]],
    pool: WorkerPool,
    local: Callable[[], Fitter],
    taken: int,
) -> list[FitResult]:
    """``_collect``'s results, a file's block's numbered from ``taken`` on (its lines are counted by the worker
    that splits it, so its first index is known only once the blocks before it are in)."""
    block = isinstance(pending[0][0], LineBlock)
    results = _collect(pending, pool, local)
    return [dataclasses.replace(result, index=taken + result.index) for result in results] if block else results


def _collect(
    pending: deque[tuple[Chunk | LineBlock, Task[list[FitResult]]]], pool: WorkerPool, local: Callable[[], Fitter]
) -> list[FitResult]:
    """The results of the oldest pending chunk.

    When the pool broke, any chunk in flight may have killed it: a new pool fits the oldest chunk one item at a
    time (an item that breaks it again is the culprit and gets the error), then the other pending chunks are sent
    again. A pool that cannot even start raises.
    """
    chunk, future = pending.popleft()
    try:
        return future.result()
    except BrokenProcessPool:
        pass
    except Exception:  # the chunk could not be pickled to the worker or back: fit it here
        return _fit_chunk(local(), chunk)
    pool.restart()
    results = [_isolated(index, conversation, pool, local) for index, conversation in chunk]
    for i, (other, _) in enumerate(pending):
        pending[i] = (other, pool.submit(_fit_chunk, sent(other, pool)))
    return results


def _isolated(index: int, conversation: Any, pool: WorkerPool, local: Callable[[], Fitter]) -> FitResult:
    try:
        return pool.submit(_fit_chunk, sent([(index, conversation)], pool)).result()[0]
    except BrokenProcessPool:
        pool.restart()
        return FitResult(index, error=WORKER_DIED)
    except Exception:
        return _fit_chunk(local(), [(index, conversation)])[0]
