"""Recall's folding rewrites only what it changes: ``fold`` gives what folding all of the text gives (``folded``), on
text dense with what folding touches (accents written composed and decomposed, full-width and mathematical letters,
ligatures, Greek, Cyrillic, kana with voicing marks, Hangul jamo, CJK, emoji), and its table of what changes
covers every code point of this Python's Unicode data."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxwin.recall import _text
from ctxwin.recall._text import fold, folded

LETTERS = ("aeiouzAEIOUZ 19_\nßẞİıςΣΆάЁёЙйкか\u3099がｶﾞ部가\u11a8ᄀ\u1161ＡｚＺ１ﬁ①𝐙😀ครำ™ǅǆꭰᎠ"
           "\u0301\u0308\u0323\u0327\u0306\u3099")


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=LETTERS, max_size=24))
@example("Zu\u0308rich Zürich ZÜRICH")
@example("ü\u0301x a\u0301ü")
@example("\u0301abc")
@example("가ㄳ ㅋㅏ Aｶﾞ\u0301")
def test_fold_rewrites_what_folding_the_whole_text_would(text: str) -> None:
    assert fold(text) == folded(text)


def _in(ranges: tuple[tuple[int, int], ...], code: int) -> bool:
    return any(first <= code <= last for first, last in ranges)


@pytest.mark.slow
def test_the_table_of_what_folding_changes_covers_every_code_point() -> None:
    missing = []
    for code in range(0x80, 0x110000):
        char = chr(code)
        if 0xD800 <= code <= 0xDFFF or char.lower() != char:  # fold reads lower-case text
            continue
        after = folded(char)
        searched = char.isalnum() or any(c.isalnum() for c in after)  # punctuation keeps its form
        if after != char and searched and not _in(_text._FOLDED_RANGES, code):
            missing.append(f"U+{code:04X}")
        first = unicodedata.normalize("NFKD", char)[0]
        if _in(_text._FOLDED_RANGES, code) and first != char and (
                unicodedata.combining(first) or _in(_text._MARK_RANGES, ord(first))):
            # fold rewrites it into a mark that moves or composes with what comes before: a run must take that too
            assert _in(_text._MARK_RANGES, code), f"U+{code:04X} folds to a mark but is not one"
    assert not missing, f"fold's table misses {len(missing)} code points of Unicode {unicodedata.unidata_version}: " \
                        f"{missing[:20]}"
    for code in range(0x80, 0x110000):  # the second characters of canonical compositions
        parts = unicodedata.decomposition(chr(code)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            first, second = (chr(int(part, 16)) for part in parts)
            if unicodedata.normalize("NFC", first + second) == chr(code):
                assert _in(_text._MARK_RANGES, ord(second)), f"U+{ord(second):04X} composes but is not a mark"
