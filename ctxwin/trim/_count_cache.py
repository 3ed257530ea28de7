"""The one cache of message counts: per counter, the count of every message it has counted, found by content (the
message written as bytes) or by identity (the same object written again and compared), so a re-trim of
``history + [new]`` counts only the new message. Its design: docs/architecture.md, "Trim engine and the count cache".
"""

from __future__ import annotations

import inspect
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from itertools import islice
from typing import Any, Literal

from ctxwin._errors import InvalidInputError
from ctxwin.counters._base import CounterAdapter
from ctxwin.messages import BaseMessage
from ctxwin.messages._writer import WRITER, Writer

DEFAULT_MAX_ENTRIES = 1 << 17

Kind = Literal["message", "list"]
# A content key: the message written (its class's address, then its field values), or for a message that cannot be
# written, its class and its values' types and reprs.
Key = bytes | tuple[type, tuple[tuple[type, str], ...]]
Note = tuple[Key, float]  # by identity: the key the message had when counted, and its count


class CountCache:
    """Per-message counts of one counter, by content and by identity; bounded, thread-safe (one lock per batch).
    ``writer``: how messages are written (the process's, unless a test compares the two)."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES, writer: Writer | None = None) -> None:
        if max_entries < 1:
            raise InvalidInputError(f"max_entries must be at least 1, got {max_entries}")
        self.max_entries = max_entries
        self.writer = writer or WRITER
        # Keys and notes hold only bytes and numbers, which the garbage collector does not track: a cold trim adds
        # thousands of them without bringing on a full collection of the process's objects.
        self._by_content: OrderedDict[Key, float] = OrderedDict()
        self._by_id: dict[int, Note] = {}  # id -> the key it was noted with, its count; oldest noted first
        # Every class a key was made for, held so that no other class takes its address (in the keys) while the
        # cache lives: a handful of classes.
        self._classes: set[type] = set()
        self._lock = threading.Lock()
        self.kind: Kind | None = None

    def __len__(self) -> int:
        return len(self._by_content)

    def content_keys(self, messages: Sequence[Any]) -> Sequence[Key]:
        """The messages' content keys: equal for equal messages (of one class), different when any field differs
        (docs/architecture.md, "Trim engine and the count cache"). Works for any pydantic model: ctxwin's messages and
        LangChain's alike."""
        classes = set(map(type, messages))
        if not classes <= self._classes:
            with self._lock:
                self._classes |= classes
        try:
            return self.writer.keys(messages)
        except ValueError:  # a message that cannot be written: keyed by its values' types and reprs
            return list(map(self._key_of, messages))

    def _key_of(self, message: Any) -> Key:
        try:
            return self.writer.write(message)
        except ValueError:
            values = (*message.__dict__.values(), message.__pydantic_extra__, message.__pydantic_private__)
            return type(message), tuple((value.__class__, repr(value)) for value in values)

    def recall(self, messages: Sequence[Any]) -> list[float | None]:
        """The counts of the messages recalled by identity (None for the others): each message noted before is
        written again and compared with what was noted; messages never noted are not written."""
        with self._lock:
            noted = list(map(self._by_id.get, map(id, messages)))
        if noted.count(None) == len(noted):
            return noted  # type: ignore[return-value]  # all None
        return self.writer.recalled(messages, noted)

    def lookup(self, messages: Sequence[Any]) -> tuple[list[float | None], Sequence[Key]]:
        """The counts of messages counted before, found by content (None for the others), and their keys for
        ``store``, which files the counts made for the others. Messages found are noted by identity."""
        keys = self.content_keys(messages)
        with self._lock:
            by_content = self._by_content
            found = list(map(by_content.get, keys))
            if found.count(None) < len(found):
                by_id = self._by_id
                for message, key, count in zip(messages, keys, found, strict=True):
                    if count is not None:
                        by_content.move_to_end(key)
                        by_id[id(message)] = key, count
                self._evict()
        return found, keys

    def store(self, messages: Sequence[Any], keys: Sequence[Key], counts: Sequence[float]) -> None:
        """Remember the counts made for ``messages`` (with their ``lookup`` keys), by content and by identity,
        dropping the oldest past ``max_entries``."""
        notes = list(zip(keys, counts, strict=True))
        with self._lock:
            self._by_content.update(notes)
            self._by_id.update(zip(map(id, messages), notes, strict=True))
            self._evict()

    def _evict(self) -> None:
        by_content, by_id = self._by_content, self._by_id
        while len(by_content) > self.max_entries:
            by_content.popitem(last=False)
        excess = len(by_id) - self.max_entries
        if excess > 0:  # the oldest noted, found in one pass over the dict's order
            for stale in list(islice(by_id, excess)):
                del by_id[stale]

    def clear(self) -> None:
        with self._lock:
            self._by_content.clear()
            self._by_id.clear()
            self.kind = None


