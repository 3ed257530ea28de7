"""Thread pools ctxwin keeps between uses (tiktoken's batches), stopped by a caller about to fork worker processes
(a child forked while another thread runs can deadlock on a lock it held): each starts again at its next use."""

from __future__ import annotations

import threading
from collections.abc import Callable

_pools: dict[str, Callable[[], None]] = {}  # a pool's thread-name prefix -> what stops it


def register(prefix: str, stop: Callable[[], None]) -> None:
    """Declare a pool whose threads are named ``prefix...`` and that ``stop()`` ends (joining its threads)."""
    _pools[prefix] = stop


def stop_idle_pools() -> bool:
    """Stop ctxwin's pools when they hold the only threads besides this one, the main thread (then none of them
    can be at work: this thread is here); whether it did. The kernel removes a joined thread a moment later."""
    others = [thread for thread in threading.enumerate() if thread is not threading.current_thread()]
    if threading.current_thread() is not threading.main_thread() or not others:
        return False
    if not all(thread.name.startswith(tuple(_pools)) for thread in others) or not _pools:
        return False
    for stop in list(_pools.values()):
        stop()
    return True
