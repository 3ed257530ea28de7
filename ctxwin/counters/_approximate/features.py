"""Cheap text statistics that predict BPE token counts, computed at memory speed without a per-character Python loop.
The statistics and the byte tricks that count them: docs/approximate.md.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from ctxwin.counters._approximate.pieces import LATIN_RANGES, PIECE_GROUPS, PIECE_RANGES, Pieces
from ctxwin.counters._approximate.scripts import GROUPS, code_tables, prefix_range, script_parts

# Class bytes of ASCII: letter, digit, space, newline, anything else.
LETTER, DIGIT, SPACE, NEWLINE, OTHER = b"a", b"0", b"s", b"n", b"x"
# Non-ASCII classes, by UTF-8 lead byte: Latin-1 supplement and Latin extended, Greek/IPA/combining, Cyrillic,
# RTL (Hebrew, Arabic...), Indic/Thai (U+0800-0FFF), other 3-byte (U+1000-1FFF, Yi, private use), symbols
# (U+2000-2FFF), CJK punctuation and kana (U+3000-3FFF), Han (U+4000-9FFF), hangul (U+A000-DFFF), full-width
# ASCII variants and other compatibility forms (U+F000-FFFF), 4-byte characters (emoji, rare Han).
# Letter-like classes (spaced scripts): their runs are words, and the ASCII letters are the runs' other characters.
WORD_CLASSES = b"aLGCRIXh"

# The statistics of ASCII text come first; the script counts after them are all zero for it.
ASCII_FEATURES = ("letters", "digits", "word_starts", "spaces", "space_runs", "newlines", "punct")
# Then statistics that separate text a script count cannot (docs/approximate.md), then the characters of each
# script group (``scripts.GROUPS``). ``cherokee_ethiopic`` is the number of code points in U+1380-U+13BF
# (UTF-8 prefix E1 8E: the Ethiopic Supplement and the first 32 Cherokee letters, U+13A0-13BF, which the
# "ethiopic" group holds: the "cherokee" group is U+13C0-13FF), counted only when the "ethiopic" group is present.
# ``cantonese`` is the number of code points among U+5605 嘅, U+55BA 喺, U+54CB 哋, U+54D7 咗, U+569F 嚟 (written
# Cantonese's commonest particles, absent from Mandarin), counted only when the "han" group is present.
# ``pieces`` is the number of vocabulary pieces of the words of ``pieces.PIECE_GROUPS`` and
# ``piece_words`` the number of those words (statistics of the target: counted when a ``Pieces`` table is given and
# one of those groups is present). Their words are also in ``word_starts``, whose weight is English's and code's:
# ``piece_words`` takes it off, with a weight of its own (the only one that may be negative). ``latin_pieces`` is
# the number of vocabulary pieces of the Latin words of a text that ``cut_latin`` cuts, whose letters and words then
# leave the other statistics. The C accelerator takes "piece_words" and "latin_pieces" to follow "pieces".
FEATURES = (*ASCII_FEATURES, "ukrainian", "cyrillic_ext", "traditional", "cherokee_ethiopic", "cantonese", "pieces",
            "piece_words", "latin_pieces", *GROUPS)
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
    "english", "ascii_symbolic", "ascii_ids", "ascii", "latin", "chinese", "japanese", "korean", "cyrillic",
    "cyrillic_ext", "other",
)


def looks_random(extra: list[int], length: int) -> bool:
    """Whether a text whose ``safe_features`` are ``extra`` has at least half its characters in runs of
    ``LONG_WORD`` letters: a random string of a spaced script, which safe mode bounds apart."""
    return extra[_LONG_WORDS] * LONG_WORD * 2 > length


def safe_features(text: str, counts: list[int] | None = None) -> list[int]:
    """The statistics safe mode adds to ``text_features`` (the last six of ``SAFE_FEATURES``); given the text's
    ``counts`` (``text_features``), the passes that must find nothing (no digits, too few letters) are skipped."""
    raw = text.encode("utf-8")
    classes = raw.translate(CLASS_TABLE, CONTINUATION)
    letters, digits = (counts[_LETTERS], counts[_DIGITS]) if counts else (len(text), len(text))
    ids = letters and digits
    case_changes = raw.translate(_CASE_TABLE).count(b"lu") if letters > 1 else 0
    long_words = classes.translate(FLAG_TABLE).count(_LONG_WORD)
    return [classes.count(b"0a") if ids else 0, classes.count(b"a0") if ids else 0, case_changes,
            classes.count(LETTER * LONG_RUN) if letters >= LONG_RUN else 0, long_words, 1]


_INDEX = {name: i for i, name in enumerate(FEATURES)}
_LETTERS, _LATIN_EXT, _VIETNAMESE, _DIGITS, _PUNCT, _WORDS = (
    _INDEX[n] for n in ("letters", "latin_ext", "vietnamese", "digits", "punct", "word_starts"))
_LATIN1, _CYRILLIC, _HAN, _HANGUL, _NEWLINES = (_INDEX[n] for n in ("latin1", "cyrillic", "han", "hangul", "newlines"))
_CYRILLIC_EXT, _ARMENIAN, _COMBINING, _RARE = (_INDEX[n] for n in ("cyrillic_ext", "armenian", "combining", "rare"))
_KANA = _INDEX["kana"], _INDEX["katakana"]
# Letters of scripts other than Latin, Cyrillic and CJK (symbols, punctuation and emoji are in no family), read
# with one C-level ``itemgetter`` call.
_OTHER_SCRIPTS = operator.itemgetter(*(_INDEX[n] for n in GROUPS if n not in {
    "latin1", "latin_ext", "vietnamese", "cyrillic", "han", "kana", "katakana", "hangul", "cjk_punct", "cjk_misc",
    "punctuation", "symbols", "box", "dingbats", "astral", "emoji", "forms", "fullwidth"}))


# Texts shorter than this (UTF-8 bytes) are bounded by their byte count in safe mode.
SHORT_TEXT = 32
# Texts shorter than this that mix writing systems are bounded by their byte count in safe mode: the adversarial
# property test found texts of 40 to 52 bytes (Korean words among Latin, Cyrillic and Han) under the family bounds.
MIXED_SHORT_TEXT = 96
# The writing system of each script group's feature: Latin with its extensions, the CJK groups as one (Japanese mixes
# kana and Han), each other script its own; punctuation, symbols, emoji and other non-letter groups have none.
SYSTEM_OF_FEATURE: dict[int, str] = {
    FEATURES.index(group): {"latin1": "latin", "latin_ext": "latin", "vietnamese": "latin", "kana": "cjk",
                            "katakana": "cjk", "han": "cjk",
                            "han_ext": "cjk", "cjk_misc": "cjk"}.get(group, group)
    for group in GROUPS
    if group not in {"punctuation", "symbols", "box", "dingbats", "braille", "cjk_punct", "emoji", "forms",
                     "fullwidth", "combining", "astral", "rare"}
} | {FEATURES.index("latin_pieces"): "latin"}


def writing_systems(counts: Sequence[int], parts: Sequence[tuple[int, int]]) -> int:
    """How many writing systems the text's letters come from (ASCII letters are Latin)."""
    systems = {SYSTEM_OF_FEATURE[index] for index, n in parts if n and index in SYSTEM_OF_FEATURE}
    if counts[_LETTERS]:
        systems.add("latin")
    return len(systems)


