"""How the search measures candidate lists: from per-message counts (additive counters) or by calling a list counter.

Both measures answer the same three questions, always about lists in their real conversation order:
``cut_last`` (where the longest fitting suffix starts), ``cut_first`` (where the longest fitting prefix ends) and
``total`` (the exact count of one candidate list). An empty list counts 0 and is never shown to the counter.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

from ctxwin.counters.base import checked_count, checked_counts
from ctxwin.engine.message_key import message_key
from ctxwin.engine.token_cache import TokenCache
from ctxwin.messages import BaseMessage

FIRST_CHUNK = 32  # messages counted before the average size is known
MIN_CHUNK = 8


def next_chunk(used: float, counted: int, budget: float, left: int) -> int:
    """How many more messages to count: about 90% of what the remaining budget holds at the average so far.

    Counting a little less than needed wastes nothing (the next chunk is small); counting past the cut is wasted
    tokenization, which is the whole cost of a cold trim.
    """
    if not counted or used <= 0:
        return min(FIRST_CHUNK, left)
    return min(max(MIN_CHUNK, int(0.9 * (budget - used) * counted / used)), left)


def _describe(message: BaseMessage) -> str:
    return f"a {message.type!r} message"


class Measure(ABC):
    """The counting side of the search for one trim call."""

    @abstractmethod
    def cut_last(
        self, messages: Sequence[BaseMessage], lo: int, hi: int, head: Sequence[BaseMessage], limit: float
    ) -> int:
        """The smallest ``c`` in ``[lo, hi]`` with ``head + messages[c:hi]`` within ``limit`` (``hi`` if none)."""

    @abstractmethod
    def cut_first(self, messages: Sequence[BaseMessage], hi: int, limit: float) -> int:
        """The largest ``c`` in ``[0, hi]`` with ``messages[:c]`` within ``limit``."""

    @abstractmethod
    def total(
        self,
        messages: Sequence[BaseMessage],
        head: Sequence[BaseMessage],
        start: int,
        end: int,
        extra: BaseMessage | None = None,
        extra_first: bool = True,
    ) -> float:
        """The count of ``head + [extra] + messages[start:end]`` (``extra`` last when not ``extra_first``)."""


class AdditiveMeasure(Measure):
    """For counters whose list count is the sum of per-message counts plus a fixed non-empty-list overhead.

    Each message is counted at most once per call, looked up in the counter's cache first, and counting walks from
    the kept end in chunks sized to stop just past the cut, so dropped messages are mostly never tokenized.
    """

    def __init__(
        self,
        count_batch: Callable[[Sequence[BaseMessage]], Sequence[Any]],
        *,
        counter: Any,
        overhead: float = 0,
        cache: TokenCache | None = None,
        known: Callable[[Sequence[BaseMessage]], Sequence[Any]] | None = None,
    ) -> None:
        self._count_batch = count_batch
        self._counter = counter  # what errors name when a count is bad
        self.overhead = overhead
        self._cache = cache
        # For a counter without a cache of ours that holds counts itself (the planner's meter): those counts,
        # None where it has none.
        self._known = known
        # Cumulative counts over the walked region: _cum[i - _base] is the sum of counts between the walk's start
        # and position i (growing towards the walk direction).
        self._base = 0
        self._cum: list[float] = [0]
        self._sign = 1

    def _fresh(self, batch: Sequence[BaseMessage]) -> list[float]:
        return checked_counts(self._count_batch(batch), self._counter, batch, _describe)

    def counts(self, batch: Sequence[BaseMessage]) -> list[float]:
        """Per-message counts of ``batch``, from the cache where possible, the rest counted in one batch call."""
        if self._cache is None and self._known is None:
            return self._fresh(batch)
        return list(self._walk(batch, backwards=False))

    def _lookup(self, batch: Sequence[BaseMessage]) -> tuple[list[Any], dict[int, Hashable]]:
        """The counts already known for ``batch`` (None where not), and the content keys of the others, under
        which their counts are stored once made."""
        cache = self._cache
        if cache is None:
            assert self._known is not None
            return list(self._known(batch)), {}
        found: list[Any] = cache.recent.recall(batch)
        unseen = [i for i, count in enumerate(found) if count is None]
        key_of = {i: message_key(batch[i]) for i in unseen}
        if unseen:
            for i, count in zip(unseen, cache.get_many(list(key_of.values())), strict=True):
                found[i] = count
            known = [i for i in unseen if found[i] is not None]
            if known:  # found by content key: remember them by identity for the next call
                cache.recent.note([batch[i] for i in known], [found[i] for i in known])
        return found, key_of

    def _walk(self, batch: Sequence[BaseMessage], *, backwards: bool) -> Iterator[float]:
        """Counts of ``batch`` in walk order, produced lazily: each run of unknown counts is counted in one call
        when the walk reaches it, so messages beyond the point where the caller stops are never tokenized."""
        if self._cache is None and self._known is None:
            counts = self._fresh(batch)
            yield from reversed(counts) if backwards else counts
            return
        found, key_of = self._lookup(batch)
        size = len(batch)
        for i in range(size - 1, -1, -1) if backwards else range(size):
            if found[i] is None:
                run_start, run_end = i, i + 1
                if backwards:
                    while run_start > 0 and found[run_start - 1] is None:
                        run_start -= 1
                else:
                    while run_end < size and found[run_end] is None:
                        run_end += 1
                fresh = self._fresh(batch[run_start:run_end])
                found[run_start:run_end] = fresh
                if self._cache is not None:
                    self._cache.put_many([(key_of[j], found[j]) for j in range(run_start, run_end)])
            yield found[i]

    def cut_last(
        self, messages: Sequence[BaseMessage], lo: int, hi: int, head: Sequence[BaseMessage], limit: float
    ) -> int:
        budget = limit - self.overhead - sum(self.counts(head))
        self._base, self._cum, self._sign = hi, [0], -1
        cum, used, j = self._cum, 0.0, hi
        while j > lo:
            size = next_chunk(used, hi - j, budget, j - lo)
            for count in self._walk(messages[j - size : j], backwards=True):
                if used + count > budget:
                    return j
                used += count
                cum.append(used)
                j -= 1
        return j

    def cut_first(self, messages: Sequence[BaseMessage], hi: int, limit: float) -> int:
        budget = limit - self.overhead
        self._base, self._cum, self._sign = 0, [0], 1
        cum, used, j = self._cum, 0.0, 0
        while j < hi:
            size = next_chunk(used, j, budget, hi - j)
            for count in self._walk(messages[j : j + size], backwards=False):
                if used + count > budget:
                    return j
                used += count
                cum.append(used)
                j += 1
        return j

    def _range_sum(self, messages: Sequence[BaseMessage], start: int, end: int) -> float:
        if start >= end:
            return 0
        cum = self._cum
        if self._sign < 0:  # walked back from _base: cum[i] covers messages[_base - i : _base]
            far, near = self._base - start, self._base - end
        else:  # walked forward from 0: cum[i] covers messages[:i]
            far, near = end, start
        if near >= 0 and far < len(cum):
            return cum[far] - cum[near]
        return sum(self.counts(messages[start:end]))

    def total(
        self,
        messages: Sequence[BaseMessage],
        head: Sequence[BaseMessage],
        start: int,
        end: int,
        extra: BaseMessage | None = None,
        extra_first: bool = True,
    ) -> float:
        if not head and extra is None and start >= end:
            return 0
        extras = [*head, extra] if extra is not None else list(head)
        return self.overhead + sum(self.counts(extras)) + self._range_sum(messages, start, end)


class ListMeasure(Measure):
    """For counters that only count whole lists (models, order-sensitive or non-additive counters).

    Calls are memoised per candidate; ``cut_last``/``cut_first`` try the whole list first (one call when it fits),
    then gallop from the kept end and binary-search the bracket, so the number of calls is logarithmic and their
    sizes stay near the kept size. Counts are taken as growing with the list; the engine verifies the final list.
    """

    def __init__(self, count_list: Callable[[list[BaseMessage]], Any], *, counter: Any) -> None:
        self._count_list = count_list
        self._counter = counter
        self._memo: dict[tuple[int, int, int, int, bool], tuple[float, BaseMessage | None]] = {}

    def total(
        self,
        messages: Sequence[BaseMessage],
        head: Sequence[BaseMessage],
        start: int,
        end: int,
        extra: BaseMessage | None = None,
        extra_first: bool = True,
    ) -> float:
        body = list(messages[start:end])
        if extra is not None:
            body = [extra, *body] if extra_first else [*body, extra]
        candidate = [*head, *body]
        if not candidate:
            return 0
        key = (len(head), start, max(start, end), id(extra), extra_first)
        hit = self._memo.get(key)
        if hit is not None and hit[1] is extra:
            return hit[0]
        value: float = checked_count(self._count_list(candidate), self._counter, f"a list of {len(candidate)} messages")
        self._memo[key] = (value, extra)  # the message is held so its id cannot be reused within the call
        return value

    def _largest(self, upper: int, fits: Callable[[int], bool]) -> int:
        """The largest ``k`` in ``0..upper`` with ``fits(k)`` (``fits(0)`` holds): whole, then gallop and bisect."""
        if upper == 0 or fits(upper):
            return upper
        good, probe = 0, 1
        while probe < upper and fits(probe):
            good, probe = probe, probe * 2
        bad = min(probe, upper)
        while bad - good > 1:
            mid = (good + bad) // 2
            if fits(mid):
                good = mid
            else:
                bad = mid
        return good

    def cut_last(
        self, messages: Sequence[BaseMessage], lo: int, hi: int, head: Sequence[BaseMessage], limit: float
    ) -> int:
        if head and self.total(messages, head, hi, hi) > limit:
            return hi
        return hi - self._largest(hi - lo, lambda k: self.total(messages, head, hi - k, hi) <= limit)

    def cut_first(self, messages: Sequence[BaseMessage], hi: int, limit: float) -> int:
        return self._largest(hi, lambda k: self.total(messages, (), 0, k) <= limit)
