"""Cheap text statistics that predict BPE token counts, computed without a per-character Python loop.

o200k/cl100k split text into pre-tokens (letter runs with one leading space or symbol, digit groups,
punctuation runs, newlines, whitespace runs) before merging bytes, so token counts follow a few countable
things: letter runs (words), letters (long words cost more pieces), digits, spaces, runs of two or more spaces
(indentation: about one token each, whatever their width), newlines, punctuation, and for other scripts the
characters of each script block. They are counted at memory speed:

- ``bytes.translate`` turns the text into one byte per character naming its class (for non-ASCII characters
  the script block read from the UTF-8 lead byte; continuation bytes and digits are deleted, their counts are
  length differences), and ``bytes.count`` counts classes;
- letters, spaces and runs (word starts, runs of spaces) come from a flag string (a bit for letter-like
  characters, one for spaces) read as one big integer: ``flags ^ (flags << 8)`` marks where runs start and
  end, ``flags & (flags << 8)`` the characters that continue one, and ``int.bit_count`` counts the bits
  under a mask. A bit operation costs about a fifth of a ``bytes.count`` pass, a bit count about one pass;
  together they are two to three times faster than ``bytes.count`` of two-byte patterns;
- text that is mostly ASCII skips the class string: its flags come straight from the UTF-8 bytes, and only its
  few non-ASCII characters are classed.

Three statistics separate text that a lead byte cannot, because the same script costs very different amounts
in the two vocabularies: Ukrainian letters (і ї є, either case: Ukrainian costs ~40% more tokens a character
than Russian), a few very common Traditional Chinese characters (們 個 這 說: Traditional costs ~15-40% more
than Simplified) and katakana (loanwords, pricier than hiragana). Each is one or a few ``count`` calls, made
only when the script (and, for the letters, the letter) is present.
"""

from __future__ import annotations

# Class bytes of ASCII: letter, digit, space, newline, anything else.
LETTER, DIGIT, SPACE, NEWLINE, OTHER = b"a", b"0", b"s", b"n", b"x"
# Non-ASCII classes, by UTF-8 lead byte: Latin-1 supplement and Latin extended, Greek/IPA/combining, Cyrillic,
# RTL (Hebrew, Arabic...), Indic/Thai (U+0800-0FFF), other 3-byte (U+1000-1FFF, Yi, private use), symbols
# (U+2000-2FFF), CJK punctuation and kana (U+3000-3FFF), Han (U+4000-9FFF), hangul (U+A000-DFFF), full-width
# ASCII variants and other compatibility forms (U+F000-FFFF), 4-byte characters (emoji, rare Han).
SCRIPT_CLASSES = b"LGCRIXSKHhFE"
# Letter-like scripts whose words are separated by spaces or punctuation: their runs start pre-tokens.
WORD_CLASSES = b"aLGCRIXh"

# The statistics of ASCII text come first; the script counts after them are all zero for it.
ASCII_FEATURES = ("letters", "digits", "word_starts", "spaces", "space_runs", "newlines", "punct")
FEATURES = (
    *ASCII_FEATURES,
    "latin_ext", "greek", "cyrillic", "ukrainian", "rtl", "indic", "other3", "symbols",
    "kana", "katakana", "cjk_punct", "han", "traditional", "hangul", "fullwidth", "compat_forms", "astral",
)
# Safe mode's extra statistics: letter-digit boundaries (hex digests, base64, identifiers like "x2y"), which
# start pre-tokens the word count misses; lower-to-upper case changes (camelCase identifiers: "GetCoreSchema" is
# three pre-tokens); runs of LONG_RUN ASCII letters (long words and identifiers cost more pieces); and a
# constant per text, which covers the larger relative spread of short texts.
SAFE_FEATURES = (*FEATURES, "digit_letter", "letter_digit", "case_changes", "long_runs", "per_text")
LONG_RUN = 8

# Safe mode fits one upper bound per family of text, picked from the statistics above (see ``safe_family``):
# a single bound for all text has to cover the most expensive language in every class it shares, so English
# would pay for Indonesian and code for Italian.
FAMILIES = (
    "english", "ascii_symbolic", "ascii", "latin", "chinese", "japanese", "korean", "cyrillic", "other",
)


def safe_features(text: str) -> list[int]:
    """The statistics safe mode adds to ``text_features`` (the last five of ``SAFE_FEATURES``)."""
    raw = text.encode("utf-8")
    classes = raw.translate(CLASS_TABLE, CONTINUATION)
    case_changes = raw.translate(_CASE_TABLE).count(b"lu")
    return [classes.count(b"0a"), classes.count(b"a0"), case_changes, classes.count(LETTER * LONG_RUN), 1]


_INDEX = {name: i for i, name in enumerate(FEATURES)}
_LETTERS, _LATIN_EXT, _DIGITS, _PUNCT, _WORDS = (
    _INDEX[n] for n in ("letters", "latin_ext", "digits", "punct", "word_starts"))
