"""Per-script character counts of non-ASCII text, at memory speed, read from the high bytes of UTF-16 code units
(docs/approximate.md).
"""

from __future__ import annotations

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
    # U+0800-087F: Samaritan, Mandaic, the Syriac supplement, the start of Arabic Extended-B (priced as Arabic: as
    # anything cheaper, gflanguages' Samaritan and Mandaic samples came out under in safe mode).
    ("samaritan", "arabic", (b"\xe0\xa0", b"\xe0\xa1")),
    # U+1700-177F: the Philippine scripts (Baybayin, Hanunoo, Buhid, Tagbanwa), a token a byte, priced as Khmer
    # (as anything cheaper they came out under).
    ("philippine", "khmer", (b"\xe1\x9c", b"\xe1\x9d")),
    # U+1E80-1EFF: Vietnamese's tone-marked vowels (ạ ả ấ ầ ế ệ ờ ữ...), a fifth of its letters; o200k holds most of
    # its syllables whole, so they cost a fraction of the other accented letters (priced as those, Vietnamese was
    # over-counted by a third).
    ("vietnamese", "latin_ext", (b"\xe1\xba", b"\xe1\xbb")),
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


# Codes of the string ``script_parts`` counts: group ``i`` is code ``i + 1``, except that "rare" blocks where
# letters make words (the lead-byte classes of ``features.WORD_CLASSES``: U+0080-1FFF, U+A000-DFFF,
# U+E000-EFFF) have a code of their own, so that every code is either letter-like or not.
_RARE = GROUPS.index("rare")
_RARE_WORD = len(GROUPS) + 1
_CODE_GROUP = (-1, *range(len(GROUPS)), _RARE)


def _word_block(high: int) -> bool:
    """Whether UTF-16 high byte ``high`` is a block whose characters make words (by their UTF-8 lead byte)."""
    return high < 0x20 or 0xA0 <= high < 0xD8 or 0xE0 <= high < 0xF0


def _group_table() -> bytes:
    table = bytearray(_RARE_WORD if _word_block(high) else _RARE + 1 for high in range(256))
    for name, highs in _BLOCKS.items():
        for high in highs:
            table[high] = GROUPS.index(name) + 1
    return bytes(table)


_TABLE = _group_table()
# UTF-16 high bytes in no group: ASCII and Latin-1 (counted by their UTF-8 lead bytes), low surrogates.
_NONE = bytes((0x00, 0xDC, 0xDD, 0xDE, 0xDF))
# Per code: the bytes that delete it from the code string, and whether its characters are letter-like.
_DELETE = tuple(bytes((code,)) for code in range(256))
_WORD_CODES = frozenset(code for code in range(1, _RARE_WORD + 1)
                        if code == _RARE_WORD or any(_TABLE[high] == code and _word_block(high) for high in range(256)))
# Per parent code: the groups split off it by UTF-8 prefixes (group index, prefixes).
_SPLIT_OFF: dict[int, tuple[tuple[int, tuple[bytes, ...]], ...]] = {}
for _name, _parent, _prefixes in _SPLITS:
    _SPLIT_OFF[GROUPS.index(_parent) + 1] = (*_SPLIT_OFF.get(GROUPS.index(_parent) + 1, ()),
                                             (GROUPS.index(_name), _prefixes))
_LATIN1 = GROUPS.index("latin1")


