"""Cheap text statistics that predict BPE token counts, computed without a per-character Python loop.

o200k/cl100k split text into pre-tokens (letter runs with one leading space or symbol, digit groups,
punctuation runs, newlines, whitespace runs) before merging bytes, so token counts follow a few countable
things: letter runs (words), letters (long words cost more pieces), digits, spaces, runs of two or more spaces
(indentation: about one token each, whatever their width), newlines, punctuation, and for other scripts the
characters of each script group (``approximate_scripts``). They are counted at memory speed:

- ``bytes.translate`` turns the text into one byte per character naming its class (for non-ASCII characters
  the block read from the UTF-8 lead byte, enough to tell letters of spaced scripts from the rest; continuation
  bytes and digits are deleted, their counts are length differences), and ``bytes.count`` counts classes;
- letters, spaces and runs (word starts, runs of spaces) come from a flag string (a bit for letter-like
  characters, one for spaces) read as one big integer: ``flags ^ (flags << 8)`` marks where runs start and
  end, ``flags & (flags << 8)`` the characters that continue one, and ``int.bit_count`` counts the bits
  under a mask. A bit operation costs about a fifth of a ``bytes.count`` pass, a bit count about one pass;
  together they are two to three times faster than ``bytes.count`` of two-byte patterns;
- text that is mostly ASCII skips the class string: its flags come straight from the UTF-8 bytes, and only its
  few non-ASCII characters are classed.

Two statistics separate text that a script count cannot, because the same script costs very different amounts
in the two vocabularies: Ukrainian letters (і ї є, either case: Ukrainian costs ~40% more tokens a character
than Russian) and a few very common Traditional Chinese characters (們 個 這 說: Traditional costs ~15-40% more
than Simplified). Each is one or a few ``count`` calls, made only when the script (and the letter) is present.
"""

from __future__ import annotations

from ctxwin.counters.approximate_scripts import GROUPS, group_codes, script_counts

# Class bytes of ASCII: letter, digit, space, newline, anything else.
LETTER, DIGIT, SPACE, NEWLINE, OTHER = b"a", b"0", b"s", b"n", b"x"
# Non-ASCII classes, by UTF-8 lead byte: Latin-1 supplement and Latin extended, Greek/IPA/combining, Cyrillic,
# RTL (Hebrew, Arabic...), Indic/Thai (U+0800-0FFF), other 3-byte (U+1000-1FFF, Yi, private use), symbols
# (U+2000-2FFF), CJK punctuation and kana (U+3000-3FFF), Han (U+4000-9FFF), hangul (U+A000-DFFF), full-width
# ASCII variants and other compatibility forms (U+F000-FFFF), 4-byte characters (emoji, rare Han).
# Letter-like classes (spaced scripts): their runs are words, and the ASCII letters are the runs' other characters.
WORD_CLASSES = b"aLGCRIXh"
_WORD_SCRIPT_CLASSES = WORD_CLASSES[1:]

# The statistics of ASCII text come first; the script counts after them are all zero for it.
ASCII_FEATURES = ("letters", "digits", "word_starts", "spaces", "space_runs", "newlines", "punct")
# Then two statistics that separate text a script count cannot (see the module docstring), then the characters of
# each script group (``approximate_scripts.GROUPS``).
FEATURES = (*ASCII_FEATURES, "ukrainian", "traditional", *GROUPS)
# Safe mode's extra statistics: letter-digit boundaries (hex digests, base64, identifiers like "x2y"), which
# start pre-tokens the word count misses; lower-to-upper case changes (camelCase identifiers: "GetCoreSchema" is
# three pre-tokens); runs of LONG_RUN ASCII letters (long words and identifiers cost more pieces); and a
# constant per text, which covers the larger relative spread of short texts.
SAFE_FEATURES = (*FEATURES, "digit_letter", "letter_digit", "case_changes", "long_runs", "long_words", "per_text")
LONG_RUN = 8
# Runs of LONG_WORD letters of any script without a space or punctuation: no language writes words that long, random
# strings do (``long_words`` counts such runs, one per LONG_WORD letters).
LONG_WORD = 16
_LONG_WORDS = SAFE_FEATURES.index("long_words") - len(FEATURES)

# Safe mode fits one upper bound per family of text, picked from the statistics above (see ``safe_family``):
# a single bound for all text has to cover the most expensive language in every class it shares, so English
# would pay for Indonesian and code for Italian.
FAMILIES = (
    "english", "ascii_symbolic", "ascii_ids", "ascii", "latin", "chinese", "japanese", "korean", "cyrillic", "other",
)


def looks_random(extra: list[int], length: int) -> bool:
    """Whether a text whose ``safe_features`` are ``extra`` has at least half its characters in runs of
    ``LONG_WORD`` letters: a random string of a spaced script, which safe mode bounds apart."""
    return extra[_LONG_WORDS] * LONG_WORD * 2 > length


def safe_features(text: str) -> list[int]:
    """The statistics safe mode adds to ``text_features`` (the last six of ``SAFE_FEATURES``)."""
    raw = text.encode("utf-8")
    classes = raw.translate(CLASS_TABLE, CONTINUATION)
    case_changes = raw.translate(_CASE_TABLE).count(b"lu")
    long_words = classes.translate(FLAG_TABLE).count(_LONG_WORD)
    return [classes.count(b"0a"), classes.count(b"a0"), case_changes, classes.count(LETTER * LONG_RUN), long_words,
            1]


