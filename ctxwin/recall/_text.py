"""Recall's text rules, one set for the store, a one-off plan's source and the C scanner: what can be stored
(``storable``), how text is folded (``fold``) and where a word ends (``whole_at``); docs/recall.md, "Any text".
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

# Scripts written without spaces between words: Thai, Lao, Myanmar, Khmer, Hiragana/Katakana, Han (Extension A, the
# unified ideographs, the compatibility ideographs, Extensions B-H) and Hangul (spaced, but its particles stick to
# nouns). They are searched in pieces (trigrams, character pairs), and one of their characters ends a word written
# against them as a space does ("ครับPostgreSQLครับ", "𠀀𠀁Zurich", "ip是").
UNSPACED_RANGES: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF), (0xF900, 0xFAFF), (0x20000, 0x323AF),
)


def _class(ranges: Iterable[tuple[int, int]]) -> str:
    """The ranges as the inside of a regular expression's character class."""
    return "".join(f"{chr(first)}-{chr(last)}" for first, last in ranges)


_UNSPACED_CLASS = _class(UNSPACED_RANGES)
UNSPACED = re.compile(f"[{_UNSPACED_CLASS}]+")
# What continues a word: a letter or digit of a script written with spaces. Anything else ends it: a space,
# punctuation, an underscore (FTS5's unicode61 tokenizer splits "quito_support" there: "quito" is a word of it), a
# character of an unspaced script. A word holding an underscore is an identifier, which an underscore continues
# ("_directive" is not in "_directive_options").
_LETTER = re.compile(rf"[^\W_{_UNSPACED_CLASS}]")
_IDENTIFIER = re.compile(rf"[^\W{_UNSPACED_CLASS}]")
# A word as a query names it: letters, digits and underscores of spaced scripts (an identifier stays one word).
WORD = re.compile(rf"[^\W{_UNSPACED_CLASS}]+")
# Code points no UTF-8 text can hold: surrogates (a lone one is what a JSON "\ud800" escape gives).
_SURROGATE = re.compile("[\ud800-\udfff]")
# The diacritics fold takes off a Latin or Greek letter (after NFKD: "é" is "e" and U+0301). A mark after a letter
# of another script stays: Cyrillic "й" is not "и", and a Thai, Devanagari or Hebrew mark is part of its letter.
_DIACRITICS = re.compile("(?<=[a-z\u00df-\u024f\u0370-\u03ff\u1d00-\u1dbf\u1e00-\u1fff\u2c60-\u2c7f\ua720-\ua7ff"
                         "\uab30-\uab6f])[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")
