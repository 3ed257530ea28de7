"""How the search measures candidate lists (per-message counts summed, or a list counter called), and how whatever was
passed as ``token_counter`` becomes such a ``Measure``.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from abc import ABC, abstractmethod
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from itertools import accumulate, groupby
from operator import attrgetter
from typing import Any

from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin.counters._base import TokenCounter, as_token_counter, checked_count, checked_counts, declared_overhead
from ctxwin.messages import BaseMessage
from ctxwin.trim._count_cache import CountCache, Kind, cache_for

FIRST_CHUNK = 32  # messages counted before the average size is known
PRIOR_CHARS_PER_TOKEN = 4.0  # sizing the first chunk by text, before any count
MIN_CHUNK = 8


def next_chunk(used: float, counted: int, budget: float, left: int) -> int:
    """How many more messages to count: about 90% of what the remaining budget holds at the average so far.

    Counting a little less than needed wastes nothing (the next chunk is small); counting past the cut is wasted
    tokenization, which is the whole cost of a cold trim.
    """
    if not counted or used <= 0:
        return min(FIRST_CHUNK, left)
    return min(max(MIN_CHUNK, int(0.9 * (budget - used) * counted / used)), left)


def text_sizes(messages: Sequence[BaseMessage]) -> list[int]:
    """Each message's text length in characters: a rough guide to its tokens, for sizing chunks (tool call
    arguments and non-text blocks are left out; the ratio of tokens to characters learned as counting goes absorbs
    them)."""
    contents = list(map(_content, messages))
    if set(map(type, contents)) <= {str}:  # C loops
        return list(map(len, contents))
    return [len(c) if isinstance(c, str) else sum(map(_block_size, c)) for c in contents]


_content = attrgetter("content")


def _block_size(block: Any) -> int:
    if isinstance(block, str):
        return len(block)
    text = block.get("text") if isinstance(block, dict) else None
    return len(text) if isinstance(text, str) else 0


def chunk_of(window: Sequence[BaseMessage], room: float, tokens: float, chars: int) -> tuple[int, int]:
    """How many messages of ``window`` (the next ones in walk order) to count next, and their text size: as many
    as about 90% of ``room`` (the tokens left in the budget) holds, by text size at the ratio of tokens to
    characters counted so far (``tokens`` in ``chars``). By size, not only by number: in an agent trace one tool
    result can hold as many tokens as a hundred chat messages, and counting past the cut is wasted tokenization
    (docs/architecture.md has the measurement). At least one message; before a ratio is known, English's four
    characters a token."""
    sizes = text_sizes(window)
    per_token = chars / tokens if tokens > 0 and chars > 0 else PRIOR_CHARS_PER_TOKEN
    size = min(max(1, bisect_right(list(accumulate(sizes)), 0.9 * room * per_token)), len(window))
    return size, sum(sizes[:size])


def _fitting(counts: Iterable[float], used: float, budget: float) -> list[float]:
    """The running totals from ``used`` over ``counts`` while they stay within ``budget``: the walk's loop (the same
    additions in the same order) in C, for a chunk whose counts are all known. Counts are never negative, so the
    totals only grow and the first over budget is found by bisection."""
    totals = list(accumulate(counts, initial=used))
    del totals[0]
    return totals[: bisect_right(totals, budget)]


Allowed = Callable[[int], bool]


def _describe(message: BaseMessage) -> str:
    return f"a {message.type!r} message"


class Measure(ABC):
    """The counting side of the search for one trim call."""

    @abstractmethod
    def cut_last(
        self,
        messages: Sequence[BaseMessage],
        lo: int,
        hi: int,
        head: Sequence[BaseMessage],
        limit: float,
        allowed: Allowed | None = None,
    ) -> int:
        """The smallest ``c`` in ``[lo, hi]`` with ``head + messages[c:hi]`` within ``limit`` (``hi`` if none).

        ``allowed`` (a boundary -> whether a list may start or end there) keeps a list counter from being shown a
        list that splits a tool pair; ``c`` itself may still be a boundary that is not allowed (the engine moves
        it), as long as the nearest allowed one on the kept side fits."""

    @abstractmethod
    def cut_first(self, messages: Sequence[BaseMessage], hi: int, limit: float, allowed: Allowed | None = None) -> int:
        """The largest ``c`` in ``[0, hi]`` with ``messages[:c]`` within ``limit`` (``allowed``: as for
        ``cut_last``)."""

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
        cache: CountCache | None = None,
        known: Callable[[Sequence[BaseMessage]], Sequence[Any]] | None = None,
        view: Callable[[BaseMessage], Any] | None = None,
    ) -> None:
        self._count_batch = count_batch
        self._counter = counter  # what errors name when a count is bad
        self.overhead = overhead
        self._cache = cache
        # The counts a caller holds itself (``trim_counted``: the planner's), None where it has none.
        self._known = known
        # The caller's object for each message (``make_measure``): the cache keys those, the caller's own objects.
        self._view = view
        # Cumulative counts over the walked region: _cum[i - _base] is the sum of counts between the walk's start
        # and position i (growing towards the walk direction).
        self._base = 0
        self._cum: list[float] = [0]
        self._sign = 1
        self._tokenizing = True  # whether the walk's last chunk had counts to make

    def _fresh(self, batch: Sequence[BaseMessage]) -> list[float]:
        return checked_counts(self._count_batch(batch), self._counter, batch, _describe)

    def counts(self, batch: Sequence[BaseMessage]) -> list[float]:
        """Per-message counts of ``batch``, from the cache where possible, the rest counted in one batch call."""
        recalled = self._recalled(batch)
        if recalled is None:
            return self._fresh(batch)
        found, keyed = recalled
        if None in found:
            unknown = [i for i, count in enumerate(found) if count is None]
            counted = self._count_run([batch[i] for i in unknown], [keyed[i] for i in unknown])
            for i, count in zip(unknown, counted, strict=True):
                found[i] = count
        return found

    def _recalled(self, batch: Sequence[BaseMessage]) -> tuple[list[Any], Sequence[Any]] | None:
        """The counts of ``batch`` known without counting (None for the others) and the objects the cache keys;
        None when there is neither a cache nor known counts."""
        cache = self._cache
        if cache is None and self._known is None:
            return None
        keyed = batch if self._view is None else list(map(self._view, batch))
        if cache is not None:
            return cache.recall(keyed), keyed
        assert self._known is not None
        return list(self._known(batch)), keyed

    def _runs(self, chunk: Sequence[BaseMessage], *, backwards: bool) -> Iterator[list[Any]]:
        """The counts of ``chunk`` in walk order, in runs: each run of unknown counts is counted in one call when the
        walk reaches it, so messages beyond the point where the caller stops are never tokenized."""
        recalled = self._recalled(chunk)
        # Mostly to count (not a re-trim's chunk holding the one new message): the next chunk is sized by text.
        self._tokenizing = recalled is None or 2 * recalled[0].count(None) > len(chunk)
        if recalled is None:
            counts = self._fresh(chunk)
            yield counts[::-1] if backwards else counts
            return
        found, keyed = recalled
        if backwards:
            found.reverse()
            keyed, chunk = keyed[::-1], chunk[::-1]
        missing = found.count(None)
        if not missing:  # all recalled (a re-trim)
            yield found
        elif missing == len(found):  # none recalled (a cold trim)
            yield self._count_run(chunk, keyed)
        else:
            start = 0
            for unknown, group in groupby(range(len(found)), lambda i: found[i] is None):
                end = start + len(list(group))
                if unknown:
                    yield self._count_run(chunk[start:end], keyed[start:end])
                else:
                    yield found[start:end]
                start = end

    def _count_run(self, run: Sequence[BaseMessage], keyed: Sequence[Any]) -> list[float]:
        """Counts of messages not recalled by identity: equal messages' counts from the cache, the rest counted in
        one batch and stored."""
        cache = self._cache
        if cache is None:
            return self._fresh(run)
        found, keys = cache.lookup(keyed)
        missing = found.count(None)
        if missing == len(found):
            fresh = self._fresh(run)
            cache.store(keyed, keys, fresh)
            return fresh
        if missing:
            unknown = [j for j, count in enumerate(found) if count is None]
            fresh = self._fresh([run[j] for j in unknown])
            for j, count in zip(unknown, fresh, strict=True):
                found[j] = count
            cache.store([keyed[j] for j in unknown], [keys[j] for j in unknown], fresh)
        return found  # type: ignore[return-value]

    def cut_last(
        self,
        messages: Sequence[BaseMessage],
        lo: int,
        hi: int,
        head: Sequence[BaseMessage],
        limit: float,
        allowed: Allowed | None = None,
    ) -> int:
        # ``allowed`` is for list counters: this measure counts each message on its own, never a list.
        budget = limit - self.overhead - sum(self.counts(head))
        self._base, self._cum, self._sign = hi, [0], -1
        return self._walk(messages, lo, hi, budget, backwards=True)

    def cut_first(self, messages: Sequence[BaseMessage], hi: int, limit: float, allowed: Allowed | None = None) -> int:
        self._base, self._cum, self._sign = 0, [0], 1
        return self._walk(messages, 0, hi, limit - self.overhead, backwards=False)

    def _walk(self, messages: Sequence[BaseMessage], lo: int, hi: int, budget: float, *, backwards: bool) -> int:
        """Where the walk from one end of ``messages[lo:hi]`` (from ``hi`` when ``backwards``) goes over
        ``budget``, noting the running totals in ``_cum``. Chunks are sized by number (``next_chunk``), and a chunk
        being tokenized is cut shorter where its text would fill the room (``chunk_of``); recalling past the cut
        costs little."""
        cum, used, j = self._cum, 0.0, hi if backwards else lo
        tokens, characters, self._tokenizing = 0.0, 0, True  # in the chunks sized by text
        while j > lo if backwards else j < hi:
            walked, left = (hi - j, j - lo) if backwards else (j - lo, hi - j)
            size, sized, chars = next_chunk(used, walked, budget, left), self._tokenizing, 0
            if sized:  # the guess by number, cut where its text would fill the room
                window = messages[j - size : j][::-1] if backwards else messages[j : j + size]
                size, chars = chunk_of(window, budget - used, tokens, characters)
            start = used
            for run in self._runs(messages[j - size : j] if backwards else messages[j : j + size], backwards=backwards):
                fitting = _fitting(run, used, budget)  # summed in C
                cum += fitting
                j += -len(fitting) if backwards else len(fitting)
                if len(fitting) < len(run):
                    return j
                used = fitting[-1]
            if sized:
                tokens, characters = tokens + used - start, characters + chars
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

    ``cut_last``/``cut_first`` try the whole list first (one call when it fits), then gallop from the kept end and
    binary-search the bracket, so the number of calls is logarithmic and their sizes stay near the kept size. Counts
    are taken as growing with the list; the engine verifies the final list.
    """

    def __init__(self, count_list: Callable[[list[BaseMessage]], Any], *, counter: Any) -> None:
        self._count_list = count_list
        self._counter = counter

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
        value: float = checked_count(self._count_list(candidate), self._counter, f"a list of {len(candidate)} messages")
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
        self,
        messages: Sequence[BaseMessage],
        lo: int,
        hi: int,
        head: Sequence[BaseMessage],
        limit: float,
        allowed: Allowed | None = None,
    ) -> int:
        if head and self.total(messages, head, hi, hi) > limit:
            return hi
        fits = _snapped(
            lambda k: self.total(messages, head, hi - k, hi) <= limit, allowed and (lambda k: allowed(hi - k))
        )
        return hi - self._largest(hi - lo, fits)

    def cut_first(self, messages: Sequence[BaseMessage], hi: int, limit: float, allowed: Allowed | None = None) -> int:
        return self._largest(hi, _snapped(lambda k: self.total(messages, (), 0, k) <= limit, allowed))


