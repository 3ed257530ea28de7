"""Fit the approximate counter on every source, evaluate it by leaving whole sources out, and write the calibration.

Output: ``ctxwin/counters/_approximate/calibration.json`` (loaded at run time with ``importlib.resources``), and the
vocabulary pieces ``pieces.json`` and ``latin_pieces.json`` (``pieces``).

- **Floor** (per target): the largest number of bytes of each character class (ASCII letters, digits, spaces,
  newlines, punctuation, each script group) one token of the real vocabulary holds, ``M[c]``, and ``K``, the largest
  sum over one token of its bytes of each class divided by ``M[c]`` (bytes of a character the token holds only a
  part of may be of any non-ASCII class: they are charged to the dearest). Every token adds at most ``K`` to
  ``sum(bytes[c] / M[c])``, so a text needs at least that sum over ``K`` tokens: a linear floor in the statistics.
- **Estimate**: non-negative weights, between the floor's and the class's UTF-8 width (no character costs more
  tokens than bytes), minimising the mean absolute relative error, every kind of text weighted equally; random
  strings are left out (nobody writes them).
- **Safe mode**: per family of text (``features.safe_family``), the bound with the smallest mean
  over-count that keeps every non-random document at or above its real count, every weight at least the
  estimate's; script groups without natural text in the corpus (``UNCALIBRATED``) at least at the dearest rate
  random strings of that group reach. Its margin ``(relative, spread)``, widening a bound ``b`` to
  ``b * (1 + relative) + spread * sqrt(b)``, is the smallest that keeps every document of every source at or
  above its count under a bound fitted without that source. A second bound for text that is not language
  (random strings of every script, base64, digests, emoji) is fitted the same way; safe mode takes the larger.
- **Evaluation**: every figure printed (and written to the JSON's ``evaluation``) comes from leave-one-source-out:
  each document is estimated by weights fitted without its source.

Usage: ``python benchmarks/fit_approximate.py [--processes N]`` (needs numpy and scipy: fitting only, never at run
time; one process per target by default, ``--processes 1`` fits them one after the other).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from corpus import TARGET_KINDS, reference_encoding
from corpus_more import Doc, evaluation_docs

from ctxwin.counters._approximate.features import (
    ASCII_FEATURES,
    FAMILIES,
    FEATURES,
    SAFE_FEATURES,
    SHORT_TEXT,
    cut_latin,
    dense_features,
    looks_random,
    safe_family,
    safe_features,
    text_parts,
)
from ctxwin.counters._approximate.pieces import PIECE_GROUPS, Pieces, is_piece
from ctxwin.counters._approximate.scripts import GROUPS, WIDTHS, script_counts

TARGETS = ("o200k_base", "cl100k_base")
OUTPUT = Path(__file__).parent.parent / "ctxwin" / "counters" / "_approximate" / "calibration.json"
# The pieces of the scripts (``pieces.PIECE_GROUPS``), and the Latin ones.
PIECES_OUTPUT = {latin: OUTPUT.with_name(name) for latin, name in ((False, "pieces.json"),
                                                                   (True, "latin_pieces.json"))}
# Script groups with natural text in the corpus (chat lines, news, lorem paragraphs, CLDR names): the others are
# charged in safe mode at least what their random strings cost.
CALIBRATED = {
    "latin1", "latin_ext", "vietnamese", "greek", "cyrillic", "armenian", "hebrew", "arabic", "devanagari", "bengali",
    "tamil", "telugu", "thai", "han", "kana", "katakana", "cjk_punct", "hangul", "fullwidth", "punctuation", "oriya",
}
# Calibrated groups whose random strings safe mode does not bound (no word runs to see them by).
UNBOUNDED_RANDOM = {"han", "kana", "katakana", "cjk_punct", "fullwidth", "punctuation"}
# Kinds made by generators (one narrow source each: base64, CSV of numbers, box drawing...) or word lists (CLDR's
# names, faker's lorem): the safe bounds cover them (they are in the fit), but their sources do not set the
# margins, which are for real text from sources not seen.
GENERATED = {"data", "noise", "cldr", "lorem"}
# The margin (relative, spread) of the bound for random strings.
DENSE_MARGIN = (0.05, 1.0)
# The share in the fits' objective of kinds without accuracy targets (CLDR names, lorem, data, other languages):
# at full weight they pull the ASCII weights away from English and code.
OTHER_SHARE = 0.5
# The share in safe mode's objective (the mean over-count it minimises, every document covered whatever its share)
# of kinds without targets: the over-count that matters is on ordinary text.
SAFE_OTHER_SHARE = 0.1
# The share of CLDR documents in the estimate's objective, in scripts with other natural text.
CLDR_SHARE = 0.1
# Kinds without accuracy targets that count in full in the estimate's objective: running prose in every script (the
# Universal Declaration of Human Rights), what the estimate must get right most.
PROSE_KINDS = frozenset({"udhr"})
# Kinds that are lists of words, not running text (the per-script table of running text leaves them out).
WORD_LISTS = frozenset({"cldr", "lorem"})
# Scripts whose median |error| is above this get their errors printed per source.
SOURCE_BREAKDOWN = 0.10
# Features that are subsets of others (they add to a count already made), with no width of their own.
_SUBSETS = ("ukrainian", "cyrillic_ext", "traditional", "cherokee_ethiopic", "cantonese")
_ASCII_CLASSES = ("letters", "digits", "spaces", "newlines", "punct")



def _linprog() -> Any:
    """scipy's ``linprog``, imported when a fit runs: the tests import this module's tables without the fit extra."""
    from scipy.optimize import linprog

    return linprog

def bounded_random(doc: Doc) -> bool:
    """Whether safe mode bounds a random string: any of an uncalibrated script; of a calibrated one, only without
    spaces and in a script whose letters make words (a run of 16 is no word); not random Han, kana or symbols of
    calibrated groups, whose strings cost up to twice real text of that script (docs/approximate.md)."""
    group = doc.source.removeprefix("random-")
    extra = safe_features(doc.text)
    return doc.kind == "random" and (group not in CALIBRATED
                                     or (looks_random(extra, len(doc.text)) and group not in UNBOUNDED_RANDOM))


def script_of(text: str) -> str:
    """The script group with most characters (``ascii`` when none): the per-script rows of the report."""
    counts = script_counts(text, text.encode())
    letters = {g: n for g, n in zip(GROUPS, counts, strict=True)
               if n and g not in {"punctuation", "symbols", "box", "dingbats", "forms", "cjk_punct"}}
    if not letters or sum(letters.values()) * 4 < len(text):
        return "ascii"
    return max(letters, key=letters.__getitem__)


# ---------------------------------------------------------------------------------------------------------------
# The floor, from the vocabulary


def _byte_classes(token: bytes) -> tuple[Counter[str], int]:
    """Bytes of ``token`` per class (ASCII classes, script groups) and bytes of characters it holds only a part of."""
    classes: Counter[str] = Counter()
    i, wild = 0, 0
    while i < len(token):
        b = token[i]
        width = 1 if b < 0x80 else 2 if b >> 5 == 6 else 3 if b >> 4 == 14 else 4 if b >> 3 == 30 else 0
        piece = token[i : i + width]
        if width == 1:
            ch = chr(b)
            classes["digits" if ch.isdigit() else "letters" if ch.isalpha() else "spaces" if ch == " "
                    else "newlines" if ch == "\n" else "punct"] += 1
        elif width and len(piece) == width and all(0x80 <= c < 0xC0 for c in piece[1:]):
            text = piece.decode("utf-8")
            group = next((g for g, n in zip(GROUPS, script_counts(text, piece), strict=True) if n), "rare")
            classes[group] += width
        else:  # a continuation byte, or a character cut by the token's end
            wild, width = wild + 1, 1
        i += width
    return classes, wild


def fit_floor(target: str) -> tuple[dict[str, float], dict[str, int], float]:
    """Per feature, the floor's tokens per occurrence; ``M`` per class; ``K``."""
    ranks = reference_encoding(target)._mergeable_ranks
    per_token = [_byte_classes(token) for token in ranks]
    names = (*_ASCII_CLASSES, *GROUPS)
    most = {c: max(1, max(classes[c] + (wild if c in GROUPS else 0) for classes, wild in per_token)) for c in names}
    cheapest = min(most[g] for g in GROUPS)
    k = max(sum(n / most[c] for c, n in classes.items()) + wild / cheapest for classes, wild in per_token)
    width = {**dict.fromkeys(_ASCII_CLASSES, 1), **WIDTHS}
    floor = {f: (width[f] / most[f] / k if f in most else 0.0) for f in FEATURES}
    return floor, most, k