# The lower-case letters and digits (and characters that fold to letters or digits) fold changes: accented Latin and
# Greek letters, compatibility forms (full-width, ligatures, super- and subscripts, circled, mathematical, CJK
# compatibility ideographs), casefold's own (ß, ς). Unicode 14.0's (Python 3.11), ranges closer than 16 merged;
# tests/recall/test_text.py checks every code point against them.
_FOLDED_RANGES: tuple[tuple[int, int], ...] = (
    (0x00aa, 0x00be), (0x00df, 0x017f), (0x01a1, 0x01b0), (0x01c6, 0x0233), (0x02b0, 0x02b8), (0x02e0, 0x02e4),
    (0x0345, 0x0345), (0x0374, 0x037a), (0x0390, 0x0390), (0x03ac, 0x03b0), (0x03c2, 0x03d6), (0x03f0, 0x03f5),
    (0x0587, 0x0587), (0x0675, 0x0678), (0x0958, 0x095f), (0x09dc, 0x09df), (0x0a33, 0x0a36), (0x0a59, 0x0a5e),
    (0x0b5c, 0x0b5d), (0x0e33, 0x0e33), (0x0eb3, 0x0eb3), (0x0edc, 0x0edd), (0x0f43, 0x0f69), (0x10fc, 0x10fc),
    (0x13f8, 0x13fd), (0x1c80, 0x1c88), (0x1d2c, 0x1d78), (0x1d9b, 0x1dbf), (0x1e01, 0x1ff7), (0x2070, 0x20a8),
    (0x2100, 0x215f), (0x2170, 0x2189), (0x2460, 0x24b5), (0x24d0, 0x24ea), (0x2c7c, 0x2c7d), (0x2d6f, 0x2d6f),
    (0x2e9f, 0x2e9f), (0x2ef3, 0x2fd5), (0x3038, 0x303a), (0x309f, 0x309f), (0x30ff, 0x30ff), (0x3131, 0x319f),
    (0x3200, 0x33ff), (0xa69c, 0xa69d), (0xa770, 0xa770), (0xa7f2, 0xa7f9), (0xab5c, 0xabbf), (0xf900, 0xfad9),
    (0xfb00, 0xfbb1), (0xfbd3, 0xfd3d), (0xfd50, 0xfdc7), (0xfdf0, 0xfdfc), (0xfe70, 0xfefc), (0xff10, 0xff19),
    (0xff41, 0xffdc), (0x10781, 0x107ba), (0x1d400, 0x1d7ff), (0x1ee00, 0x1eebb), (0x1f100, 0x1f14f),
    (0x1f16a, 0x1f16c), (0x1f190, 0x1f190), (0x1f200, 0x1f251), (0x1fbf0, 0x1fbf9), (0x2f800, 0x2fa1d),
)
# The marks fold takes off a letter (above) or composes with the character before it (the kana voicing marks, Indic
# nuktas and vowel parts), Hangul's vowel and final jamo, which compose with the jamo or syllable before them, and
# what folds to such a mark (the half-width voicing marks, Hangul's compatibility and half-width jamo).
_MARK_RANGES: tuple[tuple[int, int], ...] = (
    (0x0300, 0x036f), (0x0653, 0x0655), (0x093c, 0x093c), (0x09be, 0x09be), (0x09d7, 0x09d7), (0x0b3e, 0x0b3e),
    (0x0b56, 0x0b57), (0x0bbe, 0x0bbe), (0x0bd7, 0x0bd7), (0x0c56, 0x0c56), (0x0cc2, 0x0cc2), (0x0cd5, 0x0cd6),
    (0x0d3e, 0x0d3e), (0x0d57, 0x0d57), (0x0dca, 0x0dca), (0x0dcf, 0x0dcf), (0x0ddf, 0x0ddf), (0x102e, 0x102e),
    (0x1161, 0x1175), (0x11a8, 0x11c2), (0x1ab0, 0x1aff), (0x1b35, 0x1b35), (0x1dc0, 0x1dff), (0x20d0, 0x20ff),
    (0x3099, 0x309a), (0x3131, 0x318e), (0xfe20, 0xfe2f), (0xff9e, 0xffdc), (0x110ba, 0x110ba), (0x11127, 0x11127),
    (0x1133e, 0x1133e), (0x11357, 0x11357), (0x114b0, 0x114b0), (0x114ba, 0x114ba), (0x114bd, 0x114bd),
    (0x115af, 0x115af), (0x11930, 0x11930),
)


@dataclass(frozen=True)
class _Changes:
    """How ``fold`` finds what it rewrites, in a text where no astral character changes or in any: a search of a
    class of BMP ranges reads a bitmap, one astral range makes it a list of ranges tried one by one at every
    character (twenty times slower)."""

    any: re.Pattern[str]  # a character fold changes
    marks: re.Pattern[str]  # a mark: then a run takes the character before it
    folded: re.Pattern[str]  # runs of folded characters (for split: the runs captured)
    marked: re.Pattern[str]  # runs of folded characters or of any character with the marks after it

    @classmethod
    def of(cls, folded: str, marks: str) -> _Changes:
        return cls(re.compile(f"[{folded}{marks}]"), re.compile(f"[{marks}]"), re.compile(f"([{folded}]+)"),
                   re.compile(f"((?:[{folded}][{marks}]*|.[{marks}]+)+)", re.DOTALL))


