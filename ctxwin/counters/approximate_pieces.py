"""Words of scripts whose price per character depends on the word, counted in pieces of the target vocabulary.

In the Indic scripts, Arabic, Armenian, Georgian, Hebrew, Greek, Thai, Myanmar, Khmer and kana, o200k_base holds
thousands of whole words (Hindi's common words are one token each) and the rest of a word costs two to four tokens,
so a price per character cannot serve both running prose and names: by character, Devanagari prose costs 0.37
tokens and CLDR's (mostly transliterated) names 0.61. Cutting each word of these scripts greedily into the longest
pieces the vocabulary holds counts nearly what BPE does (0.98-1.06 tokens a piece on every source of the corpus)
from a plain set of strings: ``approximate_pieces.json``, the vocabulary's tokens made only of these scripts'
characters (with or without a leading space), written by ``benchmarks/fit_approximate.py``. The pieces and the runs
cut are two statistics of ``approximate_features`` ("pieces", "piece_words"), weighted by the fit like the others.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from importlib import resources

from ctxwin.counters.approximate_scripts import group_ranges

# The script groups counted in pieces: those with at least two hundred tokens of their own in o200k_base.
PIECE_GROUPS = frozenset({
    "greek", "armenian", "hebrew", "arabic", "devanagari", "bengali", "gurmukhi", "gujarati", "tamil", "telugu",
    "kannada", "malayalam", "sinhala", "thai", "myanmar", "georgian", "khmer", "kana", "katakana",
})
PIECE_RANGES = group_ranges(PIECE_GROUPS)
# A run of these characters: a word (or, in scripts written without spaces, a phrase), which BPE never merges with
# what surrounds it but a space before it.
_RUN = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in PIECE_RANGES) + "]+")
# The most runs whose cut ``Pieces`` keeps, and the longest it keeps (words repeat; long runs of unspaced scripts
# seldom do): a few MB at most.
_CACHED, _CACHED_RUN = 1 << 16, 32


class Pieces:
    """A target vocabulary's pieces; ``count`` cuts runs of ``PIECE_GROUPS`` characters into them."""

    def __init__(self, pieces: Iterable[str]) -> None:
        self.pieces = frozenset(pieces)
        self.longest = max(map(len, self.pieces), default=1)
        # Every prefix of a piece, and whether it is one: a match grows while it is a prefix of some piece, a few
        # lookups where trying every length from the longest down would take ``longest``.
        self._prefixes: dict[str, bool] = {}
        for piece in self.pieces:
            for end in range(1, len(piece)):
                self._prefixes.setdefault(piece[:end], False)
        self._prefixes.update(dict.fromkeys(self.pieces, True))
        # The cut of each run met (with the space before it), up to _CACHED_RUN characters; emptied when it holds
        # _CACHED runs.
        self._cuts: dict[str, int] = {}

    def count(self, text: str) -> tuple[int, int]:
        """Pieces of the runs in ``text``, and the runs: from each position the longest piece that matches, or one
        character where none does; a run after a space starts with the longest piece holding the space, if one
        matches (the space is counted apart, as a space)."""
        cuts, n, runs = self._cuts, 0, 0
        for run in _RUN.finditer(text):
            start, end = run.span()
            runs += 1
            key = text[start - 1 : end] if start and text[start - 1] == " " else run.group()
            if len(key) > _CACHED_RUN:
                n += self._cut(key)
                continue
            cut = cuts.get(key)
            if cut is None:
                if len(cuts) >= _CACHED:
                    cuts.clear()
                cut = cuts[key] = self._cut(key)
            n += cut
        return n, runs

    def _cut(self, run: str) -> int:
        """The pieces of one run (after a space if it starts with one)."""
        p, n, end = 0, 0, len(run)
        if run[0] == " ":
            length = self._longest(run, 0, end)
            p, n = (length, 1) if length >= 2 else (1, 0)
        while p < end:
            p, n = p + (self._longest(run, p, end) or 1), n + 1
        return n

    def _longest(self, text: str, start: int, end: int) -> int:
        """The length of the longest piece at ``start`` ending by ``end``, 0 for none."""
        prefixes, best = self._prefixes, 0
        for stop in range(start + 1, min(start + self.longest, end) + 1):
            whole = prefixes.get(text[start:stop])
            if whole is None:
                break
            if whole:
                best = stop - start
        return best


def is_piece(token: str) -> bool:
    """Whether a vocabulary token (decoded) is a piece: one or more characters of ``PIECE_GROUPS``, after at most
    one space."""
    body = token[1:] if token.startswith(" ") else token
    return _RUN.fullmatch(body) is not None


@functools.cache
def target_pieces(target: str) -> Pieces:
    """The pieces of ``target`` (an encoding name of ``approximate_calibration.TARGETS``)."""
    data = json.loads(resources.files("ctxwin.counters").joinpath("approximate_pieces.json").read_text(
        encoding="utf-8"))
    return Pieces(data[target].split("\n"))
