"""Worker processes for batch runs: each builds one state object (a ``Fitter``, a line mapper) once and runs the
tasks sent to it over a pipe of its own; the calling process starts no thread and pays per task, not per item.
Workers are forked from a single-threaded caller when it shares data with them, and never outlive it.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import gc
import multiprocessing
import multiprocessing.connection
import os
import pickle
import queue
import select
import signal
import sys
import tempfile
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, Generic, TypeVar

from ctxwin._idle_threads import stop_idle_pools

# The forkserver listens on an AF_UNIX socket at <temporary directory>/pymp-XXXXXXXX/listener-XXXXXXXX, and the
# kernel caps such a path at 107 bytes: under a deeper temporary directory it cannot start, and spawn (pipes) can.
_SOCKET_PATH_MAX, _SOCKET_SUFFIX = 107, len("/pymp-XXXXXXXX/listener-XXXXXXXX")


def start_method() -> str:
    """How workers start when they cannot be forked: forkserver where the platform has it and its socket's path
    fits under the temporary directory (read at each pool's start: TMPDIR may change), else spawn.

    Not fork: the caller (a notebook, a Ray driver, a web server, tiktoken's thread pool) may run threads, and a
    child forked while another thread holds a lock (logging, the allocator) can deadlock. The fork server is a
    fresh single-threaded process, and each worker forks from it instead of starting a whole interpreter."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return "spawn"
    fits = len(os.fsencode(tempfile.gettempdir())) + _SOCKET_SUFFIX <= _SOCKET_PATH_MAX
    return "forkserver" if fits else "spawn"


WORKER_DIED = "the worker process died while fitting this item (crashed, killed or out of memory)"

# Tasks sent to a worker and not answered yet: one running, one waiting in its pipe, so a worker never waits for
# this process between two tasks; the rest wait here, so a slow task holds back at most one other.
IN_FLIGHT = 2
# A pool that would fork waits this long for the kernel to remove threads Python has joined: longer than that, the
# threads left are someone else's (a native library's), and the pool starts from the fork server.
_KERNEL_PATIENCE = 0.1
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_POLL_SECONDS = 0.5  # how often a worker without a pidfd asks whether its owner is still there
_STOP = b""  # the message that ends a worker

R = TypeVar("R")

_state: Any = None  # the worker process's own, built when it starts
_failure: Exception | None = None  # what building it raised, raised again by every task
_shared: Any = None  # a forked worker's copy of the pool's shared data


def fork_safe() -> bool:
    """Whether workers may be forked from this process: Linux (where fork is the native way to start a process)
    and a single thread, counted by the kernel, so threads of native libraries count too. ctxwin's own idle thread
    pools (a tiktoken counter used here before) are stopped for it, and the kernel given a moment to remove them."""
    if sys.platform != "linux":
        return False
    deadline = time.monotonic() + (_KERNEL_PATIENCE if stop_idle_pools() else 0.0)
    while True:
        try:
            if len(os.listdir("/proc/self/task")) == 1:
                return True
        except OSError:
            return False
        if threading.active_count() > 1 or time.monotonic() >= deadline:
            return False
        time.sleep(0.001)


def shared() -> Any:
    """In a worker of a pool that shares data (``WorkerPool.shares``), that data; else None."""
    return _shared


def _die_with(owner: int) -> None:
    """End this worker process when process ``owner`` (the one that started the pool) ends, however it ends.

    A forked worker's parent is ``owner`` itself, and Linux kills it with its parent (``PR_SET_PDEATHSIG``); a
    worker of the fork server has the fork server for its parent, which lives as long as its workers do (each
    holds the pipes that keep it and multiprocessing's resource tracker alive, all holding the caller's stdout and
    stderr). So every worker also watches ``owner`` from a daemon thread: through a pidfd where Linux has them
    (woken the moment it ends), else by asking twice a second whether it is still there.
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


def _serve(
    connection: Connection, build: Callable[[], Any], data: Any, owner: int, inherited: list[Connection]
) -> None:
    """A worker's life: build the state, then run each task received and send its outcome back, until told to
    stop or the pipe closes."""
    global _state, _failure, _shared
    for other in inherited:  # a forked worker's copies of the pool's ends of the workers forked before it
        other.close()
    _die_with(owner)
    _shared = data
    # Ctrl-C reaches the whole process group: the caller stops the pool; a worker's traceback would only be noise.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # blocked while a spawned worker started (_start); not on Windows
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    # Tasks are read as they come, even while one runs: the caller then never blocks writing a task to a worker
    # that is itself blocked writing a result back (each would wait for the other).
    tasks: queue.SimpleQueue[bytes] = queue.SimpleQueue()
    threading.Thread(target=_receive, args=(connection, tasks), name="ctxwin-tasks", daemon=True).start()
    try:
        _state = build()
    except Exception as exc:  # a task raising it says why, in the caller
        _failure = exc
    while (message := tasks.get()) != _STOP:
        try:
            task, args = pickle.loads(message)
            outcome: tuple[bool, Any] = (True, _call(task, *args))
        except Exception as exc:  # the task's own failure, or one that cannot be read here: the caller decides
            outcome = (False, exc)
        try:
            connection.send_bytes(_written(outcome))
        except OSError:  # the caller is gone
            os._exit(1)


def _receive(connection: Connection, tasks: queue.SimpleQueue[bytes]) -> None:
    try:
        while True:
            tasks.put(connection.recv_bytes())
    except (EOFError, OSError):
        tasks.put(_STOP)


def _written(outcome: tuple[bool, Any]) -> bytes:
    try:
        return pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # a result or an error that cannot be pickled: the caller handles the task itself
        return pickle.dumps((False, RuntimeError(f"the worker's answer cannot be sent back: {exc}")))


def _call(task: Callable[..., R], *args: Any) -> R:
    if _failure is not None:
        raise _failure
    return task(_state, *args)


def _ready(state: Any) -> None:
    """A task that does nothing: it raises what building the state raised."""


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


class Task(Generic[R]):
    """A task given to a ``WorkerPool``: ``result()`` waits for its answer (running the pool meanwhile) and returns
    it, or raises what the task raised, ``BrokenProcessPool`` when a worker died first, or what pickling raised."""

    __slots__ = ("_outcome", "_pool")

    def __init__(self, pool: WorkerPool, outcome: tuple[bool, Any] | None = None) -> None:
        self._pool, self._outcome = pool, outcome

    def result(self) -> R:
        while self._outcome is None:
            self._pool.wait()
        ok, value = self._outcome
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]


@dataclass
class _Worker:
    process: BaseProcess
    connection: Connection
    sent: deque[Task[Any]] = field(default_factory=deque)


_live: weakref.WeakSet[WorkerPool] = weakref.WeakSet()


@atexit.register
def _end_pools() -> None:
    """Kill the workers of pools still running when the interpreter exits (a generator never closed): they would
    wait for tasks forever, and multiprocessing's own exit handler would wait for them."""
    for pool in list(_live):
        pool.shutdown(kill=True)


class WorkerPool:
    """``workers`` processes, each with ``build()``'s state; ``submit(task, *args)`` runs ``task(state, *args)`` on
    the first worker free, answered through ``Task.result()``.

    Starting it waits for one worker to have built its state and raises what building it raised, so a bad argument
    is reported once, in the caller (which builds no state of its own). A worker that dies breaks the pool: every
    task not answered fails with ``BrokenProcessPool``, and ``restart()`` starts a new pool.

    ``shared``: data the workers hold when they could be forked (``shares``; Linux, this process single-threaded):
    a list they read with ``shared()`` from the memory they inherit, an open file they read themselves; this process
    never writes it down. While they
    run, the objects this process held are frozen out of its garbage collector's view (``gc.freeze()``, as the
    Python docs advise before a fork), unless something else froze objects already: a full collection would walk
    them and write to their headers, copying the pages the workers share. Otherwise ``shares`` is False and the
    caller sends the data with its tasks; a restart forks again only while that is still safe, so callers check
    ``shares`` whenever they submit.
    """

    def __init__(self, workers: int, build: Callable[[], Any], shared: Any = None) -> None:
        self.workers, self.build, self.data = workers, build, shared
        self.shares = self.broken = self._froze = False
        self._members: list[_Worker] = []
        self._queued: deque[tuple[Task[Any], bytes]] = deque()
        _live.add(self)
        try:
            self._start()
            self._check()
        except BaseException:
            self.shutdown(kill=True)
            raise

    def _start(self) -> None:
        self.shares = self.data is not None and fork_safe()
        if self.shares and gc.get_freeze_count() == 0:
            gc.freeze()
            self._froze = True
        context = multiprocessing.get_context("fork" if self.shares else start_method())
        self.broken = False
        # A spawned worker starts a whole interpreter, a window where Ctrl-C would kill it with a fatal error on the
        # shared stderr: it inherits this mask across exec and unblocks once it ignores the signal (``_serve``).
        with _sigint_blocked():
            for _ in range(self.workers):
                ours, theirs = context.Pipe()
                # A forked worker gets its arguments in its memory: the shared data is never pickled.
                inherited = [member.connection for member in self._members] if self.shares else []
                data = self.data if self.shares else None
                process = context.Process(  # type: ignore[attr-defined]
                    target=_serve, args=(theirs, self.build, data, os.getpid(), inherited), name="ctxwin-worker"
                )
                process.start()
                theirs.close()
                self._members.append(_Worker(process, ours))

    def _check(self) -> None:
        try:
            self.submit(_ready).result()
        except BrokenProcessPool as exc:
            raise RuntimeError(
                "worker processes cannot start (killed, out of memory, or the main script starts the pool again "
                'outside `if __name__ == "__main__":`)'
            ) from exc

    def submit(self, task: Callable[..., R], *args: Any) -> Task[R]:
        """``task(state, *args)`` on a worker. A pool broken since the last call, or arguments that cannot be
        pickled, give a task that fails: callers recover in one place, at ``result()``."""
        if self.broken:
            return Task(self, (False, _broken()))
        try:
            message = pickle.dumps((task, args), pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # anything pickling raises (a generator, a lambda, nesting too deep)
            return Task(self, (False, exc))
        submitted: Task[R] = Task(self)
        self._queued.append((submitted, message))
        self._send()
        return submitted

    def _send(self) -> None:
        """Send queued tasks to the workers with fewer than ``IN_FLIGHT`` unanswered, the least busy first."""
        while self._queued and not self.broken:
            member = min(self._members, key=lambda worker: len(worker.sent))
            if len(member.sent) >= IN_FLIGHT:
                return
            submitted, message = self._queued.popleft()
            member.sent.append(submitted)
            try:
                member.connection.send_bytes(message)
            except OSError:  # the worker is gone
                self._break()

    def wait(self) -> None:
        """Take the next answers, whichever workers give them, and send those workers their next tasks; a worker
        that ended breaks the pool."""
        if self.broken:
            return
        busy = {member.connection: member for member in self._members if member.sent}
        ended = {member.process.sentinel: member for member in self._members}
        ready = multiprocessing.connection.wait([*busy, *ended])
        for connection in ready:
            member = busy.get(connection)  # type: ignore[call-overload]
            if member is None:
                continue
            try:
                message = member.connection.recv_bytes()
            except (EOFError, OSError):  # it died mid-answer
                self._break()
                return
            try:
                outcome = pickle.loads(message)
            except Exception as exc:  # an answer this process cannot read (its class not importable here)
                outcome = (False, exc)
            member.sent.popleft()._outcome = outcome
        if any(sentinel in ready for sentinel in ended):
            self._break()
        self._send()

    def _break(self) -> None:
        self.broken = True
        failed = (False, _broken())
        for member in self._members:
            while member.sent:
                member.sent.popleft()._outcome = failed
        while self._queued:
            self._queued.popleft()[0]._outcome = failed

    def restart(self) -> None:
        self.shutdown(kill=True)
        _live.add(self)
        self._start()
        self._check()  # a pool that cannot start must not loop

    def shutdown(self, *, kill: bool = False) -> None:
        """Stop the workers: once their tasks are done, or at once (``kill``: an interrupt, a broken pool); a task
        not answered then fails."""
        if self._froze:
            gc.unfreeze()
            self._froze = False
        if not kill:  # the answers still due are read (a worker blocks writing one nobody reads), then dropped
            while self._queued:
                self._queued.popleft()[0]._outcome = (False, _broken())
            while not self.broken and any(member.sent for member in self._members):
                self.wait()
        for member in self._members:
            if kill:
                with contextlib.suppress(OSError, ValueError, AttributeError):  # ended already
                    member.process.terminate()
            else:
                with contextlib.suppress(OSError):
                    member.connection.send_bytes(_STOP)
        for member in self._members:
            member.process.join()
            member.connection.close()
        self._break()
        self._members.clear()
        _live.discard(self)


def _broken() -> BrokenProcessPool:
    return BrokenProcessPool("a worker process died: the pool is broken")