_BMP_CHANGES = _Changes.of(_class(r for r in _FOLDED_RANGES if r[1] < 0x10000),
                           _class(r for r in _MARK_RANGES if r[1] < 0x10000))
_ALL_CHANGES = _Changes.of(_class(_FOLDED_RANGES), _class(_MARK_RANGES))
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
# The astral ranges, to look up the few astral characters of a text (emoji, most often) one by one.
_ASTRAL_RANGES = sorted(r for r in (*_FOLDED_RANGES, *_MARK_RANGES) if r[0] >= 0x10000)
_ASTRAL_FIRSTS = [first for first, _ in _ASTRAL_RANGES]


def _changes(char: str) -> bool:
    """Whether fold changes the astral character ``char``."""
    k = bisect.bisect_right(_ASTRAL_FIRSTS, ord(char)) - 1
    return k >= 0 and ord(char) <= _ASTRAL_RANGES[k][1]


def storable(text: str) -> str:
    """``text`` as SQLite, JSON and any UTF-8 request can carry it: each surrogate code point written as its
    ``\\udxxx`` escape (so it is stored, shown and searched as that text). NUL characters and noncharacters are
    valid UTF-8 and stay."""
    if text.isascii():
        return text
    try:
        text.encode()  # only a surrogate fails, and encoding is several times faster than a search for one
    except UnicodeEncodeError:
        return _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)
    return text


def fold(text: str) -> str:
    """``text`` as recall compares it, the index and every check alike: compatibility forms made plain (full-width
    letters, ligatures, circled digits: NFKD), case folded (``str.casefold``: "Straße" is "strasse"), the diacritics
    of Latin and Greek letters taken off ("Zürich" is "zurich", in NFC or NFD), then recomposed (NFC: a Hangul
    syllable stays one character). Only the letters, digits and marks that changes are rewritten (``folded``), the
    rest is ``str.lower``'s: punctuation keeps its form (it bounds words either way), and a text in which nothing
    changes costs a search more than ``str.lower``."""
    if text.isascii():
        return text.lower()
    lowered = text.lower()
    # Only astral characters make UTF-16 longer than two bytes a character: encoding is a copy, faster than a search.
    astral = len(lowered.encode("utf-16-le", "surrogatepass")) > 2 * len(lowered)
    changes = _ALL_CHANGES if astral and any(map(_changes, set(_ASTRAL.findall(lowered)))) else _BMP_CHANGES
    if changes.any.search(lowered) is None:
        return lowered
    parts = (changes.marked if changes.marks.search(lowered) else changes.folded).split(lowered)
    parts[1::2] = map(folded, parts[1::2])
    return "".join(parts)


@functools.lru_cache(maxsize=4096)
def folded(text: str) -> str:
    """All of ``text`` folded (what ``fold`` rewrites: runs of what changes, each a few characters)."""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    return unicodedata.normalize("NFC", _DIACRITICS.sub("", decomposed))


def whole_at(text: str, word: str, start: int = 0) -> int:
    """Where ``word`` first occurs whole in ``text`` from ``start`` on (no letter or digit of a spaced script right
    before or after it, nor an underscore for an identifier), -1 where it does not. Found as a substring, its bounds
    checked after: a regular expression per word costs a compile of the unspaced scripts' class at every plan, and
    one opening with a lookbehind is tried at every character of the text."""
    inside = _IDENTIFIER if "_" in word else _LETTER
    while (at := text.find(word, start)) >= 0:
        if (at == 0 or not inside.match(text, at - 1)) and not inside.match(text, at + len(word)):
            return at
        start = at + 1
    return -1


def spaced(text: str) -> str:
    """``text`` with its runs of unspaced scripts set apart, so that what the full-text index takes for a word is a
    word by ``whole_at`` ("ip是" holds "ip")."""
    return UNSPACED.sub(lambda run: f" {run.group()} ", text) if UNSPACED.search(text) else text