def safe_family(counts: list[int], text: str, boundaries: int = 0) -> str:
    """The family (one of ``FAMILIES``) whose safe bound applies to a text with statistics ``counts``.

    The script with the most characters decides (CJK split by kana and hangul, Cyrillic by the share of letters
    Russian and Ukrainian do not use); Latin text with accented
    letters is ``latin``; ASCII text where letters and digits meet often (``boundaries``, from ``safe_features``:
    digests, base64, UUIDs) is ``ascii_ids``; ASCII text dense in punctuation and digits (code, JSON, Markdown) is
    ``ascii_symbolic``; ASCII prose where " the " is frequent is ``english``, other ASCII prose ``ascii``.
    A text put in a wider family than it belongs to is only over-counted more.
    """
    accented = counts[_LATIN1] + counts[_LATIN_EXT] + counts[_VIETNAMESE]
    latin = counts[_LETTERS] + accented
    kana = counts[_KANA[0]] + counts[_KANA[1]]
    cjk = counts[_HAN] + kana + counts[_HANGUL]
    cyrillic = counts[_CYRILLIC]
    other = sum(_OTHER_SCRIPTS(counts))
    top = max(latin, cjk, cyrillic, other)
    if top == cjk and cjk:
        if kana * 20 > cjk:
            return "japanese"
        return "korean" if counts[_HANGUL] > counts[_HAN] else "chinese"
    if top == cyrillic and cyrillic:
        # Russian and Ukrainian, or other alphabets (letters of U+0480-04FF or of the Cyrillic supplement, which
        # is in the Armenian block) and Church Slavonic (combining marks, Cyrillic extensions among the "rare").
        unusual = counts[_CYRILLIC_EXT] + counts[_ARMENIAN] + counts[_COMBINING] + counts[_RARE]
        return "cyrillic_ext" if unusual * 50 > cyrillic else "cyrillic"
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
_UKRAINIAN = tuple("іїєІЇЄ")
_TRADITIONAL = tuple("們個這說")
_CANTONESE = tuple("嘅喺哋咗嚟")