def _snapped(fits: Callable[[int], bool], allowed: Callable[[int], bool] | None) -> Callable[[int], bool]:
    """``fits`` asked of the largest allowed ``k`` at or below the one given (0, the empty list, always fits), so a
    list counter only ever sees lists that split no tool pair (a provider's count endpoint rejects an orphan tool
    result). Still monotone; each distinct list is counted once."""
    if allowed is None:
        return fits
    answers: dict[int, bool] = {0: True}

    def snapped(k: int) -> bool:
        while k > 0 and not allowed(k):
            k -= 1
        if k not in answers:
            answers[k] = fits(k)
        return answers[k]

    return snapped


# How whatever was passed as ``token_counter`` becomes a Measure. Accepted: a TokenCounter (one that declares itself
# additive, with its request overhead, has its per-message counts cached; any other is used as a list counter); an
# object with ``get_num_tokens_from_messages`` (a LangChain chat model); ``len`` (counts messages, as in LangChain); a
# callable over one message; a callable over a list of messages. Spec strings are resolved by the public face
# (``ctxwin.trim``), never here.
#
# A callable is per-message when its first parameter is annotated with a message class (ctxwin's or LangChain's
# ``BaseMessage``, a subclass, or a union of them), also when the annotation is a string under
# ``from __future__ import annotations``. Unannotated callables (lambdas) are probed once with the conversation's
# first message: called with a one-message list first (LangChain's reading), then, if that fails, with the message.