_CYRILLIC, _HAN, _KANA, _HANGUL = (_INDEX[n] for n in ("cyrillic", "han", "kana", "hangul"))
_OTHER_SCRIPTS = tuple(_INDEX[n] for n in ("greek", "rtl", "indic", "other3"))


def safe_family(counts: list[int], text: str) -> str:
    """The family (one of ``FAMILIES``) whose safe bound applies to a text with statistics ``counts``.

    The script with the most characters decides (CJK split by kana and hangul); Latin text with accented
    letters is ``latin``; ASCII text dense in punctuation and digits (code, JSON, Markdown) is ``ascii_symbolic``; ASCII
    prose where " the " is frequent is ``english``, other ASCII prose ``ascii``.
    A text put in a wider family than it belongs to is only over-counted more.
    """
    latin = counts[_LETTERS] + counts[_LATIN_EXT]
    cjk = counts[_HAN] + counts[_KANA] + counts[_HANGUL]
    cyrillic = counts[_CYRILLIC]
    other = sum(counts[i] for i in _OTHER_SCRIPTS)
    top = max(latin, cjk, cyrillic, other)
    if top == cjk and cjk:
        if counts[_KANA] * 20 > cjk:
            return "japanese"
        return "korean" if counts[_HANGUL] > counts[_HAN] else "chinese"
    if top == cyrillic and cyrillic:
        return "cyrillic"
    if top == other and other:
        return "other"
    if counts[_LATIN_EXT] * 100 > latin:
        return "latin"
    if (counts[_PUNCT] + counts[_DIGITS]) * 10 > latin:
        return "ascii_symbolic"
    if text.count(" the ") * 60 >= counts[_WORDS] > 0:
        return "english"
    return "ascii"


def _class_table() -> bytes:
    table = bytearray(OTHER * 256)
    for i in range(128):
        if chr(i).isalpha():
            table[i] = LETTER[0]
        elif chr(i).isdigit():
            table[i] = DIGIT[0]
    table[ord(" ")], table[ord("\n")] = SPACE[0], NEWLINE[0]
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
# ASCII lower case letters to "l", upper case to "u", anything else to "x" (case changes, for safe mode).
_CASE_TABLE = bytes(ord("l") if chr(b).islower() and b < 128 else ord("u") if chr(b).isupper() and b < 128
                    else ord("x") for b in range(256))
CONTINUATION = bytes(range(0x80, 0xC0))
# Flag bits of the class string read as an integer (see ``_run_counts``): letter-like scripts, spaces.
_WORD_BIT, _SPACE_BIT = 0x01, 0x02
FLAG_TABLE = bytes(_WORD_BIT if b in WORD_CLASSES else _SPACE_BIT if b == SPACE[0] else 0 for b in range(256))
# The flags of UTF-8 bytes (a lead byte stands for its character; continuation bytes are deleted before use).
BYTE_FLAG_TABLE = bytes(FLAG_TABLE[c] for c in CLASS_TABLE)
# Masks selecting one flag in every byte; longer texts are read in chunks of _CHUNK characters, each with the
# two characters before it (a run of spaces is found from a character's two predecessors). The word mask has
# one byte more, where the shifted flags close a run that ends the chunk.
_CHUNK, _OVERLAP = 1 << 16, 2
_WORD_MASK = int.from_bytes(bytes([_WORD_BIT]) * (_CHUNK + _OVERLAP + 1), "little")
_SPACE_MASK = int.from_bytes(bytes([_SPACE_BIT]) * (_CHUNK + _OVERLAP), "little")
DIGITS = b"0123456789"
_DIGITS_AND_CONTINUATION = DIGITS + CONTINUATION
_ASCII_AND_CONTINUATION = bytes(range(0xC0))
# Below one multi-byte character in this many, text takes the mostly-ASCII way through ``text_features``.
_MOSTLY_ASCII = 8
# CJK symbols and punctuation (U+3000-303F: 、。「」) share the lead byte 0xE3 with kana; their second byte is 0x80.
_CJK_PUNCT_PREFIX = b"\xe3\x80"
# Katakana U+30C0-30FF (most of the block) starts with these two bytes; hiragana never does.
_KATAKANA_PREFIX = b"\xe3\x83"
# Full-width ASCII variants (U+FF00-FF3F: ，！？（）) are common CJK punctuation; the rest of the lead byte 0xEF
# (Arabic presentation forms, half-width kana, specials) is rare and costs more.
_FULLWIDTH_PREFIX = b"\xef\xbc"
_UKRAINIAN = tuple("іїєІЇЄ")
_TRADITIONAL = tuple("們個這說")


def _run_counts(flags: bytes) -> tuple[int, int, int, int]:
    """Letter-like characters, word starts, spaces and runs of two or more spaces, from a flag string."""
    if len(flags) <= _CHUNK:
        return _chunk_run_counts(int.from_bytes(flags, "little"))
    counts = _chunk_run_counts(int.from_bytes(flags[:_CHUNK], "little"))
    for i in range(_CHUNK, len(flags), _CHUNK):
        # The chunk is read with the characters before it (a run of spaces looks two characters back), whose
        # own counts, the same read alone, are taken off.
        more = _chunk_run_counts(int.from_bytes(flags[i - _OVERLAP : i + _CHUNK], "little"))
        head = _chunk_run_counts(int.from_bytes(flags[i - _OVERLAP : i], "little"))
        counts = (counts[0] + more[0] - head[0], counts[1] + more[1] - head[1],
                  counts[2] + more[2] - head[2], counts[3] + more[3] - head[3])
    return counts