class CountView:
    """The cache as one plan (or one ``PlanSession``) sees it: counts by message identity, each message keyed in the
    cache once. The messages counted are held, so no id is reused while the view lives; ``retain`` forgets the
    others. ``count_batch`` counts the messages the cache does not know (None: no cache, e.g. a counter that cannot
    be held weakly)."""

    def __init__(self, cache: CountCache | None, count_batch: Callable[[Sequence[BaseMessage]], list[int]]) -> None:
        self._cache = cache
        self._count_batch = count_batch
        self._counts: dict[int, int] = {}
        self._held: list[BaseMessage] = []

    def each(self, messages: Sequence[BaseMessage]) -> list[int]:
        """Per-message counts; unseen messages are looked up in the cache, the rest counted in one batch."""
        counts: list[Any] = list(map(self._counts.get, map(id, messages)))  # C loops: totals run on every step
        if None in counts:
            missing = [i for i, count in enumerate(counts) if count is None]
            fresh_messages = [messages[i] for i in missing]
            for i, message, count in zip(missing, fresh_messages, self._fresh(fresh_messages), strict=True):
                self._counts[id(message)] = counts[i] = count
            self._held += fresh_messages
        return counts

    def _fresh(self, messages: list[BaseMessage]) -> list[int]:
        if self._cache is None:
            return self._count_batch(messages)
        found: list[Any] = self._cache.recall(messages)
        missing = [i for i, count in enumerate(found) if count is None]
        if missing:
            looked, notes = self._cache.lookup([messages[i] for i in missing])
            unknown = [k for k, value in enumerate(looked) if value is None]
            if unknown:
                fresh = self._count_batch([messages[missing[k]] for k in unknown])
                for k, made in zip(unknown, fresh, strict=True):
                    looked[k] = made
                self._cache.store([messages[missing[k]] for k in unknown], [notes[k] for k in unknown], fresh)
            for i, value in zip(missing, looked, strict=True):
                found[i] = value
        return found

    def note(self, message: BaseMessage, count: int) -> None:
        """Take ``count`` as ``message``'s count from now on, here and in the cache (a count measured rather than
        tokenized: a provider's opaque compaction item, from the usage it reported)."""
        if id(message) not in self._counts:
            self._held.append(message)
        self._counts[id(message)] = count
        if self._cache is not None:
            self._cache.store([message], self._cache.content_keys([message]), [count])

    def known(self, messages: Sequence[BaseMessage]) -> list[int | None]:
        """The counts this view holds for ``messages`` (None for the others), tokenizing and keying nothing."""
        return list(map(self._counts.get, map(id, messages)))

    def retain(self, messages: Sequence[BaseMessage]) -> None:
        """Forget the counts of every message but ``messages`` (a session drops the copies its past plans made)."""
        counts = self._counts
        self._counts = {id(m): counts[id(m)] for m in messages if id(m) in counts}
        self._held = [m for m in messages if id(m) in self._counts]

    @property
    def held(self) -> int:
        """How many messages the view holds counts of."""
        return len(self._held)


_registry_lock = threading.Lock()
_by_owner: weakref.WeakKeyDictionary[Any, dict[Any, CountCache]] = weakref.WeakKeyDictionary()


def cache_for(counter: Any) -> CountCache | None:
    """The cache belonging to ``counter``, made on first use; None if the counter cannot be held weakly."""
    if inspect.ismethod(counter):
        owner, part = counter.__self__, counter.__func__
    elif isinstance(counter, CounterAdapter):  # wrapped anew by each trim_messages call: its counter's cache
        owner, part = counter.counter, None
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
            cache = caches[part] = CountCache()
        return cache
