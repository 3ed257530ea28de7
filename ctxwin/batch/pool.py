"""Worker processes for ``fit_many``: one ``Fitter`` per process, chunks of conversations in, results out in order.

Start method: ``forkserver`` where the platform has it, else ``spawn``; never ``fork``. The tiktoken counter
tokenizes large batches on a thread pool, and the caller (a notebook, a Ray driver, a web server) may run threads
of its own; a child forked while another thread holds a lock (the pool's queue, logging, the allocator) can
deadlock. The fork server is a fresh single-threaded process, so workers start from a clean state, and each one
forks from it instead of starting a whole interpreter as ``spawn`` does.

At most ``IN_FLIGHT_PER_WORKER`` chunks per worker are submitted and not yet consumed: the input is read only as
fast as results are taken, so a generator over millions of conversations is never held in memory.
"""

from __future__ import annotations

import itertools
import multiprocessing
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from ctxwin.batch.item import FitResult, Fitter

START_METHOD = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
# Two chunks per worker: one being fitted, one queued, so a worker never waits for the next chunk's transfer.
IN_FLIGHT_PER_WORKER = 2

Chunk = list[tuple[int, Any]]

_fitter: Fitter | None = None  # the worker process's own, built by the pool initializer


def _start_worker(fit_kwargs: Mapping[str, Any], decode: Callable[[Any], Any] | None) -> None:
    global _fitter
    _fitter = Fitter(fit_kwargs, decode)


def _fit_chunk(chunk: Chunk) -> list[FitResult]:
    if _fitter is None:  # only reachable if the pool was built without its initializer
        raise RuntimeError("fit_many worker used before its initializer ran")
    return [_fitter.fit(index, conversation) for index, conversation in chunk]


def chunked(items: Iterable[tuple[int, Any]], size: int) -> Iterator[Chunk]:
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def fit_in_pool(
    items: Iterable[tuple[int, Any]],
    fit_kwargs: Mapping[str, Any],
    *,
    workers: int,
    chunksize: int,
    local: Fitter,
) -> Generator[FitResult, None, None]:
    """Fit ``(index, item)`` pairs on ``workers`` processes, each with a Fitter like ``local``; yield the results in
    input order.

    A chunk that cannot travel to a worker or back (a conversation given as a generator, an object whose class
    the worker cannot import) is fitted by ``local`` in this process instead, so it still gets its own results.
    """
    executor = ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context(START_METHOD),
        initializer=_start_worker,
        initargs=(dict(fit_kwargs), local.decode),
    )
    pending: deque[tuple[Chunk, Future[list[FitResult]]]] = deque()
    try:
        for chunk in chunked(items, chunksize):
            pending.append((chunk, executor.submit(_fit_chunk, chunk)))
            if len(pending) >= IN_FLIGHT_PER_WORKER * workers:
                yield from _collect(*pending.popleft(), local)
        while pending:
            yield from _collect(*pending.popleft(), local)
    finally:  # also when the caller stops early: queued chunks are dropped, running ones finish
        executor.shutdown(wait=True, cancel_futures=True)


def _collect(chunk: Chunk, future: Future[list[FitResult]], local: Fitter) -> list[FitResult]:
    try:
        return future.result()
    except BrokenProcessPool as exc:
        raise RuntimeError(
            "a fit_many worker process died (killed, out of memory, or its planner could not be built there); "
            f"no results from item {chunk[0][0]} on"
        ) from exc
    except Exception:  # the chunk could not be pickled to the worker or back: fit it here
        return [local.fit(index, conversation) for index, conversation in chunk]
