"""Cheap text statistics that predict BPE token counts, computed at C speed (no per-character Python loop).

o200k/cl100k split text into pre-tokens (letter runs with one leading space or symbol, digit groups,
punctuation runs, newlines) before merging bytes, so token counts follow a few countable things: letter runs
(words), letters (long words cost more pieces), digits, spaces, newlines, punctuation, and for other scripts
the characters of each script block. They are counted with ``bytes.translate`` (one byte per character, named
by its class) and ``bytes.count``, which run at memory speed:

- ASCII text (most English, code and JSON) takes one ``translate`` (which also deletes digits: their count is
  the length difference) and four ``count`` passes;
- other text one ``translate`` that also deletes UTF-8 continuation bytes (so the class string has one byte per
  character and the lead byte names the script block), one more that folds the letter-like scripts into
  words, and per-script counts on the non-ASCII characters only.
"""

from __future__ import annotations

# Class bytes of ASCII: letter, digit, anything else ("x"; spaces and newlines are counted on the raw bytes).
LETTER, DIGIT, OTHER = b"a", b"0", b"x"
# Non-ASCII classes, by UTF-8 lead byte: Latin-1 supplement and Latin extended, Greek/IPA/combining, Cyrillic,
# RTL (Hebrew, Arabic...), Indic/Thai (U+0800-0FFF), other 3-byte (U+1000-1FFF, Yi, private use), symbols
# (U+2000-2FFF), CJK punctuation and kana (U+3000-3FFF), Han (U+4000-9FFF), hangul (U+A000-DFFF), full-width
# ASCII variants and other compatibility forms (U+F000-FFFF), 4-byte characters (emoji, rare Han).
SCRIPT_CLASSES = b"LGCRIXSKHhFE"
# Letter-like scripts whose words are separated by spaces or punctuation: their runs start pre-tokens.
WORD_CLASSES = b"aLGCRIXh"

FEATURES = (
    "letters", "digits", "word_starts", "spaces", "newlines", "punct",
    "latin_ext", "greek", "cyrillic", "rtl", "indic", "other3", "symbols", "kana", "cjk_punct", "han",
    "hangul", "fullwidth", "compat_forms", "astral",
)
# Safe mode's extra statistics: letter-digit boundaries (hex digests, base64, identifiers like "x2y"), which
# start pre-tokens the word count misses; runs of LONG_RUN ASCII letters (long words and identifiers cost
# more pieces); and a constant per text, which covers the larger relative spread of short texts.
SAFE_FEATURES = (*FEATURES, "digit_letter", "letter_digit", "long_runs", "per_text")
LONG_RUN = 8


def safe_features(text: str) -> list[int]:
    """The statistics safe mode adds to ``text_features`` (the last four of ``SAFE_FEATURES``)."""
    classes = text.encode("utf-8").translate(CLASS_TABLE, CONTINUATION)
    return [classes.count(b"0a"), classes.count(b"a0"), classes.count(LETTER * LONG_RUN), 1]


def _class_table() -> bytes:
    table = bytearray(OTHER * 256)
    for i in range(128):
        if chr(i).isalpha():
            table[i] = LETTER[0]
        elif chr(i).isdigit():
            table[i] = DIGIT[0]
    lead_ranges = (
        (range(0xC0, 0xCA), "L"), (range(0xCA, 0xD0), "G"), (range(0xD0, 0xD5), "C"), (range(0xD5, 0xE0), "R"),
        ((0xE0,), "I"), ((0xE1, 0xEE), "X"), ((0xE2,), "S"), ((0xE3,), "K"), (range(0xE4, 0xEA), "H"),
        (range(0xEA, 0xEE), "h"), ((0xEF,), "F"), (range(0xF0, 0x100), "E"),
    )
    for lead_bytes, cls in lead_ranges:
        for b in lead_bytes:
            table[b] = ord(cls)
    # Continuation bytes (0x80-0xBF) are deleted by translate; their entries are never used.
    return bytes(table)


CLASS_TABLE = _class_table()
CONTINUATION = bytes(range(0x80, 0xC0))
# Folds every letter-like script into "a" so that one bigram count finds the word starts of all of them.
WORD_TABLE = bytes(LETTER[0] if b in WORD_CLASSES else b for b in range(256))
ASCII_CLASSES = LETTER + DIGIT + OTHER
DIGITS = b"0123456789"
# CJK symbols and punctuation (U+3000-303F: 、。「」) share the lead byte 0xE3 with kana; their second byte is 0x80.
_CJK_PUNCT_PREFIX = b"\xe3\x80"
# Full-width ASCII variants (U+FF00-FF3F: ，！？（）) are common CJK punctuation; the rest of the lead byte 0xEF
# (Arabic presentation forms, half-width kana, specials) is rare and costs more.
_FULLWIDTH_PREFIX = b"\xef\xbc"


def text_features(text: str) -> tuple[list[int], int]:
    """The counts named by ``FEATURES`` for ``text``, and its UTF-8 length in bytes.

    Digits are deleted from the string whose letter runs are counted, so a word start is a letter after a
    space, newline or punctuation; digit counts come from the lengths (ASCII) or a count (other text).
    """
    raw = text.encode("utf-8")
    spaces, newlines = raw.count(b" "), raw.count(b"\n")
    if text.isascii():
        words = raw.translate(CLASS_TABLE, DIGITS)
        letters = words.count(LETTER)
        word_starts = words.count(b"xa") + (words[:1] == LETTER)
        digits = len(raw) - len(words)
        punct = len(words) - letters - spaces - newlines
        return [letters, digits, word_starts, spaces, newlines, punct, *_NO_SCRIPTS], len(raw)
    classes = raw.translate(CLASS_TABLE, CONTINUATION)
    words = classes.translate(WORD_TABLE, DIGIT)
    scripts = classes.translate(None, ASCII_CLASSES)
    letters = classes.count(LETTER)
    word_starts = words.count(b"xa") + (words[:1] == LETTER)
    digits = len(classes) - len(words)
    punct = len(words) - len(scripts) - letters - spaces - newlines
    counts = [letters, digits, word_starts, spaces, newlines, punct]
    counts += [scripts.count(c) for c in b"LGCRIXS"]
    kana_and_punct = scripts.count(b"K")
    cjk_punct = raw.count(_CJK_PUNCT_PREFIX) if kana_and_punct else 0
    counts += [kana_and_punct - cjk_punct, cjk_punct, scripts.count(b"H"), scripts.count(b"h")]
    forms = scripts.count(b"F")
    fullwidth = raw.count(_FULLWIDTH_PREFIX) if forms else 0
    counts += [fullwidth, forms - fullwidth, scripts.count(b"E")]
    return counts, len(raw)


_NO_SCRIPTS = (0,) * (len(FEATURES) - 6)