def vocabulary_pieces(target: str, *, latin: bool = False) -> list[str]:
    """The target's tokens that are pieces (``pieces.is_piece``; ``latin``: Latin ones), sorted."""
    pieces = []
    for token in reference_encoding(target)._mergeable_ranks:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:  # a token that cuts a character
            continue
        if is_piece(text, latin=latin):
            pieces.append(text)
    return sorted(pieces)


def statistics_of(text: str, pieces: Pieces, latin: Pieces) -> tuple[list[int], list[int], list[int], str]:
    """A text's ``FEATURES`` as ``ApproximateCounter`` weighs them (Latin words cut where ``cut_latin`` cuts them),
    the same before that cut (the floor's, and the family's), its ``safe_features`` and its family."""
    counts, parts, _ = text_parts(text, pieces)
    before = dense_features(counts, parts)
    extra = safe_features(text, before)
    family = safe_family(before, text, extra[0] + extra[1])
    return dense_features(*cut_latin(text, counts, parts, lambda: latin, family)), before, extra, family


# ---------------------------------------------------------------------------------------------------------------
# Fits


def _kind_weights(kinds: list[str], other_share: float = OTHER_SHARE,
                  full: frozenset[str] = frozenset(TARGET_KINDS)) -> np.ndarray:
    """Per document, its share of the objective: every kind in total the same, kinds outside ``full``
    ``other_share`` times that."""
    sizes = Counter(kinds)
    return np.array([(1.0 if k in full else other_share) / sizes[k] for k in kinds])


