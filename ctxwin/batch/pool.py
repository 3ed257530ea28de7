"""Worker processes for batch runs: each builds one state object (a ``Fitter``, a line mapper) once and runs tasks
with it; a dead worker is replaced by a new pool.

Start method: ``forkserver`` where the platform has it, else ``spawn``; never ``fork``. The tiktoken counter
tokenizes large batches on a thread pool, and the caller (a notebook, a Ray driver, a web server) may run threads
of its own; a child forked while another thread holds a lock (the pool's queue, logging, the allocator) can
deadlock. The fork server is a fresh single-threaded process, so workers start from a clean state, and each one
forks from it instead of starting a whole interpreter as ``spawn`` does.

The state is built in the workers only: a bad argument (an unknown model, a strategy that cannot be built) raises
there, and ``WorkerPool`` raises it again in the caller when the pool starts, so the caller never builds a planner
of its own.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

START_METHOD = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
WORKER_DIED = "the worker process died while fitting this item (crashed, killed or out of memory)"

R = TypeVar("R")

_state: Any = None  # the worker process's own, built by the pool initializer
_failure: Exception | None = None  # what building it raised, raised again by every task


def _start_worker(build: Callable[[], Any]) -> None:
    global _state, _failure
    # Ctrl-C reaches the whole process group: the caller stops the pool; a worker's traceback would only be noise.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _state = build()
    except Exception as exc:  # an initializer that raises breaks the pool; a task raising it says why instead
        _failure = exc


def _call(task: Callable[..., R], *args: Any) -> R:
    if _failure is not None:
        raise _failure
    return task(_state, *args)


def _ready(state: Any) -> None:
    """A task that does nothing: it raises what building the state raised."""


class WorkerPool:
    """``workers`` processes, each with ``build()``'s state; ``submit(task, *args)`` runs ``task(state, *args)``.

    Starting it waits for one worker to have built its state and raises what building it raised, so a bad
    argument is reported once, in the caller. ``restart()`` replaces a pool a dead worker broke.
    """

    def __init__(self, workers: int, build: Callable[[], Any]) -> None:
        self.workers, self.build = workers, build
        self.executor = self._start()
        try:
            self._check()
        except BaseException:
            self.shutdown(kill=True)
            raise

    def _start(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            self.workers,
            mp_context=multiprocessing.get_context(START_METHOD),
            initializer=_start_worker,
            initargs=(self.build,),
        )

    def _check(self) -> None:
        try:
            self.submit(_ready).result()
        except BrokenProcessPool as exc:
            raise RuntimeError(
                "worker processes cannot start (killed, out of memory, or the main script starts the pool again "
                'outside `if __name__ == "__main__":`)'
            ) from exc

    def submit(self, task: Callable[..., R], *args: Any) -> Future[R]:
        """``task(state, *args)`` on a worker. A pool a worker left broken since the last call gives a future that
        fails with ``BrokenProcessPool``, as the tasks in flight do: callers recover in one place, at ``result()``."""
        try:
            return self.executor.submit(_call, task, *args)
        except BrokenProcessPool as exc:
            future: Future[R] = Future()
            future.set_exception(exc)
            return future

    def restart(self) -> None:
        self.shutdown(kill=True)
        self.executor = self._start()
        self._check()  # a pool that cannot start must not loop

    def shutdown(self, *, kill: bool = False) -> None:
        """Stop the workers: after their running tasks, or at once (``kill``: an interrupt, a broken pool)."""
        if not kill:
            self.executor.shutdown(wait=True, cancel_futures=True)
            return
        processes = list((getattr(self.executor, "_processes", None) or {}).values())
        self.executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join()