def _chunk_run_counts(x: int) -> tuple[int, int, int, int]:
    """``_run_counts`` of a flag string read as a little-endian integer ``x``.

    ``x << 8`` puts each character's flags under the next character's, so ``x ^ (x << 8)`` marks where a run
    starts and the character after one ends: every run of letters marks two, so word starts are half of them
    (the shifted integer is a byte longer than ``x``, so a run at the very end is closed too). ``x & (x << 8)``
    keeps the spaces that continue a run; prose rarely has any, and then the run count is skipped (a bit count
    costs about as much as a ``bytes.count`` pass).
    """
    after = x << 8
    doubled = x & after & _SPACE_MASK  # spaces right after a space
    letters = (x & _WORD_MASK).bit_count()
    word_starts = ((x ^ after) & _WORD_MASK).bit_count() >> 1
    if doubled:
        return letters, word_starts, x.bit_count() - letters, (doubled & (doubled ^ (doubled << 8))).bit_count()
    return letters, word_starts, x.bit_count() - letters, 0


def ascii_counts(raw: bytes) -> tuple[int, int, int, int, int, int, int]:
    """The ``ASCII_FEATURES`` of ASCII text given as its bytes: the whole statistics of such text.

    Digits are deleted from the string whose letter runs are counted, so a word start is a letter after
    anything but a letter or a digit; the digit count is the length difference.
    """
    flags = raw.translate(BYTE_FLAG_TABLE, DIGITS)
    letters, word_starts, spaces, space_runs = _run_counts(flags)
    newlines = raw.count(b"\n")
    n = len(flags)
    return letters, len(raw) - n, word_starts, spaces, space_runs, newlines, n - letters - spaces - newlines


def text_features(text: str) -> tuple[list[int], int]:
    """The counts named by ``FEATURES`` for ``text``, and its UTF-8 length in bytes (digits as in ``ascii_counts``)."""
    raw = text.encode()
    if text.isascii():
        return [*ascii_counts(raw), *_NO_SCRIPTS], len(raw)
    if (len(raw) - len(text)) * _MOSTLY_ASCII < len(text):
        # Mostly ASCII (prose with a few curly quotes or accents): the flags come from the bytes in one translate,
        # and the classes only of the few non-ASCII characters are kept.
        flags = raw.translate(BYTE_FLAG_TABLE, _DIGITS_AND_CONTINUATION)
        classes = raw.translate(CLASS_TABLE, _ASCII_AND_CONTINUATION)
        newlines = raw.count(b"\n")
    else:
        # Every character's class, the flags from them; the script classes are counted among the ASCII ones (a
        # string of script characters only would cost a deleting translate, slow where scripts and ASCII
        # alternate as in Cyrillic).
        classes = raw.translate(CLASS_TABLE, CONTINUATION)
        flags = classes.translate(FLAG_TABLE, DIGIT)
        newlines = classes.count(NEWLINE)
    word_like, word_starts, spaces, space_runs = _run_counts(flags)
    # Most texts use one or two scripts: a memchr-speed membership test skips the counts of absent ones.
    latin_ext, greek, cyrillic, rtl, indic, other3, symbols, kana_and_punct, han, hangul, forms, astral = [
        classes.count(c) if c in classes else 0 for c in SCRIPT_CLASSES]
    word_scripts = latin_ext + greek + cyrillic + rtl + indic + other3 + hangul
    letters = word_like - word_scripts
    # The flags have a byte for every character but the digits.
    digits = len(text) - len(flags)
    punct = len(flags) - word_scripts - symbols - kana_and_punct - han - forms - astral - letters - spaces - newlines
    # The rarer letters are counted only when present (``in`` is a fast search; each ``count`` a full pass).
    ukrainian = sum([text.count(c) for c in _UKRAINIAN if c in text]) if cyrillic else 0
    cjk_punct = raw.count(_CJK_PUNCT_PREFIX) if kana_and_punct else 0
    katakana = raw.count(_KATAKANA_PREFIX) if kana_and_punct > cjk_punct else 0
    traditional = sum([text.count(c) for c in _TRADITIONAL if c in text]) if han else 0
    fullwidth = raw.count(_FULLWIDTH_PREFIX) if forms else 0
    return [
        letters, digits, word_starts, spaces, space_runs, newlines, punct,
        latin_ext, greek, cyrillic, ukrainian, rtl, indic, other3, symbols,
        kana_and_punct - cjk_punct, katakana, cjk_punct, han, traditional, hangul,
        fullwidth, forms - fullwidth, astral,
    ], len(raw)


_NO_SCRIPTS = (0,) * (len(FEATURES) - len(ASCII_FEATURES))
