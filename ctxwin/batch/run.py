"""``fit_many``: fit a stream of conversations on all cores, results in input order, one bad item never fatal."""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable, Generator, Iterable, Mapping, Sized
from typing import Any

from ctxwin.batch.item import FitResult, Fitter
from ctxwin.batch.pool import IN_FLIGHT_PER_WORKER, fit_in_pool
from ctxwin.cpus import available_cpus
from ctxwin.progress import Progress

# Conversations per chunk sent to a worker; see benchmarks/README.batch.md for the measurement behind it.
DEFAULT_CHUNKSIZE = 16


def fit_many(
    conversations: Iterable[Any],
    *,
    workers: int | None = None,
    progress: Progress | bool | None = None,
    chunksize: int | None = None,
    decode: Callable[[Any], Any] | None = None,
    **fit_kwargs: Any,
) -> Generator[FitResult, None, None]:
    """Fit each conversation as ``ctxwin.fit(conversation, **fit_kwargs)`` would; yield a ``FitResult`` per item.

    Results come in input order and carry the item's index, its ``Plan`` (``plan.messages``, ``plan.summary()``)
    or the text of its error; an error never stops the run. Stopping early (``close()``, or dropping the generator)
    shuts the worker pool down. ``conversations`` is read lazily, a few chunks ahead
    of the results taken, so it can be a generator over millions of items. Each item is anything ``fit`` accepts,
    or ``{"messages": [...], "tools": [...]}`` to send that conversation with its own tools.

    ``workers``: processes to use, ``None`` for every CPU this process may use; ``1`` fits in this process, no
    pool. Each worker builds one planner (counter, tokenizer, strategies) from ``fit_kwargs`` and keeps it; the
    conversations are converted to messages in the workers. ``fit_kwargs`` are therefore pickled once per worker:
    a ``summarizer`` or ``Strategy`` must be importable (a module-level function, not a lambda).
    ``progress``: a bar on stderr when it is a terminal (``None`` or ``True``), none (``False``), or a
    ``ctxwin.progress.Progress`` to step (the caller closes it). ``chunksize``: conversations per transfer to a
    worker (default: ``DEFAULT_CHUNKSIZE``, smaller when a sized input would leave workers idle). ``decode``: a
    function applied to each item in the worker before fitting, so that parsing runs on every core too (e.g.
    ``json.loads`` over the lines of a JSONL file); what it raises is that item's error.

    Arguments are checked here, before any work: a bad model, strategy or budget raises at once, as ``fit`` does.
    """
    if isinstance(conversations, (str, bytes, Mapping)) or not isinstance(conversations, Iterable):
        raise TypeError(
            f"conversations must be an iterable of conversations (e.g. a list of message lists), "
            f"got {type(conversations).__name__}"
        )
    count = _worker_count(workers)
    if chunksize is not None and (isinstance(chunksize, bool) or not isinstance(chunksize, int) or chunksize < 1):
        raise ValueError(f"chunksize must be a positive int, got {chunksize!r}")
    fitter = Fitter(fit_kwargs, decode)  # builds the planner here: configuration errors surface in the caller, once
    total = len(conversations) if isinstance(conversations, Sized) else None
    items = enumerate(conversations)
    if count == 1:
        results: Generator[FitResult, None, None] = (fitter.fit(index, conversation) for index, conversation in items)
    else:
        _check_picklable({**fit_kwargs, "decode": decode})
        size = chunksize or _default_chunksize(total, count)
        results = fit_in_pool(items, fit_kwargs, workers=count, chunksize=size, local=fitter)
    if progress is False:
        return results
    bar = progress if isinstance(progress, Progress) else Progress("fitted", total)
    return _stepping(results, bar, close=bar is not progress)


def _worker_count(workers: int | None) -> int:
    if workers is None:
        return available_cpus()
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int, or None for all CPUs, got {workers!r}")
    return workers


def _default_chunksize(total: int | None, workers: int) -> int:
    if total is None:
        return DEFAULT_CHUNKSIZE
    # Enough chunks that every worker stays busy to the end of a short input.
    return max(1, min(DEFAULT_CHUNKSIZE, math.ceil(total / (workers * IN_FLIGHT_PER_WORKER * 2))))


def _check_picklable(fit_kwargs: Mapping[str, Any]) -> None:
    for name, value in fit_kwargs.items():
        try:
            pickle.dumps(value)
        except Exception as exc:
            raise TypeError(
                f"fit_many sends {name}= to each worker process, and it cannot be pickled ({exc}); use a function "
                "or class defined at module level (not a lambda or a nested function), or workers=1"
            ) from None


def _stepping(
    results: Generator[FitResult, None, None], bar: Progress, *, close: bool
) -> Generator[FitResult, None, None]:
    try:
        for result in results:
            bar.step()
            yield result
    finally:  # also when the caller stops early: the pool shuts down now, not when collected
        results.close()
        if close:
            bar.close()