def _run_counts(flags: bytes) -> tuple[int, int, int, int]:
    """Letter-like characters, word starts, spaces and runs of two or more spaces, from a flag string longer than
    ``_CHUNK`` (a shorter one is read whole by ``_chunk_run_counts``)."""
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


def ascii_counts(raw: bytes) -> Counts:
    """The ``ASCII_FEATURES`` of ASCII text given as its bytes: the whole statistics of such text.

    Digits are deleted from the string whose letter runs are counted, so a word start is a letter after
    anything but a letter or a digit; the digit count is the length difference.
    """
    flags = raw.translate(BYTE_FLAG_TABLE, DIGITS)
    n = len(flags)
    letters, word_starts, spaces, space_runs = (
        _chunk_run_counts(int.from_bytes(flags, "little")) if n <= _CHUNK else _run_counts(flags))
    # ``in`` of a byte given as an int is a memchr, ten times faster than ``count``: skipped when in vain.
    newlines = raw.count(b"\n") if 10 in raw else 0
    return letters, len(raw) - n, word_starts, spaces, space_runs, newlines, n - letters - spaces - newlines


Counts = tuple[int, int, int, int, int, int, int]
Parts = list[tuple[int, int]]


def text_parts(text: str, pieces: Pieces | None = None) -> tuple[Counts, Parts, int]:
    """The statistics of ``text`` sparsely: its ``ASCII_FEATURES``, the other ``FEATURES`` present as
    ``(index in FEATURES, count)`` pairs (an index may appear twice: add them), and its UTF-8 length in bytes;
    ``pieces`` (the target's) for the ``pieces`` statistic, which is otherwise left out.

    One translate gives the flags (continuation bytes and digits deleted: a byte per other character), and
    ``script_parts`` the groups present; what is neither a letter-like character, a space, a newline nor a
    non-ASCII character is ASCII punctuation.
    """
    raw = text.encode()
    if text.isascii():
        return ascii_counts(raw), [], len(raw)
    flags = raw.translate(BYTE_FLAG_TABLE, _DIGITS_AND_CONTINUATION)
    n = len(flags)
    word_like, word_starts, spaces, space_runs = (
        _chunk_run_counts(int.from_bytes(flags, "little")) if n <= _CHUNK else _run_counts(flags))
    parts, non_ascii, word_scripts = script_parts(text, raw, _FIRST_GROUP)
    letters = word_like - word_scripts
    newlines = raw.count(b"\n") if 10 in raw else 0
    counts = (letters, len(text) - n, word_starts, spaces, space_runs, newlines,
              n - word_like - spaces - newlines - (non_ascii - word_scripts))
    # The rarer letters are counted only when their script is present (``in`` is a fast search; each ``count`` a
    # full pass).
    subsets = [(feature, sum([text.count(c) for c in chars if c in text])
                + sum([raw.count(prefix) for prefix in prefixes if prefix[0] in raw]))
               for index, _ in parts if index in _SUBSET_GROUPS
               for group, feature, chars, prefixes in _SUBSETS if group == index]
    if subsets:
        parts += subsets
    if pieces is not None and any(index in _PIECE_GROUPS for index, _ in parts):
        n, words, _ = pieces.count(text)
        parts += ((_PIECES_FEATURE, n), (_PIECES_FEATURE + 1, words))
    return counts, parts, len(raw)


