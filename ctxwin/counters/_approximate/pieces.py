"""Words of scripts whose price depends on the word, cut greedily into the longest pieces of the target vocabulary
(``pieces.json``, ``latin_pieces.json``). Why: docs/approximate.md.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from importlib import resources

from ctxwin.counters._approximate.scripts import group_ranges

# The script groups counted in pieces: those with at least two hundred tokens of their own in o200k_base.
PIECE_GROUPS = frozenset({
    "greek", "armenian", "hebrew", "arabic", "devanagari", "bengali", "gurmukhi", "gujarati", "tamil", "telugu",
    "kannada", "malayalam", "sinhala", "thai", "myanmar", "georgian", "khmer", "kana", "katakana",
})
PIECE_RANGES = group_ranges(PIECE_GROUPS)
# Latin letters: ASCII's, Latin-1's, and every code point of the groups "latin_ext" (with IPA and the spacing
# modifier letters such as ʻ), "vietnamese" and "combining" (the marks of decomposed accents, which BPE keeps in
# the word): a word of them is cut into pieces whole.
LATIN_RANGES = ((0x41, 0x5A), (0x61, 0x7A), (0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0xFF),
                *group_ranges(frozenset({"latin_ext", "vietnamese", "combining"})))


def _runs(ranges: Iterable[tuple[int, int]]) -> re.Pattern[str]:
    """Runs of the characters of ``ranges``: a word (or, in scripts written without spaces, a phrase), which BPE
    never merges with what surrounds it but a space before it."""
    return re.compile("[" + "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges) + "]+")


_RUN, _LATIN_RUN = _runs(PIECE_RANGES), _runs(LATIN_RANGES)
# The most runs whose cut ``Pieces`` keeps, and the longest it keeps (words repeat; long runs of unspaced scripts
# seldom do): a few MB at most.
_CACHED, _CACHED_RUN = 1 << 16, 32


class Pieces:
    """A target vocabulary's pieces; ``count`` cuts runs of ``PIECE_GROUPS`` characters (``latin``: of
    ``LATIN_RANGES``) into them."""

    def __init__(self, pieces: Iterable[str], *, latin: bool = False) -> None:
        self.pieces = frozenset(pieces)
        self.longest = max(map(len, self.pieces), default=1)
        self._run = _LATIN_RUN if latin else _RUN
        # Every prefix of a piece, and whether it is one (a match grows while it is a prefix of some piece, a few
        # lookups where trying every length from the longest down would take ``longest``): built at the first cut,
        # as where the C accelerator is built it is never needed.
        self._prefixes: dict[str, bool] | None = None
        # The cut of each run met (with the space before it), up to _CACHED_RUN characters; emptied when it holds
        # _CACHED runs.
        self._cuts: dict[str, int] = {}

    def count(self, text: str) -> tuple[int, int, int]:
        """Pieces of the runs in ``text``, the runs, and their characters: from each position the longest piece
        that matches, or one character where none does; a run after a space starts with the longest piece holding
        the space, if one matches (the space is counted apart, as a space)."""
        cuts, n, runs, chars = self._cuts, 0, 0, 0
        for run in self._run.finditer(text):
            start, end = run.span()
            runs += 1
            chars += end - start
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
        return n, runs, chars

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
        prefixes, best = self._prefixes or self._build(), 0
        for stop in range(start + 1, min(start + self.longest, end) + 1):
            whole = prefixes.get(text[start:stop])
            if whole is None:
                break
            if whole:
                best = stop - start
        return best


    def _build(self) -> dict[str, bool]:
        prefixes: dict[str, bool] = {}
        for piece in self.pieces:
            for end in range(1, len(piece)):
                prefixes.setdefault(piece[:end], False)
        prefixes.update(dict.fromkeys(self.pieces, True))
        self._prefixes = prefixes
        return prefixes


def is_piece(token: str, *, latin: bool = False) -> bool:
    """Whether a vocabulary token (decoded) is a piece: one or more characters of ``PIECE_GROUPS`` (``latin``: of
    ``LATIN_RANGES``), after at most one space."""
    body = token[1:] if token.startswith(" ") else token
    return (_LATIN_RUN if latin else _RUN).fullmatch(body) is not None


# The packaged pieces of each kind: {target: the pieces joined by newlines}.
_FILES = {False: "pieces.json", True: "latin_pieces.json"}


@functools.cache
def target_pieces(target: str, *, latin: bool = False) -> Pieces:
    """The pieces of ``target`` (an encoding name of ``calibration.TARGETS``); ``latin``: its Latin
    ones (a file of their own, read only when a text's Latin words are cut)."""
    text = resources.files("ctxwin.counters._approximate").joinpath(_FILES[latin]).read_text(encoding="utf-8")
    data = json.loads(text)
    return Pieces(data[target].split("\n"), latin=latin)
