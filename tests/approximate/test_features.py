"""The approximate counter's text statistics against a plain per-character reference, and safe mode's family
choice."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters.approximate_features import (
    ASCII_FEATURES,
    FAMILIES,
    FEATURES,
    SAFE_FEATURES,
    ascii_counts,
    safe_family,
    safe_features,
    text_features,
)

# Script blocks by code point (the UTF-8 lead byte's block, written as ranges): (first, last, name).
_BLOCKS = [
    (0x80, 0x27F, "latin_ext"), (0x280, 0x3FF, "greek"), (0x400, 0x53F, "cyrillic"), (0x540, 0x7FF, "rtl"),
    (0x800, 0xFFF, "indic"), (0x1000, 0x1FFF, "other3"), (0x2000, 0x2FFF, "symbols"), (0x3000, 0x3FFF, "kana"),
    (0x4000, 0x9FFF, "han"), (0xA000, 0xDFFF, "hangul"), (0xE000, 0xEFFF, "other3"), (0xF000, 0xFFFF, "compat_forms"),
    (0x10000, 0x10FFFF, "astral"),
]
# Scripts whose words are separated by spaces or punctuation: their runs, with ASCII letters, are words.
_WORDY = {"latin_ext", "greek", "cyrillic", "rtl", "indic", "other3", "hangul"}


def reference(text: str) -> dict[str, int]:
    """Every statistic of ``FEATURES``, one character at a time, the slow and obvious way."""
    counts = dict.fromkeys(FEATURES, 0)
    kinds = []  # per character except digits: "word", "space" or "other"
    for ch in text:
        cp = ord(ch)
        if "0" <= ch <= "9":
            counts["digits"] += 1
            continue
        if cp < 0x80:
            name = ("letters" if ch.isalpha() else "spaces" if ch == " " else "newlines" if ch == "\n"
                    else "punct")
        else:
            name = next(n for first, last, n in _BLOCKS if first <= cp <= last)
            if name == "kana" and cp <= 0x303F:
                name = "cjk_punct"
            if name == "compat_forms" and 0xFF00 <= cp <= 0xFF3F:
                name = "fullwidth"
        counts[name] += 1
        counts["katakana"] += 0x30C0 <= cp <= 0x30FF
        counts["ukrainian"] += ch in "іїєІЇЄ"
        counts["traditional"] += ch in "們個這說"
        kinds.append("word" if name == "letters" or name in _WORDY else "space" if ch == " " else "other")
    before = ["other", "other", *kinds]
    for i, kind in enumerate(kinds):
        counts["word_starts"] += kind == "word" and before[i + 1] != "word"
        counts["space_runs"] += kind == "space" and before[i + 1] == "space" and before[i] != "space"
    return counts


def features(text: str) -> dict[str, int]:
    counts, n_bytes = text_features(text)
    assert n_bytes == len(text.encode("utf-8"))
    return dict(zip(FEATURES, counts, strict=True))


_PIECES = st.sampled_from(["a", "Z", " ", "  ", "\n", "7", ".", "é", "я", "і", "中", "們", "カ", "、", "，", "ﺎ", "한",
                           "😀", "\t", "α", "ש", "क", "Ⴀ", "—"])
# Mostly ASCII with a few other characters (the other way through ``text_features``), or anything.
_TEXTS = st.one_of(
    st.lists(_PIECES, max_size=80).map("".join),
    st.tuples(st.text(st.sampled_from("ab Z9.\n"), min_size=20, max_size=300), st.lists(_PIECES, max_size=2))
    .map(lambda parts: parts[0] + "".join(parts[1])),
    st.text(max_size=120),
)


@settings(max_examples=500, deadline=None)
@given(_TEXTS)
def test_statistics_match_the_reference(text: str) -> None:
    assert features(text) == reference(text)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=120))
def test_ascii_counts_are_the_ascii_part_of_the_statistics(text: str) -> None:
    assert list(ascii_counts(text.encode())) == text_features(text)[0][: len(ASCII_FEATURES)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "B", "cD", "Ef", "7", " ", "é", "中", "\n"]), max_size=60).map("".join))
def test_safe_statistics_match_the_reference(text: str) -> None:
    extra = dict(zip(SAFE_FEATURES[len(FEATURES):], safe_features(text), strict=True))
    assert extra["case_changes"] == len(re.findall("[a-z][A-Z]", text))
    assert extra["digit_letter"] == len(re.findall("[0-9](?=[A-Za-z])", text))
    assert extra["per_text"] == 1


def test_long_texts_are_counted_exactly_across_chunks() -> None:
    # Runs straddling the 64 KiB chunk boundaries of the integer reads must be counted once, whichever side of
    # a boundary they end on.
    edges = ["x" * (65_536 + k) + " yy" for k in (-2, -1, 0, 1)]
    for text in [("word  " * 11_000 + "x" + " " * 7 + "tail\n") * 3, *edges]:
        assert features(text) == reference(text)
        assert features(text + "中") == reference(text + "中")


def test_ascii_and_unicode_paths_agree_on_the_shared_statistics() -> None:
    ascii_text = "def f(x):\n    return x  + 42\n"
    ascii_counts, unicode_counts = features(ascii_text), features(ascii_text + "—")
    for name in ("digits", "word_starts", "spaces", "space_runs", "newlines", "punct"):
        assert ascii_counts[name] == unicode_counts[name], name
    assert unicode_counts["symbols"] == 1


def family(text: str) -> str:
    return safe_family(text_features(text)[0], text)


def test_safe_family_follows_the_dominant_script() -> None:
    assert family("我们今天去公园散步，然后吃午饭。") == "chinese"
    assert family("今日は公園を散歩して、それから昼ご飯を食べました。") == "japanese"
    assert family("오늘은 공원에서 산책을 하고 점심을 먹었습니다.") == "korean"
    assert family("Сегодня мы гуляли в парке, а потом обедали.") == "cyrillic"
    assert family("आज हम पार्क में टहलने गए और फिर खाना खाया।") == "other"
    assert family("Oggi siamo andati al parco e poi abbiamo mangiato là, perché è bello.") == "latin"
    assert family('{"id": 12, "tags": ["a", "b"], "ok": true}') == "ascii_symbolic"
    assert family("We walked in the park and then the children had lunch by the lake.") == "english"
    assert family("Kami berjalan di taman lalu makan siang di dekat danau bersama anak anak.") == "ascii"
    assert {family(t) for t in ("", "   ", "12345")} <= set(FAMILIES)