def cut_latin(text: str, counts: Counts, parts: Parts, latin: Callable[[], Pieces], family: str | None = None
              ) -> tuple[Counts, Parts]:
    """``text_parts``'s statistics with the text's Latin words cut into the pieces ``latin()`` gives (called only for
    a text to cut: a counter's Latin pieces are read then), as ``latin_pieces``, if its family (``safe_family``
    without letter-digit boundaries: ``family`` if given, unless ``ascii_ids``) is ``latin`` or ``ascii``, or
    ``ascii_symbolic`` where it reads as prose (``prose_among_symbols``).

    There a price per letter fitted on English (whose common words are a token each) is 10-40% under (Polish,
    Swahili, Zulu...), and the pieces count what BPE counts within 10% (o200k_base; 20% cl100k_base) in every
    language measured. English prose and code keep the statistics they fit well and are faster to count. The words'
    letters (ASCII's, Latin-1's, all of "latin_ext", "vietnamese" and "combining": the characters of
    ``LATIN_RANGES``) and their word starts leave the other statistics; the parts keep their order (a group's count
    may become 0), as the C accelerator's do.
    """
    features = None
    if family is None or family == "ascii_ids":
        features = dense_features(counts, parts)
        family = safe_family(features, text)
    if family == "ascii_symbolic":
        if not prose_among_symbols(features or dense_features(counts, parts), text):
            return counts, parts
    elif family not in _CUT_FAMILIES:
        return counts, parts
    n, runs, chars = latin().count(text)
    letters, digits, words, spaces, space_runs, newlines, punct = counts
    # The runs' Latin-1 letters: what the runs hold besides the other groups, which are in the runs whole.
    covered = chars - letters - sum([k for i, k in parts if i in _CUT_GROUPS])
    cut = [(i, 0 if i in _CUT_GROUPS else k - covered if i == _LATIN1 else k) for i, k in parts]
    cut.append((_LATIN_PIECES, n))
    return (0, digits, max(0, words - runs), spaces, space_runs, newlines, punct), cut


def prose_among_symbols(features: Sequence[int], text: str) -> bool:
    """Whether ASCII text dense in symbols (family ``ascii_symbolic``) reads as prose in a language other than
    English: UI sentences with placeholders ("%(count)s funud o nawr"), prices and dates in Malay or Welsh. Symbols
    (punctuation, digits) at most four to ten Latin letters (JSON and data have more), twenty words a line or more
    (code and Markdown have fewer: none of the corpus's is cut), and " the " rare (English)."""
    latin = features[_LETTERS] + features[_LATIN1] + features[_LATIN_EXT] + features[_VIETNAMESE]
    words = features[_WORDS]
    return ((features[_PUNCT] + features[_DIGITS]) * 10 <= latin * 4 and features[_NEWLINES] * 20 <= words
            and text.count(" the ") * 60 < words)


def safe_parts(text: str, pieces: Pieces | None = None) -> tuple[Counts, Parts, int, list[int]]:
    """``text_parts`` and ``safe_features`` of ``text``."""
    counts, parts, n_bytes = text_parts(text, pieces)
    return counts, parts, n_bytes, safe_features(text, dense_features(counts, parts))


def text_features(text: str, pieces: Pieces | None = None, latin: Pieces | None = None) -> tuple[list[int], int]:
    """The counts named by ``FEATURES`` for ``text`` (its Latin words cut into ``latin``'s pieces where
    ``cut_latin`` cuts them, if given), and its UTF-8 length in bytes (digits as in ``ascii_counts``)."""
    counts, parts, n_bytes = text_parts(text, pieces)
    if latin is not None:
        counts, parts = cut_latin(text, counts, parts, lambda: latin)
    return dense_features(counts, parts), n_bytes


def dense_features(counts: tuple[int, ...], parts: list[tuple[int, int]]) -> list[int]:
    """The counts named by ``FEATURES`` from ``text_parts``'s ASCII counts and script parts."""
    features = [*counts, *_NO_SCRIPTS]
    for index, n in parts:
        features[index] += n
    return features