def script_parts(text: str, raw: bytes, offset: int = 0) -> tuple[list[tuple[int, int]], int, int]:
    """The script groups present in ``text`` (UTF-8 ``raw``) as ``(offset + index in GROUPS, characters)`` pairs (a
    group may appear twice: add them), with the number of non-ASCII characters and how many are letter-like.

    The code string has one byte per non-ASCII character but Latin-1; the loop counts the code of its first byte
    and deletes it, so it makes two passes per group present (one to three in most texts) and none per group absent.
    """
    # ``in`` of a byte given as an int is a memchr, ten times faster than ``count``: most texts in other scripts
    # have no Latin-1 character.
    latin1 = (raw.count(b"\xc2") if 0xC2 in raw else 0) + (raw.count(b"\xc3") if 0xC3 in raw else 0)
    parts = [(offset + _LATIN1, latin1)] if latin1 else []
    total = word = latin1
    codes = text.encode("utf-16-be")[::2].translate(_TABLE, _NONE)
    while codes:
        code = codes[0]
        found = n = codes.count(code)
        total += n
        if code in _WORD_CODES:
            word += n
        for index, prefixes in _SPLIT_OFF.get(code, ()):
            split = sum([raw.count(p) for p in prefixes])
            if split:
                parts.append((offset + index, split))
                n -= split
                if not n:  # the block is all split off (Chinese text's only kana-block characters are 、。「」)
                    break
        parts.append((offset + _CODE_GROUP[code], n))
        if len(codes) == found:
            break
        codes = codes.translate(None, _DELETE[code])
    return parts, total, word


def script_counts(text: str, raw: bytes) -> list[int]:
    """Characters of ``text`` (UTF-8 ``raw``) in each group of ``GROUPS``; ASCII is in none."""
    counts = [0] * len(GROUPS)
    for index, n in script_parts(text, raw)[0]:
        counts[index] += n
    return counts


def prefix_range(prefix: bytes) -> tuple[int, int]:
    """The code points whose UTF-8 encoding starts with ``prefix`` (a lead byte, or a lead and a second byte)."""
    lo = (prefix + b"\x80" * 3)[: _utf8_width(prefix[0])].decode()
    hi = (prefix + b"\xbf" * 3)[: _utf8_width(prefix[0])].decode()
    return ord(lo), ord(hi)


def _utf8_width(lead: int) -> int:
    return 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


Ranges = tuple[tuple[int, int], ...]


def code_tables(offset: int) -> tuple[bytes, bytes, tuple[int, ...], int, tuple[tuple[int, int, Ranges], ...]]:
    """``script_parts``'s tables in the terms of the C accelerator (``speedups.configure``): the script
    code of each UTF-16 high byte (0 for none), which codes are letter-like, the feature index (``offset`` + group)
    of each code, Latin-1's feature index, and per code the groups split off it as code-point ranges."""
    code_of_high = bytes(0 if high in _NONE else _TABLE[high] for high in range(256))
    word_codes = bytes(code in _WORD_CODES for code in range(256))
    feature_of_code = tuple(offset + _CODE_GROUP[code] if 0 < code < len(_CODE_GROUP) else -1 for code in range(256))
    splits = tuple((code, offset + index, tuple(prefix_range(p) for p in prefixes))
                   for code, groups in _SPLIT_OFF.items() for index, prefixes in groups)
    return code_of_high, word_codes, feature_of_code, offset + _LATIN1, splits


def group_ranges(groups: frozenset[str]) -> Ranges:
    """The code points of the BMP whose group (as ``script_parts`` assigns it) is one of ``groups``, as sorted,
    merged ``(lo, hi)`` ranges."""
    member = bytearray(0x10000)
    for high in (*range(1, 0xD8), *range(0xE0, 0x100)):
        if GROUPS[_CODE_GROUP[_TABLE[high]]] in groups:
            member[high << 8 : (high + 1) << 8] = b"\x01" * 256
    for name, _, prefixes in _SPLITS:
        for lo, hi in map(prefix_range, prefixes):
            if hi < 0x10000:
                member[lo : hi + 1] = (b"\x01" if name in groups else b"\x00") * (hi + 1 - lo)
    ranges = []
    start = member.find(1)
    while start >= 0:
        end = member.find(0, start)
        end = len(member) if end < 0 else end
        ranges.append((start, end - 1))
        start = member.find(1, end)
    return tuple(ranges)
