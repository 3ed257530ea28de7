"""The tiktoken counter: exact OpenAI token counts with OpenAI's published chat and tool framing."""

from __future__ import annotations

import bisect
import itertools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import tiktoken

from ctxwin._cpus import available_cpus
from ctxwin._idle_threads import register
from ctxwin.counters._base import BaseTokenCounter
from ctxwin.counters._families.openai_tools import (
    GPT4_TOOL_OVERHEADS,
    GPT4O_TOOL_OVERHEADS,
    ToolOverheads,
    count_tool_definitions,
)
from ctxwin.counters._families.tiktoken_encodings import encoding_origin, load_encoding
from ctxwin.counters._image_tokens import OPENAI_PRICING, ImagePricing, image_tokens

__all__ = ["TiktokenCounter", "encoding_origin", "load_encoding"]

# Below this many characters in a batch the hand-off to another thread costs more than the encoding it moves.
PARALLEL_MIN_CHARS = 16_384

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_THREAD_PREFIX = "ctxwin-tiktoken"


def _shared_pool() -> tuple[ThreadPoolExecutor, int]:
    """One process-wide pool, sized to the CPUs this process may use; created on first need."""
    global _pool
    workers = available_cpus()
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(1, workers - 1), thread_name_prefix=_THREAD_PREFIX)
    return _pool, workers


def _stop_pool() -> None:
    """End the pool's threads (``fit_many`` forks its workers from a single-threaded process); the next large batch
    starts a new pool."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True)


register(_THREAD_PREFIX, _stop_pool)


def _split_by_size(texts: Sequence[str], parts: int) -> list[Sequence[str]]:
    """Consecutive slices of ``texts`` with about the same number of characters each (found by bisection of the
    running sizes, in C loops)."""
    ends = list(itertools.accumulate(map(len, texts)))
    total = ends[-1] if ends else 0
    bounds = [0, *(bisect.bisect_left(ends, total * k / parts) + 1 for k in range(1, parts)), len(texts)]
    return [texts[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def _overheads_for(encoding_name: str) -> ToolOverheads:
    # The cookbook measured gpt-4o/gpt-4o-mini (o200k) and gpt-4/gpt-3.5-turbo (cl100k); other encodings take the
    # values of the older cl100k family, the closest documented format.
    return GPT4O_TOOL_OVERHEADS if encoding_name.startswith("o200k") else GPT4_TOOL_OVERHEADS


class TiktokenCounter(BaseTokenCounter):
    """Counts with a tiktoken encoding and OpenAI's chat framing (3 per message, 1 per name, 3 reply priming).

    ``tool_overheads`` defaults to the cookbook's values for the encoding's model family; images are charged by
    ``image_pricing`` (gpt-4o's tiles unless given), the most an image can cost when its size cannot be known.
    ``encoding`` is an already built encoding named ``encoding_name`` (another family's, from another source).
    """

    def __init__(self, encoding_name: str = "o200k_base", *, tool_overheads: ToolOverheads | None = None,
                 image_pricing: ImagePricing = OPENAI_PRICING, encoding: tiktoken.Encoding | None = None) -> None:
        self.encoding = encoding or load_encoding(encoding_name)
        self.encoding_name = encoding_name
        self.image_pricing = image_pricing
        self.name = f"tiktoken:{encoding_name}" + (
            "" if image_pricing is OPENAI_PRICING else f",images={image_pricing.name}")
        self.tool_overheads = tool_overheads or _overheads_for(encoding_name)
        self._encode: Callable[[str], list[int]] = self.encoding.encode_ordinary
        # The Rust encoder itself: tiktoken's encode_ordinary is a Python frame around it that only repairs
        # surrogates, which a hot loop of short texts would pay on top of count_text's own frame. Text it refuses
        # (UnicodeEncodeError: surrogates) goes through encode_ordinary, which repairs it. A subclass that encodes
        # otherwise sets both.
        core = getattr(self.encoding, "_core_bpe", None)
        self._encode_core: Callable[[str], list[int]] = getattr(core, "encode_ordinary", self._encode)

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.name.removeprefix('tiktoken:')!r})"

    def count_text(self, text: str) -> int:
        try:
            return len(self._encode_core(text))
        except UnicodeEncodeError:
            return len(self._encode(text))

    def _count_serial(self, texts: Sequence[str]) -> list[int]:
        try:
            return list(map(len, map(self._encode_core, texts)))
        except UnicodeEncodeError:
            return list(map(self.count_text, texts))

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        """Counts of ``texts`` in order; large batches are split by size across threads (same counts)."""
        if len(texts) < 2 or sum(map(len, texts)) < PARALLEL_MIN_CHARS:
            return self._count_serial(texts)
        pool, workers = _shared_pool()
        if workers < 2:
            return self._count_serial(texts)
        first, *rest = _split_by_size(texts, workers)
        futures = [pool.submit(self._count_serial, part) for part in rest]
        counts = self._count_serial(first)  # the calling thread takes a share instead of waiting idle
        for future in futures:
            counts.extend(future.result())
        return counts

    def count_block(self, block: dict[str, Any]) -> int:
        return image_tokens(block, upper_bound=True, pricing=self.image_pricing)

    def count_tools(self, tools: Sequence[dict[str, Any]]) -> int:
        return count_tool_definitions(tools, self.count_texts, self.tool_overheads)
