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
import signal
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
WORKER_DIED = "the worker process died while fitting this item (crashed, killed or out of memory)"

_fitter: Fitter | None = None  # the worker process's own, built by the pool initializer


def _start_worker(fit_kwargs: Mapping[str, Any], decode: Callable[[Any], Any] | None) -> None:
    global _fitter
    # Ctrl-C reaches the whole process group: the caller stops the pool; a worker's traceback would only be noise.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
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
    An item that kills its worker (a crash in a tokenizer or plugin, the OOM killer) gets that as its error and
    the run goes on in a new pool; see ``_Pool.collect``.
    """
    pool = _Pool(workers, fit_kwargs, local)
    pending: deque[tuple[Chunk, Future[list[FitResult]]]] = deque()
    try:
        for chunk in chunked(items, chunksize):
            pending.append((chunk, pool.submit(chunk)))
            if len(pending) >= IN_FLIGHT_PER_WORKER * workers:
                yield from pool.collect(pending)
        while pending:
            yield from pool.collect(pending)
    finally:  # also when the caller stops early: queued chunks are dropped, running ones finish
        pool.shutdown()


class _Pool:
    """The executor, replaced by a new one when a worker dies."""

    def __init__(self, workers: int, fit_kwargs: Mapping[str, Any], local: Fitter) -> None:
        self.workers, self.fit_kwargs, self.local = workers, dict(fit_kwargs), local
        self.executor = self._start()

    def _start(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            self.workers,
            mp_context=multiprocessing.get_context(START_METHOD),
            initializer=_start_worker,
            initargs=(self.fit_kwargs, self.local.decode),
        )

    def submit(self, chunk: Chunk) -> Future[list[FitResult]]:
        return self.executor.submit(_fit_chunk, chunk)

    def shutdown(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)

    def collect(self, pending: deque[tuple[Chunk, Future[list[FitResult]]]]) -> list[FitResult]:
        """The results of the oldest pending chunk.

        When the pool broke, any chunk in flight may have killed it: a new pool fits the oldest chunk one item at a
        time (an item that breaks it again is the culprit and gets the error), then the other pending chunks are
        sent again. A pool that cannot even start (its planner cannot be built there) raises.
        """
        chunk, future = pending.popleft()
        try:
            return future.result()
        except BrokenProcessPool:
            pass
        except Exception:  # the chunk could not be pickled to the worker or back: fit it here
            return [self.local.fit(index, conversation) for index, conversation in chunk]
        self._restart()
        results = [self._isolated(index, conversation) for index, conversation in chunk]
        for i, (other, _) in enumerate(pending):
            pending[i] = (other, self.submit(other))
        return results

    def _isolated(self, index: int, conversation: Any) -> FitResult:
        try:
            return self.submit([(index, conversation)]).result()[0]
        except BrokenProcessPool:
            self._restart()
            return FitResult(index, error=WORKER_DIED)
        except Exception:
            return self.local.fit(index, conversation)

    def _restart(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)
        self.executor = self._start()
        try:
            self.executor.submit(_fit_chunk, []).result()  # a pool that cannot start must not loop
        except BrokenProcessPool as exc:
            raise RuntimeError(
                "fit_many worker processes cannot start (killed, out of memory, their planner could not be built "
                'there, or the main script runs fit_many again outside `if __name__ == "__main__":`)'
            ) from exc