def fit_estimate(kinds: list[str], x: np.ndarray, tokens: np.ndarray, low: np.ndarray, high: np.ndarray,
                 scale: np.ndarray) -> np.ndarray:
    """Weights in [low, high] minimising the kind-weighted mean of |estimate / tokens - 1| (each document's share
    times ``scale``)."""
    n, m = x.shape
    ratios = x / tokens[:, None]
    w = _kind_weights(kinds, full=frozenset(TARGET_KINDS) | PROSE_KINDS) * scale
    cost = np.concatenate([np.zeros(m), w, w])
    equality = np.hstack([ratios, -np.eye(n), np.eye(n)])
    bounds = [(lo, hi) for lo, hi in zip(low, high, strict=True)] + [(0, None)] * (2 * n)
    result = _linprog()(cost, A_eq=equality, b_eq=np.ones(n), bounds=bounds, method="highs")
    if not result.success:
        raise RuntimeError(f"estimate fit failed: {result.message}")
    return np.asarray(result.x[:m])


def fit_safe(kinds: list[str], x: np.ndarray, tokens: np.ndarray, floors: np.ndarray, only: np.ndarray) -> np.ndarray:
    """Weights of at least ``floors`` (0 outside ``only``) minimising the mean over-count, no document under."""
    ratios = x / tokens[:, None]
    cost = (_kind_weights(kinds, SAFE_OTHER_SHARE)[:, None] * ratios).sum(axis=0)
    bounds = [(f, None) if o else (0.0, 0.0) for f, o in zip(floors, only, strict=True)]
    result = _linprog()(cost, A_ub=-ratios, b_ub=-np.ones(len(tokens)), bounds=bounds, method="highs")
    if not result.success:
        raise RuntimeError(f"safe fit failed: {result.message}")
    return np.ceil(np.asarray(result.x) * 1e4) / 1e4


def by_source_margin(kinds: list[str], sources: list[str], x: np.ndarray, tokens: np.ndarray, floors: np.ndarray,
                     only: np.ndarray, judged: np.ndarray) -> tuple[float, float]:
    """The smallest (relative, spread) keeping every ``judged`` document above its count under a bound fitted
    without its source (a source that is all of the family's documents is bounded by the fit on all of them)."""
    bound = np.empty(len(tokens))
    names = sorted(set(sources))
    full = fit_safe(kinds, x, tokens, floors, only)
    for name in names:
        out = np.array([s == name for s in sources])
        weights = full if out.all() else fit_safe([k for k, o in zip(kinds, out, strict=True) if not o], x[~out],
                                                  tokens[~out], floors, only)
        bound[out] = x[out] @ weights
    bound = np.maximum(bound[judged], 1e-9)
    needed = tokens[judged] / bound - 1
    shrink = 1 / np.sqrt(bound)
    result = _linprog()([1.0, shrink.mean()], A_ub=-np.column_stack([np.ones(len(bound)), shrink]), b_ub=-needed,
                     bounds=[(0, None), (0, None)], method="highs")
    if not result.success:
        raise RuntimeError(f"margin fit failed: {result.message}")
    relative, spread = result.x
    return float(np.ceil(relative * 1e4) / 1e4), float(np.ceil(spread * 1e4) / 1e4)


