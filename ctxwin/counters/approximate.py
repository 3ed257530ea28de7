"""Approximate token counter: estimates o200k_base / cl100k_base counts from cheap text statistics.

No tokenizer data at run time. ``count_text`` is a linear model over the character-class statistics of
``approximate_features`` (constants in ``approximate_calibration``, fitted on one corpus and evaluated on another:
see ``benchmarks/README.md``). It runs a few memory-speed passes over the text's bytes, an order of
magnitude faster than exact BPE.

``safe=True`` (spec ``approximate:safe``) is an upper bound: the larger of two linear models fitted one-sidedly
(the smallest mean over-count that keeps every fit-corpus document at or above its real count plus a margin), one
for the text's family (English, symbol-dense ASCII such as code and JSON, other ASCII, accented Latin, Chinese,
Japanese, Korean, Cyrillic, other scripts: picked from the same statistics) and one for non-language strings
(base64, digests, long numbers, emoji); their weights are at least the estimate's, scripts rare in real text are
charged their UTF-8 length, and the result is capped by the text's byte count, which no byte-level BPE exceeds.
Its message framing rounds every image up to the largest estimate.
"""

from __future__ import annotations

import math
import operator
from typing import Any

from ctxwin.counters.approximate_calibration import HELDOUT_P95_ERROR, SAFE_DENSE_WEIGHTS, SAFE_WEIGHTS, WEIGHTS
from ctxwin.counters.approximate_features import (
    ASCII_FEATURES,
    FEATURES,
    SAFE_FEATURES,
    safe_family,
    safe_features,
    text_features,
)
from ctxwin.counters.base import BaseTokenCounter
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
        self._ascii_weights = self._weights[: len(ASCII_FEATURES)]
        self._safe_weights = {family: [weights[f] for f in SAFE_FEATURES]
                              for family, weights in SAFE_WEIGHTS[target].items()}
        self._dense_weights = [SAFE_DENSE_WEIGHTS[target][f] for f in SAFE_FEATURES]
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
        if not text:
            return 0
        counts, n_bytes = text_features(text)
        if not self.safe:
            # ASCII text has no script counts: the product stops at the shorter weight list.
            weights = self._ascii_weights if text.isascii() else self._weights
            estimate: float = sum(map(operator.mul, weights, counts))
            return max(1, round(estimate))
        family = safe_family(counts, text)
        counts += safe_features(text)
        bound: float = max(sum(map(operator.mul, self._safe_weights[family], counts)),
                           sum(map(operator.mul, self._dense_weights, counts)))
        return min(n_bytes, math.ceil(bound))

    def count_block(self, block: dict[str, Any]) -> int:
        """Images by OpenAI's tile formula when their size is known (see ``image_tokens``); other blocks flat."""
        return image_tokens(block, upper_bound=self.safe)