_LIST_ORIGINS = re.compile(r"^\s*(typing\.|collections\.abc\.|t\.)?(list|List|Sequence|Iterable|Collection|tuple)\b")
_MESSAGE_NAMES = re.compile(r"^\s*[\w.]*Message(Chunk)?\s*(\|\s*[\w.]*Message(Chunk)?\s*)*$")


def _is_message_class(obj: Any) -> bool:
    if isinstance(obj, type):
        return any(c.__name__ == "BaseMessage" for c in obj.__mro__)
    if typing.get_origin(obj) in (typing.Union, types.UnionType):
        return all(_is_message_class(arg) for arg in typing.get_args(obj) if arg is not type(None))
    return False


def kind_from_annotation(annotation: Any) -> Kind | None:
    """'message', 'list', or None when the annotation does not tell."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return None
    if isinstance(annotation, str):
        if _LIST_ORIGINS.match(annotation):
            return "list"
        return "message" if _MESSAGE_NAMES.match(annotation) else None
    if _is_message_class(annotation):
        return "message"
    origin = typing.get_origin(annotation) or annotation
    if isinstance(origin, type) and origin is not str and hasattr(origin, "__iter__"):
        return "list"
    return None


def _first_parameter(fn: Callable[..., Any]) -> inspect.Parameter | None:
    for eval_str in (True, False):  # unresolvable string annotations: fall back to the strings
        try:
            parameters = list(inspect.signature(fn, eval_str=eval_str).parameters.values())
        except (NameError, SyntaxError, TypeError, AttributeError):
            continue
        except ValueError:  # builtins without a signature
            return None
        if not parameters:
            raise InvalidTypeError("token_counter must accept one argument: a message or a list of messages")
        return parameters[0]
    return None


def _probe(fn: Callable[..., Any], sample: BaseMessage) -> Kind:
    try:
        checked_count(fn([sample]), fn, "a one-message list")
        return "list"
    except Exception as list_error:
        try:
            checked_count(fn(sample), fn, "a message")
        except Exception:
            raise list_error from None
        return "message"


def callable_kind(fn: Callable[..., Any], sample: BaseMessage) -> Kind:
    """Whether ``fn`` counts one message or a list; kept in the callable's count cache, so a probe runs once."""
    cache = cache_for(fn)
    if cache is not None and cache.kind is not None:
        return cache.kind
    parameter = _first_parameter(fn)
    kind = kind_from_annotation(parameter.annotation) if parameter is not None else None
    if kind is None:
        kind = _probe(fn, sample)
    if cache is not None:  # callables that cannot be held weakly are probed on every call
        cache.kind = kind
    return kind