def widened(bound: np.ndarray, margin: tuple[float, float]) -> np.ndarray:
    relative, spread = margin
    return bound * (1 + relative) + spread * np.sqrt(np.maximum(bound, 0))


@dataclass(frozen=True)
class Measured:
    """Documents as one target's fit sees them: statistics as the weights see them (``x``, ``safe_features``
    included) and as the floor does (``before``: Latin words not cut), safe-mode families, real counts, sizes, the
    estimate's bounds per weight and each document's share of its objective."""

    docs: tuple[Doc, ...]
    x: np.ndarray
    before: np.ndarray
    families: list[str]
    scripts: list[str]
    tokens: np.ndarray
    n_bytes: np.ndarray
    floor_w: np.ndarray
    low: np.ndarray
    high: np.ndarray
    unseen_rate: np.ndarray
    scale: np.ndarray

    @property
    def kinds(self) -> list[str]:
        return [d.kind for d in self.docs]

    @property
    def sources(self) -> list[str]:
        return [d.source for d in self.docs]

    @property
    def natural(self) -> np.ndarray:
        return np.array([d.kind != "random" for d in self.docs])

    def fit_estimate(self, rows: np.ndarray) -> np.ndarray:
        """The estimate's weights fitted on the documents of ``rows`` (a weight no row uses is charged its unseen
        rate)."""
        m = len(FEATURES)
        seen = self.x[rows, :m].any(axis=0)
        return fit_estimate([kd for kd, r in zip(self.kinds, rows, strict=True) if r], self.x[rows, :m],
                            self.tokens[rows], np.where(seen, self.low, self.unseen_rate),
                            np.where(seen, self.high, self.unseen_rate), self.scale[rows])

    def estimate(self, weights: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The counts ``ApproximateCounter`` gives the documents of ``rows`` with ``weights``: rounded, at least 1,
        between the floor and the byte count."""
        m = len(FEATURES)
        values = self.x[rows, :m] @ weights
        return np.clip(np.maximum(np.rint(values), 1), np.ceil(self.before[rows, :m] @ self.floor_w),
                       self.n_bytes[rows])


def measure_docs(target: str, docs: tuple[Doc, ...], table: Pieces, latin: Pieces,
                 floor: dict[str, float]) -> Measured:
    """``docs`` measured for ``target`` with its pieces (``table``, ``latin``) and its floor (``fit_floor``)."""
    encoding = reference_encoding(target)
    tokens = np.array([len(encoding.encode_ordinary(d.text)) for d in docs], float)
    rows = [statistics_of(d.text, table, latin) for d in docs]
    x = np.array([[*weighed, *extra] for weighed, _, extra, _ in rows], float)
    before = np.array([[*plain, *extra] for _, plain, extra, _ in rows], float)
    sources = [d.source for d in docs]
    floor_w = np.array([floor[f] for f in FEATURES])
    width = {**dict.fromkeys((*ASCII_FEATURES, *_SUBSETS, "pieces", "latin_pieces"), np.inf), "piece_words": 1.0,
             **WIDTHS}
    high = np.array([width[f] for f in FEATURES], float)
    # The characters of words counted in pieces cost what their pieces do: their own weight may go under the floor
    # (which ``ApproximateCounter`` applies to the whole text anyway); ``piece_words`` takes off what
    # ``word_starts`` charges those words.
    low = np.where([f in PIECE_GROUPS for f in FEATURES], 0.0, floor_w)
    low[FEATURES.index("piece_words")] = -1.0

    # CLDR's names (many transliterated) cost more per character than prose: in scripts that have other natural
    # text, they count CLDR_SHARE as much in the estimate's objective (where they are all there is, in full). Each
    # document's share is also its own ``weight`` (the UDHR's languages of a script share theirs by speakers).
    scripts = [script_of(d.text) for d in docs]
    prose_scripts = {s for s, d in zip(scripts, docs, strict=True) if d.kind not in {"cldr", "random"}}
    scale = np.array([(CLDR_SHARE if d.kind == "cldr" and s in prose_scripts else 1.0) * d.weight
                      for s, d in zip(scripts, docs, strict=True)])

    # A script group without natural text among the rows fitted (one that only random strings have, or whose only
    # source is left out) is charged what its random strings cost a character, not the floor the fit would leave;
    # but combining marks, which merge with the letter before them in text and not in random strings.
    unseen_rate = low.copy()
    for g in (g for g in GROUPS if g != "combining"):
        i, random_rows = FEATURES.index(g), np.array([s == f"random-{g}" for s in sources])
        if random_rows.any():
            unseen_rate[i] = np.clip(np.median(tokens[random_rows] / np.maximum(before[random_rows, i], 1)), low[i],
                                     high[i])
    return Measured(docs, x, before, [family for _, _, _, family in rows], scripts, tokens,
                    np.array([len(d.text.encode()) for d in docs], float), floor_w, low, high, unseen_rate, scale)


# ---------------------------------------------------------------------------------------------------------------


def _table(label: str, keys: list[str], errors: np.ndarray) -> dict[str, Any]:
    rows = {}
    print(f"  {label}:")
    for key in sorted(set(keys)):
        e = np.abs(errors[[k == key for k in keys]])
        rows[key] = {"documents": len(e), "median": round(float(np.median(e)), 4),
                     "p95": round(float(np.quantile(e, 0.95, method="inverted_cdf")), 4)}
        print(f"    {key:16}{len(e):6}  median {100 * rows[key]['median']:6.1f}%  p95 {100 * rows[key]['p95']:6.1f}%")
    return rows


def _by_source(scripts: list[str], sources: list[str], errors: np.ndarray, natural: np.ndarray) -> None:
    """Prints, for each script whose median |error| is above ``SOURCE_BREAKDOWN``, its documents' signed median error
    per source: which sources are off, and in which direction (names and sentences do not cost the same)."""
    rows = [(sc, so, e) for sc, so, e, r in zip(scripts, sources, errors, natural, strict=True) if r and sc != "ascii"]
    print(f"  by source, scripts above {100 * SOURCE_BREAKDOWN:.0f}% (signed median):")
    for script in sorted({sc for sc, _, _ in rows}):
        mine = [(so, e) for sc, so, e in rows if sc == script]
        if np.median(np.abs([e for _, e in mine])) <= SOURCE_BREAKDOWN:
            continue
        parts = [f"{so} {100 * np.median([e for s, e in mine if s == so]):+.1f}% ({sum(s == so for s, _ in mine)})"
                 for so in sorted({so for so, _ in mine})]
        print(f"    {script:12}", ", ".join(parts))


def estimates_without_their_source(target: str, data: Measured, names: set[str]) -> np.ndarray:
    """Each document of the sources ``names`` estimated by weights fitted on the natural documents of every other
    source (NaN for the documents of other sources)."""
    estimates = np.full(len(data.docs), np.nan)
    for name in sorted(names):
        out = np.array([s == name for s in data.sources])
        estimates[out] = data.estimate(data.fit_estimate(data.natural & ~out), out)
        print(f"  {target} fold {name}", file=sys.stderr)
    return estimates


def _leave_one_source_out(target: str, data: Measured) -> tuple[dict[str, Any], float]:
    """The estimate's errors, each natural document estimated by weights fitted without its source; the 95th
    percentile over the kinds with accuracy targets."""
    sources, kinds, scripts, natural = data.sources, data.kinds, data.scripts, data.natural
    loso = estimates_without_their_source(target, data, {s for s, r in zip(sources, natural, strict=True) if r})
    errors = loso / data.tokens - 1
    print(f"{target}: estimate, leave-one-source-out")
    nat_kinds = [kd for kd, r in zip(kinds, natural, strict=True) if r]
    running = natural & np.array([k not in WORD_LISTS for k in kinds])
    evaluation: dict[str, Any] = {
        "estimate_by_kind": _table("by kind", nat_kinds, errors[natural]),
        "estimate_by_script": _table("by script", [s for s, r in zip(scripts, natural, strict=True) if r],
                                     errors[natural]),
        "estimate_by_script_running_text": _table(
            "by script, running text (no word lists: CLDR's names, faker's lorem)",
            [s for s, r in zip(scripts, running, strict=True) if r], errors[running]),
    }
    _by_source(scripts, sources, errors, natural)
    targeted = natural & np.array([k in TARGET_KINDS for k in kinds])
    p95 = float(np.quantile(np.abs(errors[targeted]), 0.95, method="inverted_cdf"))
    evaluation["estimate_all"] = {"median": round(float(np.median(np.abs(errors[natural]))), 4),
                                  "p95": round(float(np.quantile(np.abs(errors[natural]), 0.95)), 4),
                                  "target_kinds_median": round(float(np.median(np.abs(errors[targeted]))), 4),
                                  "target_kinds_p95": round(p95, 4)}
    return evaluation, round(p95, 3)


def fit_target(target: str, docs: tuple[Doc, ...], previous: dict[str, Any] | None,
               pieces: list[str], latin_pieces: list[str]) -> dict[str, Any]:
    """The calibration of one target, whose ``pieces`` and ``latin_pieces`` are given; ``previous`` (its last
    calibration) skips the estimate's evaluation."""
    floor, most, k = fit_floor(target)
    data = measure_docs(target, docs, Pieces(pieces), Pieces(latin_pieces, latin=True), floor)
    x, before, tokens, n_bytes, families = data.x, data.before, data.tokens, data.n_bytes, data.families
    kinds, sources, natural = data.kinds, data.sources, data.natural
    m = len(FEATURES)

    weights = data.fit_estimate(natural)
    if previous is None:
        evaluation, p95 = _leave_one_source_out(target, data)
    else:  # --safe-only: the estimate and its evaluation as last written
        evaluation = {k: v for k, v in previous["evaluation"].items() if k.startswith("estimate")}
        p95 = previous["max_relative_error"]

    # Safe mode. Random strings' dearest rate per character of each group: the floor of uncalibrated groups.
    safe_floor = np.concatenate([weights, np.zeros(len(SAFE_FEATURES) - m)])
    # No negative weight in a bound, which must stay positive for its margin's square root.
    safe_floor[FEATURES.index("piece_words")] = max(0.0, safe_floor[FEATURES.index("piece_words")])
    for g in GROUPS:
        i = FEATURES.index(g)
        rows = np.array([kd == "random" and s == f"random-{g}" for kd, s in zip(kinds, sources, strict=True)])
        if g not in CALIBRATED:
            rate = float((tokens[rows] / np.maximum(before[rows, i], 1)).max()) if rows.any() else WIDTHS[g]
            safe_floor[i] = max(safe_floor[i], rate)
    everything = np.ones(len(SAFE_FEATURES), bool)
    models: dict[str, Any] = {}
    bound = np.zeros(len(docs))
    # Each family's bound covers its natural documents and the random strings it must bound that fall in it (those
    # of uncalibrated scripts; random strings of calibrated ones are the dense bound's).
    bounded = np.array([bounded_random(d) and d.source.removeprefix("random-") not in CALIBRATED for d in docs])
    for family in FAMILIES:
        rows = (natural | bounded) & np.array([f == family for f in families])
        if (rows & natural).sum() < 10:
            rows = natural | bounded
        fk = [kd for kd, r in zip(kinds, rows, strict=True) if r]
        fs = [s for s, r in zip(sources, rows, strict=True) if r]
        w = fit_safe(fk, x[rows], tokens[rows], safe_floor, everything)
        margin = by_source_margin(fk, fs, x[rows], tokens[rows], safe_floor, everything,
                                  np.array([k not in GENERATED and k != "random" for k in fk]))
        models[family] = {"weights": dict(zip(SAFE_FEATURES, map(float, w), strict=True)), "margin": margin}
        mine = np.array([f == family for f in families])
        bound[mine] = widened(x[mine] @ w, margin)
    # The bound for text that is not language: from statistics natural text has few of (long runs of letters, letter
    # and digit boundaries, characters of uncalibrated scripts), fitted on random strings (those of calibrated
    # scripts without spaces: with spaces they are not bounded, see docs/approximate.md) and noise.
    dense_rows = np.array([bounded_random(d) and d.source.removeprefix("random-") in CALIBRATED for d in docs])
    gated = np.array([looks_random(list(map(int, row[m:])), len(d.text)) for row, d in zip(x, docs, strict=True)])
    guaranteed = natural | np.array([bounded_random(d) for d in docs])
    dense_only = np.array([f in {"long_words", "per_text", "emoji", "astral", *(set(GROUPS) - CALIBRATED)}
                           for f in SAFE_FEATURES])
    dense_floor = np.zeros(len(SAFE_FEATURES))
    dk = [kd for kd, r in zip(kinds, dense_rows, strict=True) if r]
    dense_w = fit_safe(dk, x[dense_rows], tokens[dense_rows], dense_floor, dense_only)
    # Each random source is one script, the only data of its group: leaving it out would leave the group unfitted,
    # so this bound's margin is fixed.
    dense_margin = DENSE_MARGIN
    safe = np.minimum(np.ceil(np.where(gated, np.maximum(bound, widened(x @ dense_w, dense_margin)), bound)), n_bytes)
    # Symbol soup (half the characters ASCII punctuation or controls) and short texts are charged their byte count.
    lengths = np.array([len(d.text) for d in docs])
    soup = before[:, [FEATURES.index(f) for f in ("word_starts", "punct", "digits")]].sum(axis=1) * 3 > 2 * lengths
    safe = np.where(soup | (n_bytes < SHORT_TEXT), n_bytes, safe)
    ratio = safe / tokens - 1
    print(f"{target}: safe mode (bounds fitted on all sources, margins from source folds)")
    evaluation["safe_by_kind"] = {}
    for kind in sorted(set(kinds)):
        r = ratio[[kd == kind and g for kd, g in zip(kinds, guaranteed, strict=True)]]
        evaluation["safe_by_kind"][kind] = {"documents": len(r), "min": round(float(r.min()), 4),
                                            "median": round(float(np.median(r)), 4)}
        print(f"    {kind:16}{len(r):6}  worst {100 * r.min():+6.1f}%  median {100 * np.median(r):+6.1f}%")
    print(f"  under-counted documents: {(ratio[guaranteed] < 0).sum()}; margins:",
          {f: m["margin"] for f, m in models.items()}, "dense:", dense_margin)
    ordinary = natural & np.array([kd in TARGET_KINDS for kd in kinds])
    evaluation["safe_all"] = {"documents": int(guaranteed.sum()), "min": round(float(ratio[guaranteed].min()), 4),
                              "median_ordinary": round(float(np.median(ratio[ordinary])), 4),
                              "median": round(float(np.median(ratio[natural])), 4)}
    return {
        "weights": dict(zip(FEATURES, map(float, np.round(weights, 5)), strict=True)),
        "floor": floor, "floor_bytes_per_token": most, "floor_k": k,
        "max_relative_error": p95,
        "safe": models,
        "safe_dense": {"weights": dict(zip(SAFE_FEATURES, map(float, dense_w), strict=True)), "margin": dense_margin},
        "evaluation": evaluation,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--safe-only", action="store_true",
                        help="refit without re-evaluating the estimate (keeps the evaluation last written)")
    parser.add_argument("--processes", type=int, default=len(TARGETS),
                        help="worker processes (one target each; 1 fits them one after the other)")
    args = parser.parse_args()
    previous = json.loads(OUTPUT.read_text(encoding="utf-8"))["targets"] if args.safe_only else {}
    pieces = {latin: {t: vocabulary_pieces(t, latin=latin) for t in TARGETS} for latin in (False, True)}
    for latin, output in PIECES_OUTPUT.items():
        output.write_text(json.dumps({t: "\n".join(p) for t, p in pieces[latin].items()}, ensure_ascii=False) + "\n",
                          encoding="utf-8")
        print(f"wrote {output}:", {t: len(p) for t, p in pieces[latin].items()}, "pieces")
    docs = evaluation_docs()
    print(f"{len(docs)} documents from {len({d.source for d in docs})} sources;",
          dict(Counter(d.kind for d in docs)))
    with multiprocessing.Pool(max(1, min(args.processes, len(TARGETS)))) as pool:
        fitted = pool.starmap(fit_target, [(t, docs, previous.get(t), pieces[False][t], pieces[True][t])
                                           for t in TARGETS])
    result = {"targets": dict(zip(TARGETS, fitted, strict=True))}
    OUTPUT.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {OUTPUT}; median over-count of safe mode:",
          {t: statistics.median(v["median"] for v in r["evaluation"]["safe_by_kind"].values())
           for t, r in result["targets"].items()})


if __name__ == "__main__":
    main()