_INDEX = {name: i for i, name in enumerate(FEATURES)}
_LETTERS, _LATIN_EXT, _DIGITS, _PUNCT, _WORDS = (
    _INDEX[n] for n in ("letters", "latin_ext", "digits", "punct", "word_starts"))
_LATIN1, _CYRILLIC, _HAN, _HANGUL = (_INDEX[n] for n in ("latin1", "cyrillic", "han", "hangul"))
_KANA = tuple(_INDEX[n] for n in ("kana", "katakana"))
# Letters of scripts other than Latin, Cyrillic and CJK (symbols, punctuation and emoji are in no family).
_OTHER_SCRIPTS = tuple(_INDEX[n] for n in GROUPS if n not in {
    "latin1", "latin_ext", "cyrillic", "han", "kana", "katakana", "hangul", "cjk_punct", "cjk_misc", "punctuation",
    "symbols", "box", "dingbats", "astral", "emoji", "forms", "fullwidth"})


def safe_family(counts: list[int], text: str, boundaries: int = 0) -> str:
    """The family (one of ``FAMILIES``) whose safe bound applies to a text with statistics ``counts``.

    The script with the most characters decides (CJK split by kana and hangul); Latin text with accented
    letters is ``latin``; ASCII text where letters and digits meet often (``boundaries``, from ``safe_features``:
    digests, base64, UUIDs) is ``ascii_ids``; ASCII text dense in punctuation and digits (code, JSON, Markdown) is
    ``ascii_symbolic``; ASCII prose where " the " is frequent is ``english``, other ASCII prose ``ascii``.
    A text put in a wider family than it belongs to is only over-counted more.
    """
    accented = counts[_LATIN1] + counts[_LATIN_EXT]
    latin = counts[_LETTERS] + accented
    kana = sum(counts[i] for i in _KANA)
    cjk = counts[_HAN] + kana + counts[_HANGUL]
    cyrillic = counts[_CYRILLIC]
    other = sum(counts[i] for i in _OTHER_SCRIPTS)
    top = max(latin, cjk, cyrillic, other)
    if top == cjk and cjk:
        if kana * 20 > cjk:
            return "japanese"
        return "korean" if counts[_HANGUL] > counts[_HAN] else "chinese"
    if top == cyrillic and cyrillic:
        return "cyrillic"
    if top == other and other:
        return "other"
    if accented * 100 > latin:
        return "latin"
    if boundaries * 8 > latin:
        # Letters and digits alternating (hex digests, base64, UUIDs, hashes in lock files): ``boundaries`` is the
        # number of places where a letter and a digit meet.
        return "ascii_ids"
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
# The script groups (``approximate_scripts``) with characters under each non-ASCII lead-byte class.
_CLASS_GROUPS = tuple((ord(cls), group_codes(names)) for cls, names in (
    ("L", ("latin_ext",)), ("G", ("latin_ext", "greek", "combining")), ("C", ("cyrillic", "armenian")),
    ("R", ("armenian", "hebrew", "arabic", "syriac", "thaana")),
    ("I", ("arabic", "devanagari", "bengali", "gurmukhi", "gujarati", "oriya", "tamil", "telugu", "kannada",
           "malayalam", "sinhala", "thai", "lao", "tibetan")),
    ("X", ("myanmar", "georgian", "ethiopic", "cherokee", "khmer", "mongolian", "latin_ext", "greek", "rare")),
    ("S", ("punctuation", "symbols", "box", "dingbats", "braille", "rare")),
    ("K", ("kana", "katakana", "cjk_punct", "cjk_misc", "han_ext")), ("H", ("han_ext", "han")),
    ("h", ("yi", "rare", "latin_ext", "hangul")), ("F", ("rare", "forms", "fullwidth")), ("E", ("astral", "emoji")),
))
# ASCII lower case letters to "l", upper case to "u", anything else to "x" (case changes, for safe mode).
_CASE_TABLE = bytes(ord("l") if chr(b).islower() and b < 128 else ord("u") if chr(b).isupper() and b < 128
                    else ord("x") for b in range(256))
CONTINUATION = bytes(range(0x80, 0xC0))
_LONG_WORD = b"\x01" * LONG_WORD
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
_UKRAINIAN = tuple("іїєІЇЄ")
_CYRILLIC_GROUP, _HAN_GROUP = GROUPS.index("cyrillic"), GROUPS.index("han")
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
    # The lead-byte classes of letter-like scripts, to tell ASCII letters from the others.
    word_scripts = sum([classes.count(c) for c in _WORD_SCRIPT_CLASSES if c in classes])
    letters = word_like - word_scripts
    # The flags have a byte for every character but the digits; ASCII punctuation is what no class took.
    digits = len(text) - len(flags)
    candidates = set().union(*[groups for cls, groups in _CLASS_GROUPS if cls in classes])
    scripts = script_counts(text, raw, candidates)
    punct = len(flags) - letters - spaces - newlines - sum(scripts)
    # The rarer letters are counted only when present (``in`` is a fast search; each ``count`` a full pass).
    ukrainian = sum([text.count(c) for c in _UKRAINIAN if c in text]) if scripts[_CYRILLIC_GROUP] else 0
    traditional = sum([text.count(c) for c in _TRADITIONAL if c in text]) if scripts[_HAN_GROUP] else 0
    return [letters, digits, word_starts, spaces, space_runs, newlines, punct, ukrainian, traditional,
            *scripts], len(raw)


_NO_SCRIPTS = (0,) * (len(FEATURES) - len(ASCII_FEATURES))