def _counter_measure(counter: TokenCounter) -> Measure:
    overhead = declared_overhead(counter)  # the counter says whether it is additive; nothing is probed
    if overhead is None:
        return ListMeasure(counter.count_messages, counter=counter)
    return AdditiveMeasure(message_batch(counter), counter=counter, overhead=overhead, cache=cache_for(counter))


def message_batch(counter: TokenCounter) -> Callable[[Sequence[BaseMessage]], list[int]]:
    """The counter's ``count_message_batch`` (tokenizing many messages at once), the counts checked."""
    count = counter.count_message_batch
    return lambda messages: checked_counts(count(messages), counter, messages, _describe)


def _count_one_by_one(fn: Callable[[BaseMessage], Any]) -> Callable[[Sequence[BaseMessage]], list[Any]]:
    def count_batch(messages: Sequence[BaseMessage]) -> list[Any]:
        return list(map(fn, messages))  # no Python frame per message

    return count_batch


def _count_messages(messages: Sequence[BaseMessage]) -> list[int]:
    return [1] * len(messages)


def _with_bound_tools(model: Any, count_list: Callable[..., Any]) -> Callable[..., Any]:
    """A chat model bound with ``bind_tools()`` (a LangChain ``RunnableBinding``, its ``kwargs`` holding the tools)
    counts the request with its tools, as LangChain's ``trim_messages`` does: they are passed on when the counting
    method takes ``tools``."""
    bound = getattr(model, "kwargs", None)
    tools = bound.get("tools") if isinstance(bound, dict) else None
    if tools is None:
        return count_list
    try:
        takes_tools = "tools" in inspect.signature(count_list).parameters
    except (TypeError, ValueError):  # no signature to read: called as it is
        return count_list
    return partial(count_list, tools=tools) if takes_tools else count_list


