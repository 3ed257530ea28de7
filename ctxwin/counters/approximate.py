"""Approximate token counter: estimates o200k_base / cl100k_base counts from cheap text statistics.

No tokenizer data at run time. ``count_text`` is a linear model over the character-class statistics of
``approximate_features`` (constants in ``approximate_calibration``, fitted on one corpus and evaluated on another:
see ``benchmarks/README.md``). It runs a few memory-speed passes over the text's bytes, an order of
magnitude faster than exact BPE.

``safe=True`` (spec ``approximate:safe``) is an upper bound: the larger of two linear models fitted one-sidedly
(the smallest mean over-count that keeps every fit-corpus document at or above its real count), each widened by
a cross-validated margin that shrinks, relative to the count, as texts grow: one for the text's family
(English, symbol-dense ASCII such as code and JSON, other ASCII, accented Latin, Chinese, Japanese, Korean,
Cyrillic, other scripts: picked from the same statistics) and one for non-language strings (base64, digests,
long numbers, emoji); their weights are at least the estimate's, scripts rare in real text are
charged their UTF-8 length, and the result is capped by the text's byte count, which no byte-level BPE exceeds.
Its message framing rounds every image up to the largest estimate.
"""

from __future__ import annotations

import math
import operator
from typing import Any

from ctxwin.counters.approximate_calibration import (
    HELDOUT_P95_ERROR,
    SAFE_DENSE_MARGIN,
    SAFE_DENSE_WEIGHTS,
    SAFE_MARGINS,
    SAFE_WEIGHTS,
    WEIGHTS,
)
from ctxwin.counters.approximate_features import (
    ASCII_FEATURES,
    FEATURES,
    SAFE_FEATURES,
    ascii_counts,
    safe_family,
    safe_features,
    text_features,
)
from ctxwin.counters.base import BaseTokenCounter, scalar_text
from ctxwin.counters.image_tokens import image_tokens


class ApproximateCounter(BaseTokenCounter):
    """Token estimates for the ``target`` encoding family without its vocabulary; ``safe`` for an upper bound.

    ``max_relative_error`` is the margin a caller should allow: the 95th-percentile relative error measured on
    the held-out corpus for the estimate, 0.0 for safe mode (which is meant never to under-count).
    """

    name = "approximate"

    def __init__(self, target: str = "o200k_base", *, safe: bool = False) -> None:
        if target not in WEIGHTS:
            raise ValueError(f"approximate counter target must be one of {sorted(WEIGHTS)}, got {target!r}")
        self.target = target
        self.safe = safe
        self.name = "approximate:safe" if safe else "approximate"
        self._weights = [WEIGHTS[target][f] for f in FEATURES]
        self._ascii_weights = tuple(self._weights[: len(ASCII_FEATURES)])
        self._safe_bounds = {family: ([weights[f] for f in SAFE_FEATURES], SAFE_MARGINS[target][family])
                             for family, weights in SAFE_WEIGHTS[target].items()}
        self._dense_bound = ([SAFE_DENSE_WEIGHTS[target][f] for f in SAFE_FEATURES], SAFE_DENSE_MARGIN[target])
        self.max_relative_error = 0.0 if safe else HELDOUT_P95_ERROR[target]

    @classmethod
    def from_spec(cls, arg: str | None) -> ApproximateCounter:
        """The counter for the text after ``approximate:`` in a spec: ``safe``, an encoding, or ``safe:<encoding>``."""
        parts = [p for p in (arg or "").split(":") if p]
        safe = "safe" in parts
        targets = [p for p in parts if p != "safe"]
        if len(targets) > 1:
            raise ValueError(f"approximate counter spec takes at most one target encoding, got {arg!r}")
        return cls(targets[0] if targets else "o200k_base", safe=safe)

    def count_text(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"count_text expects a str, got {type(text).__name__}")
        try:
            return self._count(text)
        except UnicodeEncodeError:  # surrogates: counted as tiktoken counts them
            return self._count(scalar_text(text))

    def _count(self, text: str) -> int:
        if self.safe:
            return self._safe_count(text) if text else 0
        if text.isascii():
            if not text:
                return 0
            # Most chat text is ASCII: its seven statistics (``ASCII_FEATURES``) and weights are spelt out (a dot
            # product through map() costs a fifth of a short message's time).
            letters, digits, words, spaces, space_runs, newlines, punct = ascii_counts(text.encode())
            a, b, c, d, e, f, g = self._ascii_weights
            estimate = a * letters + b * digits + c * words + d * spaces + e * space_runs + f * newlines + g * punct
        else:
            estimate = sum(map(operator.mul, self._weights, text_features(text)[0]))
        # A non-empty text has at least one token; the estimate is never negative.
        return int(estimate + 0.5) or 1

    def _safe_count(self, text: str) -> int:
        counts, n_bytes = text_features(text)
        family = safe_family(counts, text)
        counts += safe_features(text)
        bound = max(_widened(*self._safe_bounds[family], counts), _widened(*self._dense_bound, counts))
        return min(n_bytes, math.ceil(bound))

    def count_block(self, block: dict[str, Any]) -> int:
        """Images by OpenAI's tile formula when their size is known (see ``image_tokens``); other blocks flat."""
        return image_tokens(block, upper_bound=self.safe)


def _widened(weights: list[float], margin: tuple[float, float], counts: list[int]) -> float:
    """A safe bound with its cross-validated margin: ``b * (1 + relative) + spread * sqrt(b)``, which widens short
    texts most, relative to their count."""
    bound: float = sum(map(operator.mul, weights, counts))
    relative, spread = margin
    return bound * (1 + relative) + spread * math.sqrt(bound)
