"""Worker processes for batch runs: each builds one state object once and runs tasks with it; a dead worker is
replaced by a new pool. Why ``forkserver``, forking with shared data, ``gc.freeze`` and workers that die with their
parent: docs/batch.md.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing
import multiprocessing.connection
import os
import select
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

# The forkserver listens on an AF_UNIX socket at <temporary directory>/pymp-XXXXXXXX/listener-XXXXXXXX, and the
# kernel caps such a path at 107 bytes: under a deeper temporary directory it cannot start, and spawn (pipes) can.
_SOCKET_PATH_MAX, _SOCKET_SUFFIX = 107, len("/pymp-XXXXXXXX/listener-XXXXXXXX")


def start_method() -> str:
    """How workers start when they cannot be forked: forkserver where the platform has it and its socket's path
    fits under the temporary directory (read at each pool's start: TMPDIR may change), else spawn."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return "spawn"
    fits = len(os.fsencode(tempfile.gettempdir())) + _SOCKET_SUFFIX <= _SOCKET_PATH_MAX
    return "forkserver" if fits else "spawn"
WORKER_DIED = "the worker process died while fitting this item (crashed, killed or out of memory)"

# A restart waits this long for the broken pool's manager thread (which joins the pool's other threads) to exit.
_THREADS_EXIT_SECONDS = 5.0
# ...and a pool that would fork, this long for the kernel to remove threads Python has joined (fork_safe): longer
# than that, the threads left are someone else's (a native library's), and the pool starts from the fork server.
_KERNEL_PATIENCE = 0.1
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_POLL_SECONDS = 0.5  # how often a worker without a pidfd asks whether its owner is still there

R = TypeVar("R")

_state: Any = None  # the worker process's own, built by the pool initializer
_failure: Exception | None = None  # what building it raised, raised again by every task
_shared: Sequence[Any] = ()  # a forked worker's copy of the pool's shared data


def fork_safe(patience: float = 0.0) -> bool:
    """Whether workers may be forked from this process: Linux (where fork is the native way to start a process)
    and a single thread, counted by the kernel, so threads of native libraries count too. With ``patience``, when
    Python's own threads have all ended (a pool shut down just before: its threads are joined, but the kernel
    removes a thread a moment after), wait up to that many seconds for the kernel to count one."""
    if sys.platform != "linux":
        return False
    deadline = time.monotonic() + patience
    while True:
        try:
            if len(os.listdir("/proc/self/task")) == 1:
                return True
        except OSError:
            return False
        if threading.active_count() > 1 or time.monotonic() >= deadline:
            return False
        time.sleep(0.001)


def shared() -> Sequence[Any]:
    """In a worker of a pool that shares data (``WorkerPool.shares``), that data; else empty."""
    return _shared


def _die_with(owner: int) -> None:
    """End this worker process when process ``owner`` (the one that started the pool) ends, however it ends.

    A forked worker's parent is ``owner`` itself, and Linux kills it with its parent (``PR_SET_PDEATHSIG``); a
    worker of the fork server has the fork server for its parent, which lives as long as its workers do. So every
    worker also watches ``owner`` from a daemon thread: through a pidfd where Linux has them (woken the moment it
    ends), else by asking twice a second whether it is still there.
    """
    if sys.platform == "linux":
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    try:
        watch = os.pidfd_open(owner)
    except ProcessLookupError:  # already gone
        os._exit(1)
    except (AttributeError, OSError):  # no pidfd (not Linux, or before Linux 5.3)
        watch = None
    threading.Thread(target=_watch, args=(owner, watch), name="ctxwin-owner-watch", daemon=True).start()


def _watch(owner: int, watch: int | None) -> None:
    if watch is not None:
        select.select([watch], [], [])  # readable once the process has ended
    else:
        while _alive(owner):
            time.sleep(_POLL_SECONDS)
    os._exit(1)  # no cleanup to run: the work was the owner's, and it is gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # there, but another user's: the pid was reused, so the owner is gone
        return False
    return True


def _start_worker(build: Callable[[], Any], data: Sequence[Any] = (), owner: int | None = None) -> None:
    global _state, _failure, _shared
    if owner is not None:
        _die_with(owner)
    _shared = data
    # Ctrl-C reaches the whole process group: the caller stops the pool; a worker's traceback would only be noise.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # blocked while a spawned worker started (submit); not on Windows
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        _state = build()
    except Exception as exc:  # an initializer that raises breaks the pool; a task raising it says why instead
        _failure = exc


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    # Signals reach the main thread only; Windows has no signal masks.
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


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

    ``shared``: data the workers read with ``shared()`` when the pool could fork them (``shares``, see the module
    docstring); otherwise ``shares`` is False and the caller sends the data with its tasks. A restart forks again
    only while forking is still safe, so callers check ``shares`` whenever they submit.
    """

    def __init__(self, workers: int, build: Callable[[], Any], shared: Sequence[Any] | None = None) -> None:
        self.workers, self.build, self.data = workers, build, shared
        self.shares = False
        self._froze = False  # whether this pool froze the collector's view of the process (docs/batch.md)
        self.executor = self._start()
        try:
            self._check()
        except BaseException:
            self.shutdown(kill=True)
            raise

    def _start(self) -> ProcessPoolExecutor:
        # A forked worker gets the initializer's arguments in its memory: the data is never pickled.
        self.shares = self.data is not None and fork_safe(_KERNEL_PATIENCE)
        if self.shares and gc.get_freeze_count() == 0:
            gc.freeze()
            self._froze = True
        return ProcessPoolExecutor(
            self.workers,
            mp_context=multiprocessing.get_context("fork" if self.shares else start_method()),
            initializer=_start_worker,
            initargs=(self.build, self.data if self.shares and self.data is not None else (), os.getpid()),
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
            # A spawned worker starts in the submitting thread, and a whole interpreter's start is a window where
            # Ctrl-C would kill it with a fatal error on the shared stderr: it inherits this mask across exec and
            # unblocks once it ignores the signal (``_start_worker``); here the signal waits out the call.
            with _sigint_blocked():
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
        """Stop the workers: after their running tasks, or at once (``kill``: an interrupt, a broken pool).

        A worker killed from outside while it waited for a task dies holding the task queue's lock, and the others
        then wait on that lock forever (the executor only notices a death while tasks are in flight): once any
        worker has died by a signal, the rest are terminated instead of waited for."""
        if self._froze:
            gc.unfreeze()
            self._froze = False
        processes = list((getattr(self.executor, "_processes", None) or {}).values())
        manager = getattr(self.executor, "_executor_manager_thread", None)  # shutdown() forgets it
        self.executor.shutdown(wait=False, cancel_futures=True)
        alive = [process for process in processes if process.is_alive()]
        while alive:
            if kill or any(process.exitcode is not None and process.exitcode < 0 for process in processes):
                for process in alive:
                    process.terminate()
                break
            multiprocessing.connection.wait([process.sentinel for process in alive])
            alive = [process for process in alive if process.is_alive()]
        for process in processes:
            process.join()
        if manager is not None:  # forking a pool again needs this one's threads gone
            manager.join(timeout=_THREADS_EXIT_SECONDS)
