"""``fit_many``: fit a stream of conversations on all cores, results in input order, one bad item never fatal."""

from __future__ import annotations

import ast
import functools
import itertools
import math
import pickle
import sys
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sized
from typing import Any

from ctxwin._cpus import available_cpus
from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin.batch._chunks import IN_FLIGHT_PER_WORKER, chunked, fit_in_pool
from ctxwin.batch._item import FitResult, Fitter
from ctxwin.batch._line_blocks import BLOCK_BYTES, LineBlock, file_lines
from ctxwin.batch._pool import WorkerPool
from ctxwin.batch._progress import Progress

# Conversations per chunk sent to a worker; benchmarks/README.md ("Chunk size") has the measurement behind it.
DEFAULT_CHUNKSIZE = 16
# Fewer than this many chunks per worker are fitted in the calling process: the pool would not pay for itself.
SMALL_INPUT_CHUNKS = 2


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

    Results come in input order and carry the item's index, the fitted ``messages`` (in the ``output`` form asked
    for), the plan's ``summary()``, or the text of its error; an error never stops the run. Stopping early
    (``close()``, or dropping the generator) stops the worker pool. ``conversations`` is read lazily, a few chunks
    ahead of the results taken, so it can be a generator over millions of items. Each item is anything ``fit``
    accepts, or ``{"messages": [...], "tools": [...]}`` to send that conversation with its own tools.

    ``workers``: processes to use, ``None`` for every CPU this process may use; ``1`` fits in this process, no
    pool, and so does an input shorter than ``SMALL_INPUT_CHUNKS`` chunks per worker (the results are the same). A
    script that starts the pool from its top level without ``if __name__ == "__main__":`` gets a RuntimeError
    saying so, before any process starts (each worker would run the script again). An item that kills its worker
    process gets that as its error; the others are fitted in a new pool.

    With a pool, each worker builds one planner (counter, tokenizer, strategies) from ``fit_kwargs`` and keeps it;
    this process builds none. Per item it takes the compact result (messages and summary) back from a worker;
    decoding, converting, planning and the summary's figures are the worker's. A ``list`` or ``tuple`` of
    conversations is taken as it is at the call: on Linux, when this process runs a single thread, the workers are
    forked from it and read the items from the memory they inherit, so this process never writes an item down.
    An open file (text in UTF-8 or ASCII, or binary) given with a ``decode``, a pool's worth of it, is not
    iterated here: this process cuts it into blocks at newlines, reading only the bytes around each cut, and the
    workers read (when forked from it), split, decode and fit them (``line_blocks``), with the results iterating
    the file would give (a line that is not valid in the file's encoding is that item's error).
    Otherwise (any other iterable, other threads running, another platform) it pickles each item for a worker, a
    cost per byte of the item: docs/batch.md has the figures.
    ``fit_kwargs`` are pickled once per worker: a ``summarizer`` or ``Strategy`` must be importable (a module-level
    function, not a lambda).
    ``progress``: a bar on stderr when it is a terminal (``None`` or ``True``), none (``False``), or a
    ``ctxwin.batch._progress.Progress`` to step (the caller closes it). ``chunksize``: conversations per transfer to a
    worker (default: ``DEFAULT_CHUNKSIZE``, smaller when a sized input would leave workers idle). ``decode``: a
    function applied to each item in the worker before fitting, so that parsing runs on every core too (e.g.
    ``json.loads`` over the lines of a JSONL file); what it raises is that item's error.

    Arguments are checked here, before any work: a bad model, strategy or budget raises at once, as ``fit`` does
    (with a pool, the first worker to build its planner reports it).
    """
    if isinstance(conversations, (str, bytes, Mapping)) or not isinstance(conversations, Iterable):
        raise InvalidTypeError(
            f"conversations must be an iterable of conversations (e.g. a list of message lists), "
            f"got {type(conversations).__name__}"
        )
    count = _worker_count(workers)
    if chunksize is not None and (isinstance(chunksize, bool) or not isinstance(chunksize, int) or chunksize < 1):
        raise InvalidInputError(f"chunksize must be a positive int, got {chunksize!r}")
    # A list is taken as it is now: forked workers read it from their copy of this process's memory.
    snapshot = tuple(conversations) if isinstance(conversations, (list, tuple)) else None
    total = len(conversations) if isinstance(conversations, Sized) else None
    # An open file of lines to decode, long enough for a pool: the workers read, split and decode its lines.
    lines = file_lines(conversations) if count > 1 and decode is not None else None
    if lines is not None and lines.remaining < SMALL_INPUT_CHUNKS * count * BLOCK_BYTES:
        lines = None
    items: Iterator[tuple[int, Any]] = enumerate(conversations if snapshot is None else snapshot)
    if lines is not None:
        _check_picklable({**fit_kwargs, "decode": decode})
        check_main_guard()
    elif count > 1:
        _check_picklable({**fit_kwargs, "decode": decode})
        # A pool costs about a second to start: a short input is fitted here, with the same results.
        head = list(itertools.islice(items, SMALL_INPUT_CHUNKS * count * (chunksize or DEFAULT_CHUNKSIZE)))
        if len(head) < SMALL_INPUT_CHUNKS * count * (chunksize or DEFAULT_CHUNKSIZE):
            count = 1
        else:
            check_main_guard()
        items = itertools.chain(head, items)
    if count == 1:
        fitter = Fitter(fit_kwargs, decode)  # builds the planner now: configuration errors surface at the call
        results: Generator[FitResult, None, None] = (fitter.fit(index, conversation) for index, conversation in items)
    else:
        build = functools.partial(Fitter, dict(fit_kwargs), decode)
        pool = WorkerPool(count, build, snapshot if lines is None else lines)  # raises a bad argument
        local = functools.cache(functools.partial(Fitter, fit_kwargs, decode))  # only for items that cannot travel
        chunks: Iterable[list[tuple[int, Any]] | LineBlock] = (
            lines.blocks(loaded=not pool.shares)
            if lines is not None
            else chunked(items, chunksize or _default_chunksize(total, count))
        )
        results = fit_in_pool(chunks, pool, local=local)
    if progress is False:
        return results
    bar = progress if isinstance(progress, Progress) else Progress("fitted", total)
    return _stepping(results, bar, close=bar is not progress)


def _worker_count(workers: int | None) -> int:
    if workers is None:
        return available_cpus()
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidInputError(f"workers must be a positive int, or None for all CPUs, got {workers!r}")
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
            raise InvalidTypeError(
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


def check_main_guard() -> None:
    """Raise when the pool is started by a script's top-level code outside ``if __name__ == "__main__":``.

    Workers start with ``forkserver`` or ``spawn``, which import the main script again in each worker: unguarded,
    that import calls ``fit_many`` again and the worker dies while bootstrapping, which the pool only sees as a
    dead worker. The call's line in the script is checked instead, before any process starts.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_globals is vars(main) and frame.f_code.co_name == "<module>"):
        frame = frame.f_back  # type: ignore[assignment]
    spec = getattr(main, "__spec__", None)
    if path is None or frame is None or (spec is not None and spec.name.endswith("__main__")):
        return  # an interactive session, python -c, a package's __main__ (not imported again), a call elsewhere
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return
    if not any(_guards(node, frame.f_lineno) for node in tree.body):
        raise RuntimeError(
            f"fit_many starts worker processes, and each one imports {path} again; its top-level code (line "
            f"{frame.f_lineno}) would call fit_many again in every worker. Put that code under "
            '`if __name__ == "__main__":`, or pass workers=1'
        )


def _guards(node: ast.stmt, line: int) -> bool:
    """Whether ``node`` is an ``if`` testing ``__name__`` against ``"__main__"`` (in any form) that holds ``line``.

    Lenient on purpose: a guard written some other way is trusted rather than refused.
    """
    if not isinstance(node, ast.If) or not node.lineno <= line <= (node.end_lineno or line):
        return False
    parts = list(ast.walk(node.test))
    return any(isinstance(p, ast.Name) and p.id == "__name__" for p in parts) and any(
        isinstance(p, ast.Constant) and p.value == "__main__" for p in parts
    )
