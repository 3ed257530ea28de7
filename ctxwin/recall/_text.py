"""Recall's text rules, one set for the store, a one-off plan's source and the C scanner: what of a text can be
stored (``storable``), how text is folded before anything is compared (``fold``) and where a word ends
(``UNSPACED_RANGES``, ``whole_at``); docs/recall.md, "Any text", says what each rule does to which text."""

from __future__ import annotations

import re
import unicodedata

# Scripts written without spaces between words: Thai, Lao, Myanmar, Khmer, Hiragana/Katakana, Han (Extension A, the
# unified ideographs, the compatibility ideographs, Extensions B-H) and Hangul (spaced, but its particles stick to
# nouns). They are searched in pieces (trigrams, character pairs), and one of their characters ends a word written
# against them as a space does ("ครับPostgreSQLครับ", "𠀀𠀁Zurich", "ip是").
UNSPACED_RANGES: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF), (0xF900, 0xFAFF), (0x20000, 0x323AF),
)
_UNSPACED_CLASS = "".join(f"{chr(first)}-{chr(last)}" for first, last in UNSPACED_RANGES)
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
# The combining marks that are diacritics of Latin, Greek and Cyrillic letters (a mark of Thai, Devanagari or
# Hebrew is part of a letter of its script and stays).
_DIACRITICS = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")


def storable(text: str) -> str:
    """``text`` as SQLite, JSON and any UTF-8 request can carry it: each surrogate code point written as its
    ``\\udxxx`` escape (so it is stored, shown and searched as that text). NUL characters and noncharacters are
    valid UTF-8 and stay."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def fold(text: str) -> str:
    """``text`` as recall compares it, the index and every check alike: compatibility forms made plain (full-width
    letters, ligatures, circled digits: NFKD), case folded (``str.casefold``: "Straße" is "strasse"), the diacritics
    of Latin, Greek and Cyrillic letters taken off ("Zürich" is "zurich", in NFC or NFD), then recomposed (NFC: a
    Hangul syllable stays one character)."""
    if text.isascii():
        return text.lower()
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