def make_measure(
    token_counter: Any, sample: BaseMessage, view: Callable[[BaseMessage], Any] | None = None
) -> Measure:
    """The Measure for ``token_counter`` (anything but a spec string); ``sample`` (the first message) is used only
    to probe a bare callable. ``view`` gives a caller's callable or chat model each message in the caller's own form
    (``ctxwin.messages._forms``), and the count cache keys those objects, so re-trimming the caller's growing list
    recalls every message counted before by identity."""
    counter = as_token_counter(token_counter)
    if counter is not None:
        return _counter_measure(counter)
    if token_counter is len:
        return AdditiveMeasure(_count_messages, counter=len)
    count_list = getattr(token_counter, "get_num_tokens_from_messages", None)
    if callable(count_list):
        count_list = _with_bound_tools(token_counter, count_list)
    elif count_list is None and callable(token_counter):
        if callable_kind(token_counter, sample if view is None else view(sample)) == "message":
            count_one = token_counter if view is None else lambda m: token_counter(view(m))
            return AdditiveMeasure(
                _count_one_by_one(count_one), counter=token_counter, cache=cache_for(token_counter), view=view
            )
        count_list = token_counter
    if callable(count_list):
        if view is not None:
            count_given = count_list
            count_list = lambda ms: count_given([view(m) for m in ms])  # noqa: E731
        return ListMeasure(count_list, counter=token_counter)
    raise InvalidInputError(
        "'token_counter' expected to be a model that implements 'get_num_tokens_from_messages()' or a function. "
        f"Received object of type {type(token_counter)}."
    )
