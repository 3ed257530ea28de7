"""Per-counter caches of per-message token counts, shared across trim calls.

Each counter object (a TokenCounter, or a per-message callable) gets its own bounded, thread-safe LRU map from
``message_key`` to the message's count, so re-trimming a conversation that grew by one message tokenizes about one
message. Caches are held weakly by counter: when a counter is garbage-collected its cache goes with it. A bound
method is keyed by its object and function, because ``obj.method`` builds a new method object on every access.
"""

from __future__ import annotations

import inspect
import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any

from ctxwin.engine.identity_memo import IdentityMemo

DEFAULT_MAX_ENTRIES = 1 << 17


class TokenCache:
    """A bounded LRU map ``message key -> token count``; every method takes the lock once per batch."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, float] = OrderedDict()
        self._lock = threading.Lock()
        self.recent = IdentityMemo(max_entries)
        # Request overheads (empty list, non-empty list) measured once for an additive TokenCounter.
        self.overheads: tuple[int, int] | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def get_many(self, keys: Sequence[Hashable]) -> list[float | None]:
        entries = self._entries
        found: list[float | None] = []
        with self._lock:
            for key in keys:
                count = entries.get(key)
                if count is not None:
                    entries.move_to_end(key)
                found.append(count)
        return found

    def put_many(self, items: Sequence[tuple[Hashable, float]]) -> None:
        entries = self._entries
        with self._lock:
            for key, count in items:
                entries[key] = count
                entries.move_to_end(key)
            while len(entries) > self.max_entries:
                entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.overheads = None
        self.recent.clear()


_registry_lock = threading.Lock()
_by_owner: weakref.WeakKeyDictionary[Any, dict[Any, TokenCache]] = weakref.WeakKeyDictionary()


def cache_for(counter: Any) -> TokenCache | None:
    """The cache belonging to ``counter``, created on first use; None if the counter cannot be held weakly."""
    if inspect.ismethod(counter):
        owner, part = counter.__self__, counter.__func__
    else:
        owner, part = counter, None
    with _registry_lock:
        try:
            caches = _by_owner.get(owner)
            if caches is None:
                caches = _by_owner[owner] = {}
        except TypeError:  # not weak-referenceable or not hashable: count afresh on every call
            return None
        cache = caches.get(part)
        if cache is None:
            cache = caches[part] = TokenCache()
        return cache
