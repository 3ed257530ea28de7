"""The approximate counter: o200k_base / cl100k_base counts estimated from cheap text statistics, without a tokenizer,
and its safe mode, an upper bound on both encodings. How it estimates and why safe mode is safe: docs/approximate.md.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin.counters._approximate.accelerator import MODEL
from ctxwin.counters._approximate.calibration import CALIBRATION, TARGETS
from ctxwin.counters._approximate.features import (
    ASCII_FEATURES,
    FAMILIES,
    FEATURES,
    MIXED_SHORT_TEXT,
    SAFE_FEATURES,
    SHORT_TEXT,
    cut_latin,
    dense_features,
    looks_random,
    safe_family,
    safe_parts,
    text_parts,
    writing_systems,
)
from ctxwin.counters._approximate.pieces import Pieces, target_pieces
from ctxwin.counters._base import BaseTokenCounter, scalar_text
from ctxwin.counters._image_tokens import image_tokens

if TYPE_CHECKING:
    from ctxwin.counters._approximate.speedups import Model


class ApproximateCounter(BaseTokenCounter):
    """Token estimates for the ``target`` encoding family without its vocabulary; ``safe`` for an upper bound.

    ``max_relative_error`` is the margin a caller should allow: the estimate's 95th-percentile relative error
    measured by leaving whole sources out of the fit, 0.0 for safe mode (an upper bound on every encoding of
    ``SAFE_FOR``, whatever ``target`` is).
    """

    name = "approximate"
    estimating = True  # of the provider's count, even in safe mode (whose error bound is 0 on o200k counts)

    def __init__(self, target: str = "o200k_base", *, safe: bool = False) -> None:
        if target not in TARGETS:
            raise InvalidInputError(f"approximate counter target must be one of {sorted(TARGETS)}, got {target!r}")
        self.target = target
        self.safe = safe
        self.name = "approximate:safe" if safe else "approximate"
        calibrated = _calibrated(target)
        self._weights, self._floor = calibrated.weights, calibrated.floor
        self._ascii_weights = tuple(self._weights[: len(ASCII_FEATURES)])
        self._ascii_floor = self._floor[: len(ASCII_FEATURES)]
        self._digit_floor, self._other_floor = calibrated.digit_floor, calibrated.other_floor
        self._safe_bounds, self._dense_bound = calibrated.safe_bounds, calibrated.dense_bound
        self.max_relative_error = 0.0 if safe else calibrated.max_relative_error
        self._pieces, self._latin = calibrated.pieces, calibrated.latin
        self._encoders = _safe_encoders() if safe else ()
        self._count: Callable[[str], int] = self.py_safe_count if safe else self.py_count
        if calibrated.model is not None:
            self._count = (functools.partial(_exact_bound, calibrated.model.safe, self._encoders) if safe
                           else calibrated.model.estimate)

    @classmethod
    def from_spec(cls, arg: str | None) -> ApproximateCounter:
        """The counter for the text after ``approximate:`` in a spec: ``safe``, an encoding, or ``safe:<encoding>``."""
        parts = [p for p in (arg or "").split(":") if p]
        safe = "safe" in parts
        targets = [p for p in parts if p != "safe"]
        if len(targets) > 1:
            raise InvalidInputError(f"approximate counter spec takes at most one target encoding, got {arg!r}")
        return cls(targets[0] if targets else "o200k_base", safe=safe)

    def count_text(self, text: str) -> int:
        if not isinstance(text, str):
            raise InvalidTypeError(f"count_text expects a str, got {type(text).__name__}")
        try:
            return self._count(text)
        except UnicodeEncodeError:  # surrogates: counted as tiktoken counts them
            return self._count(scalar_text(text))

    def py_count(self, text: str) -> int:
        """The estimate, in Python (``count_text`` uses the C accelerator's, the same number, where it is built)."""
        counts, parts, n_bytes = text_parts(text, self._pieces)
        if not n_bytes:
            return 0
        cut, cut_parts = cut_latin(text, counts, parts, self._latin)
        # The ASCII statistics' dot product spelt out (a chat message is short, and a loop costs what the rest does),
        # left to right as ``_dot`` adds.
        letters, digits, words, spaces, space_runs, newlines, punct = cut
        a, b, c, d, e, f, g = self._ascii_weights
        estimate = a * letters + b * digits + c * words + d * spaces + e * space_runs + f * newlines + g * punct
        if cut_parts:
            weights, floors = self._weights, self._floor
            for index, n in cut_parts:
                estimate += weights[index] * n
            # The floor is of the text's characters, whether its words were cut or not.
            floor = _dot(self._ascii_floor, counts)
            for index, n in parts:
                floor += floors[index] * n
            # Between the vocabulary's floor and the byte count (no byte-level BPE uses more tokens than bytes).
            return min(n_bytes, max(math.ceil(floor), int(estimate + 0.5))) or 1
        if estimate < self._digit_floor * digits + self._other_floor * (n_bytes - digits):
            estimate = max(estimate, math.ceil(_dot(self._ascii_floor, counts)))
        return min(n_bytes, int(estimate + 0.5)) or 1

    def py_safe_count(self, text: str) -> int:
        """Safe mode's count in Python: ``py_safe_bound`` raised to the exact counts (``count_text`` uses the C
        accelerator's bound where it is built, the same number)."""
        return _exact_bound(self.py_safe_bound, self._encoders, text)

    def py_safe_bound(self, text: str) -> int:
        """The estimator's bound of safe mode, in Python (the C accelerator's ``Model.safe`` computes the same)."""
        counts, parts, n_bytes, extra = safe_parts(text, self._pieces)
        if (counts[_WORDS] + counts[_PUNCT] + counts[_DIGITS]) * 3 > 2 * len(text) or n_bytes < SHORT_TEXT:
            # Symbol soup (two characters in three start a word or are ASCII punctuation, control characters or
            # digits: such text costs up to a token a character, and no calibrated text looks like it), or too short
            # for its statistics to say much: the byte bound.
            return n_bytes
        if n_bytes < MIXED_SHORT_TEXT and writing_systems(counts, parts) > 1:
            # A short text mixing writing systems: no calibrated family describes it (the tokenizer's merges break
            # at every change of script, and a few words are too few to average that out): the byte bound.
            return n_bytes
        floor = _dot(self._ascii_floor, counts)
        for index, n in parts:
            floor += self._floor[index] * n
        family = safe_family(dense_features(counts, parts), text, extra[0] + extra[1])
        counts, parts = cut_latin(text, counts, parts, self._latin, family)
        bound = _widened(self._safe_bounds[family], counts, parts, extra)
        if looks_random(extra, len(text)):
            bound = max(bound, _widened(self._dense_bound, counts, parts, extra))
        return min(n_bytes, max(math.ceil(floor), math.ceil(bound)))

    def count_block(self, block: dict[str, Any]) -> int:
        """Images by OpenAI's tile formula when their size is known (see ``image_tokens``); other blocks flat."""
        return image_tokens(block, upper_bound=self.safe)


_WORDS, _PUNCT, _DIGITS = (FEATURES.index(f) for f in ("word_starts", "punct", "digits"))
# The encodings safe mode never under-counts (whatever the counter's target): its count is at least each one's.
SAFE_FOR: tuple[str, ...] = TARGETS


def _safe_encoders() -> tuple[Callable[[str], list[int]], ...]:
    """The exact encoders safe mode raises its bound to: tiktoken is imported for safe mode only."""
    from ctxwin.counters._families.tiktoken_encodings import load_encoding

    return tuple(load_encoding(e).encode_ordinary for e in SAFE_FOR)


def _exact_bound(bound: Callable[[str], int], encoders: tuple[Callable[[str], list[int]], ...], text: str) -> int:
    """Safe mode's count: the estimator's ``bound``, raised to the exact count under each encoding of ``SAFE_FOR``.
    A bound that is already the byte count needs no encoding: no byte-level BPE uses more tokens than bytes."""
    count = bound(text)
    if count >= len(text.encode("utf-8")):
        return count
    for encode in encoders:
        count = max(count, len(encode(text)))
    return count


class _Calibrated(NamedTuple):
    """A target's calibration as the counter uses it, read once per target: the estimate's weights and floor (per
    ``FEATURES``), the ASCII floor's largest rate per digit and per other character (an estimate above their sum
    needs no floor), safe mode's bounds, the vocabulary pieces (of the scripts, and Latin's, read at the first text
    whose Latin words are cut: they take 0.15 s to read and build), and the accelerator's model of all that."""

    weights: list[float]
    floor: list[float]
    digit_floor: float
    other_floor: float
    safe_bounds: dict[str, _Bound]
    dense_bound: _Bound
    max_relative_error: float
    pieces: Pieces
    latin: Callable[[], Pieces]
    model: Model | None


@functools.cache
def _calibrated(target: str) -> _Calibrated:
    calibration = CALIBRATION[target]
    weights = [float(calibration["weights"][f]) for f in FEATURES]
    floor = [float(calibration["floor"][f]) for f in FEATURES]
    ascii_floor = floor[: len(ASCII_FEATURES)]
    digit_floor = ascii_floor[ASCII_FEATURES.index("digits")]
    other_floor = max(w for f, w in zip(ASCII_FEATURES, ascii_floor, strict=True) if f != "digits")
    safe_bounds = {family: _bound(model) for family, model in calibration["safe"].items()}
    dense_bound = _bound(calibration["safe_dense"])
    pieces, latin = target_pieces(target), functools.partial(target_pieces, target, latin=True)
    model = None
    if MODEL is not None:
        bounds = [(b.weights, b.relative, b.spread) for b in (*map(safe_bounds.__getitem__, FAMILIES), dense_bound)]
        model = MODEL(weights, floor, digit_floor, other_floor, bounds, tuple(pieces.pieces),
                      functools.partial(_latin_pieces, target))
    return _Calibrated(weights, floor, digit_floor, other_floor, safe_bounds, dense_bound,
                       float(calibration["max_relative_error"]), pieces, latin, model)


def _latin_pieces(target: str) -> tuple[str, ...]:
    """The accelerator's Latin pieces of ``target``, which its model asks for at its first Latin text to cut."""
    return tuple(target_pieces(target, latin=True).pieces)


class _Bound(NamedTuple):
    """A safe bound's weights (``SAFE_FEATURES`` order; the ASCII and the extra statistics' apart, for sparse dot
    products) and its margin ``(relative, spread)``."""

    weights: list[float]
    ascii_weights: list[float]
    extra_weights: list[float]
    relative: float
    spread: float


def _bound(model: dict[str, Any]) -> _Bound:
    """A safe bound from its calibration entry."""
    weights = [model["weights"][f] for f in SAFE_FEATURES]
    relative, spread = model["margin"]
    return _Bound(weights, weights[: len(ASCII_FEATURES)], weights[len(FEATURES) :], relative, spread)


def _widened(bound: _Bound, counts: tuple[int, ...], parts: list[tuple[int, int]], extra: list[int]) -> float:
    """A safe bound with its cross-validated margin, ``b * (1 + relative) + spread * sqrt(b)`` (which widens short
    texts most, relative to their count), for the statistics ``text_parts`` and ``safe_features`` give."""
    weights = bound.weights
    b = _dot(bound.ascii_weights, counts) + _dot(bound.extra_weights, extra)
    for index, n in parts:
        b += weights[index] * n
    return b * (1 + bound.relative) + bound.spread * math.sqrt(b)


def _dot(weights: Sequence[float], values: Sequence[int]) -> float:
    """Left to right, as the C accelerator adds (``sum`` of floats compensates its rounding from Python 3.12)."""
    total = 0.0
    for weight, value in zip(weights, values, strict=True):
        total += weight * value
    return total