_NO_SCRIPTS = (0,) * (len(FEATURES) - len(ASCII_FEATURES))
_FIRST_GROUP = FEATURES.index(GROUPS[0])
_CYRILLIC_FEATURE, _HAN_FEATURE, _ETHIOPIC_FEATURE = (FEATURES.index(f) for f in ("cyrillic", "han", "ethiopic"))
_UKRAINIAN_FEATURE, _CYRILLIC_EXT_FEATURE, _TRADITIONAL_FEATURE, _CHEROKEE_ETHIOPIC_FEATURE, _CANTONESE_FEATURE = (
    FEATURES.index(f) for f in ("ukrainian", "cyrillic_ext", "traditional", "cherokee_ethiopic", "cantonese"))
# The statistics counted within a script group, only when the group is present (``text_parts``): (the group's
# feature, the statistic's feature, characters counted one by one, UTF-8 prefixes counted).
_SUBSETS: tuple[tuple[int, int, tuple[str, ...], tuple[bytes, ...]], ...] = (
    (_CYRILLIC_FEATURE, _UKRAINIAN_FEATURE, _UKRAINIAN, ()),
    # U+0480-04FF (UTF-8 lead bytes 0xD2, 0xD3): letters of Cyrillic alphabets other than Russian's and
    # Ukrainian's (Kazakh, Tatar, Bashkir, Mongolian, Abkhaz...), which cost twice Russian's per letter.
    (_CYRILLIC_FEATURE, _CYRILLIC_EXT_FEATURE, (), (b"\xd2", b"\xd3")),
    (_HAN_FEATURE, _TRADITIONAL_FEATURE, _TRADITIONAL, ()),
    (_HAN_FEATURE, _CANTONESE_FEATURE, _CANTONESE, ()),
    # U+1380-13BF: Cherokee letters the "ethiopic" group holds cost twice an Ethiopic syllable.
    (_ETHIOPIC_FEATURE, _CHEROKEE_ETHIOPIC_FEATURE, (), (b"\xe1\x8e",)),
)
_SUBSET_GROUPS = frozenset(group for group, _, _, _ in _SUBSETS)
_PIECES_FEATURE = FEATURES.index("pieces")  # and "piece_words" after it
_PIECE_GROUPS = frozenset(FEATURES.index(group) for group in PIECE_GROUPS)
_LATIN_PIECES = FEATURES.index("latin_pieces")
_CUT_GROUPS = frozenset(FEATURES.index(group) for group in ("latin_ext", "vietnamese", "combining"))
_CUT_FAMILIES = frozenset({"latin", "ascii"})


def accelerator_tables() -> dict[str, Any]:
    """This module's definitions in the terms of the C accelerator's ``configure`` and ``configure_safe``
    (``accelerator``): the tables stay defined here, once."""
    code_of_high, word_codes, feature_of_code, latin1, splits = code_tables(_FIRST_GROUP)
    subsets = tuple((group, feature_of_code.index(group), feature,
                     (*((ord(c), ord(c)) for c in chars), *map(prefix_range, prefixes)))
                    for group, feature, chars, prefixes in _SUBSETS)
    systems = sorted({*SYSTEM_OF_FEATURE.values(), "latin"})
    roles = (_LETTERS, _LATIN1, _LATIN_EXT, _VIETNAMESE, *_KANA, _HAN, _HANGUL, _CYRILLIC, _CYRILLIC_EXT, _ARMENIAN,
             _COMBINING, _RARE, _PUNCT, _DIGITS, _WORDS)
    return {
        "configure": (BYTE_FLAG_TABLE, CLASS_TABLE, _CASE_TABLE, code_of_high, word_codes, feature_of_code, latin1,
                      LONG_RUN, LONG_WORD, splits, subsets, PIECE_RANGES, _PIECES_FEATURE, LATIN_RANGES),
        "configure_safe": (len(FEATURES), FAMILIES, roles, tuple(_OTHER_SCRIPTS(range(len(FEATURES)))),
                           tuple(systems.index(SYSTEM_OF_FEATURE[i]) if i in SYSTEM_OF_FEATURE else -1
                                 for i in range(len(FEATURES))),
                           systems.index("latin"), SHORT_TEXT, MIXED_SHORT_TEXT, " the "),
    }
