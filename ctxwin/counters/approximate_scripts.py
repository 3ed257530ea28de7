"""Per-script character counts of non-ASCII text, at memory speed.

The UTF-8 lead byte names a script block too coarsely (Devanagari, Tamil and Thai share one; so do Georgian,
Ethiopic, Khmer and Yi), and scripts in one block cost very different amounts. The UTF-16 code units' high bytes
name 256-code-point blocks: ``text.encode("utf-16-be")[::2]`` is one byte per character (two for characters
outside the BMP, whose low surrogate is ignored), ``bytes.translate`` maps it to a group byte and ``bytes.count``
counts each group present. Blocks holding two scripts (Devanagari and Bengali, Thai and Lao, Myanmar and Georgian,
Hebrew and Armenian...) are split by counting the UTF-8 prefixes of the second script (a prefix of lead and second
byte names 64 code points); such counts are made only when the block is present.
"""

from __future__ import annotations

from collections.abc import Iterable

# Group of each UTF-16 high byte (a block of 256 code points); blocks not listed are "rare" (scripts with little
# text anywhere, private use, historic scripts), except ASCII and Latin-1 (high byte 0, counted apart) and low
# surrogates (the second code unit of a character outside the BMP), which are in no group.
_BLOCKS: dict[str, tuple[int, ...]] = {
    "latin_ext": (0x01, 0x02, 0x1E, 0xA7), "greek": (0x03, 0x1F), "cyrillic": (0x04,), "armenian": (0x05,),
    "arabic": (0x06, 0x08), "syriac": (0x07,), "devanagari": (0x09,), "gurmukhi": (0x0A,), "oriya": (0x0B,),
    "telugu": (0x0C,), "malayalam": (0x0D,), "thai": (0x0E,), "tibetan": (0x0F,), "myanmar": (0x10,),
    "ethiopic": (0x12, 0x13), "khmer": (0x17,), "mongolian": (0x18,), "punctuation": (0x20,),
    "symbols": (0x21, 0x22, 0x23, 0x24, 0x29, 0x2A, 0x2B), "box": (0x25,), "dingbats": (0x26, 0x27),
    "braille": (0x28,), "kana": (0x30,), "cjk_misc": (0x31, 0x32, 0x33), "han_ext": tuple(range(0x34, 0x4E)),
    "han": tuple(range(0x4E, 0xA0)), "yi": tuple(range(0xA0, 0xA5)), "hangul": tuple(range(0xAC, 0xD8)),
    "astral": (0xD8, 0xD9, 0xDA, 0xDB), "forms": (0xFB, 0xFC, 0xFD, 0xFE), "fullwidth": (0xFF,),
}
_NONE = (0x00, 0xDC, 0xDD, 0xDE, 0xDF)
# Scripts split off a block's group by their UTF-8 prefixes: (group, parent group, prefixes).
_SPLITS: tuple[tuple[str, str, tuple[bytes, ...]], ...] = (
    ("combining", "greek", (b"\xcc", b"\xcd")),  # U+0300-037F, combining diacritics (with a few Greek signs)
    ("hebrew", "armenian", (b"\xd7",)),  # U+05C0-05FF: the Hebrew letters
    ("thaana", "syriac", (b"\xde",)),  # U+0780-07BF
    ("bengali", "devanagari", (b"\xe0\xa6", b"\xe0\xa7")),
    ("gujarati", "gurmukhi", (b"\xe0\xaa", b"\xe0\xab")),
    ("tamil", "oriya", (b"\xe0\xae", b"\xe0\xaf")),
    ("kannada", "telugu", (b"\xe0\xb2", b"\xe0\xb3")),
    ("sinhala", "malayalam", (b"\xe0\xb6", b"\xe0\xb7")),
    ("lao", "thai", (b"\xe0\xba", b"\xe0\xbb")),
    ("georgian", "myanmar", (b"\xe1\x83",)),  # U+10C0-10FF: the modern (Mkhedruli) letters
    ("cherokee", "ethiopic", (b"\xe1\x8f",)),  # U+13C0-13FF
    ("cjk_punct", "kana", (b"\xe3\x80",)),  # U+3000-303F: 、。「」
    ("katakana", "kana", (b"\xe3\x83",)),  # U+30C0-30FF (most of the katakana block)
    ("emoji", "astral", (b"\xf0\x9f",)),  # U+1F000-1FFFF
)
GROUPS: tuple[str, ...] = ("latin1", *_BLOCKS, "rare", *(name for name, _, _ in _SPLITS))
# UTF-8 length of the characters of each group (Latin-1 and the two-byte blocks: 2; U+0800-FFFF: 3; astral: 4).
WIDTHS: dict[str, int] = {
    **dict.fromkeys(GROUPS, 3),
    **dict.fromkeys(("latin1", "latin_ext", "greek", "cyrillic", "armenian", "arabic", "syriac", "combining",
                     "hebrew", "thaana"), 2),
    "astral": 4, "emoji": 4,
}
# latin_ext also holds U+1E00-1EFF and U+A700-A7FF (3 bytes), arabic U+0800-08FF: their width is the smaller.


def _group_table() -> bytes:
    table = bytearray([GROUPS.index("rare") + 1] * 256)
    for high in _NONE:
        table[high] = 0
    for name, highs in _BLOCKS.items():
        for high in highs:
            table[high] = GROUPS.index(name) + 1
    return bytes(table)


_TABLE = _group_table()
_SPLIT_INDEX = tuple((GROUPS.index(name), GROUPS.index(parent), prefixes) for name, parent, prefixes in _SPLITS)
_LATIN1 = GROUPS.index("latin1")


def group_codes(names: Iterable[str]) -> frozenset[int]:
    """The bytes naming groups ``names`` in the string ``script_counts`` counts (for its ``candidates``)."""
    return frozenset(GROUPS.index(name) + 1 for name in names)


def script_counts(text: str, raw: bytes, candidates: Iterable[int] = range(1, len(GROUPS) + 1)) -> list[int]:
    """Characters of ``text`` (UTF-8 ``raw``) in each group of ``GROUPS``; ASCII is in none.

    Only the groups of ``candidates`` (``group_codes``) are looked for: a caller that knows which blocks are
    present saves a search per absent group.
    """
    groups = text.encode("utf-16-be")[::2].translate(_TABLE)
    counts = [0] * len(GROUPS)
    for code in candidates:
        if code in groups:
            counts[code - 1] = groups.count(code)
    # Latin-1 letters are the only characters whose UTF-8 lead byte is 0xC2 or 0xC3.
    counts[_LATIN1] = raw.count(b"\xc2") + raw.count(b"\xc3")
    for index, parent, prefixes in _SPLIT_INDEX:
        if counts[parent]:
            n = sum(raw.count(p) for p in prefixes)
            counts[index] = n
            counts[parent] -= n
    return counts
