"""The approximate counter's text statistics against a plain per-character reference, and safe mode's family
choice."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters._approximate.features import (
    ASCII_FEATURES,
    FAMILIES,
    FEATURES,
    SAFE_FEATURES,
    ascii_counts,
    safe_family,
    safe_features,
    text_features,
)

# Lead-byte blocks by code point (first, last, letter-like): runs of letter-like characters, with ASCII letters,
# are words.
_LEAD_BLOCKS = [
    (0x80, 0x7FF, True), (0x800, 0xFFF, True), (0x1000, 0x1FFF, True), (0x2000, 0x9FFF, False),
    (0xA000, 0xDFFF, True), (0xE000, 0xEFFF, True), (0xF000, 0x10FFFF, False),
]
# Script groups by code point range (first, last, group), the first match winning; anything else is "rare".
_GROUP_RANGES = [
    (0x80, 0xFF, "latin1"), (0x100, 0x2FF, "latin_ext"), (0x1E80, 0x1EFF, "vietnamese"), (0x1E00, 0x1EFF, "latin_ext"),
    (0xA700, 0xA7FF, "latin_ext"),
    (0x300, 0x37F, "combining"), (0x380, 0x3FF, "greek"), (0x1F00, 0x1FFF, "greek"), (0x400, 0x4FF, "cyrillic"),
    (0x5C0, 0x5FF, "hebrew"), (0x500, 0x5BF, "armenian"), (0x600, 0x6FF, "arabic"), (0x800, 0x87F, "samaritan"),
    (0x880, 0x8FF, "arabic"),
    (0x780, 0x7BF, "thaana"), (0x700, 0x7FF, "syriac"), (0x980, 0x9FF, "bengali"), (0x900, 0x97F, "devanagari"),
    (0xA80, 0xAFF, "gujarati"), (0xA00, 0xA7F, "gurmukhi"), (0xB80, 0xBFF, "tamil"), (0xB00, 0xB7F, "oriya"),
    (0xC80, 0xCFF, "kannada"), (0xC00, 0xC7F, "telugu"), (0xD80, 0xDFF, "sinhala"), (0xD00, 0xD7F, "malayalam"),
    (0xE80, 0xEFF, "lao"), (0xE00, 0xE7F, "thai"), (0xF00, 0xFFF, "tibetan"), (0x10C0, 0x10FF, "georgian"),
    (0x1000, 0x10BF, "myanmar"), (0x13C0, 0x13FF, "cherokee"), (0x1200, 0x13BF, "ethiopic"),
    (0x1700, 0x177F, "philippine"), (0x1780, 0x17FF, "khmer"), (0x1800, 0x18FF, "mongolian"),
    (0x2000, 0x20FF, "punctuation"),
    (0x2100, 0x24FF, "symbols"), (0x2900, 0x2BFF, "symbols"), (0x2500, 0x25FF, "box"), (0x2600, 0x27FF, "dingbats"),
    (0x2800, 0x28FF, "braille"), (0x3000, 0x303F, "cjk_punct"), (0x30C0, 0x30FF, "katakana"),
    (0x3040, 0x30BF, "kana"), (0x3100, 0x33FF, "cjk_misc"), (0x3400, 0x4DFF, "han_ext"), (0x4E00, 0x9FFF, "han"),
    (0xA000, 0xA4FF, "yi"), (0xAC00, 0xD7FF, "hangul"), (0x1F000, 0x1FFFF, "emoji"), (0x10000, 0x10FFFF, "astral"),
    (0xFB00, 0xFEFF, "forms"), (0xFF00, 0xFFFF, "fullwidth"),
]


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
            wordy = name == "letters"
        else:
            name = next((n for first, last, n in _GROUP_RANGES if first <= cp <= last), "rare")
            wordy = next(w for first, last, w in _LEAD_BLOCKS if first <= cp <= last)
        counts[name] += 1
        counts["ukrainian"] += ch in "іїєІЇЄ"
        counts["cyrillic_ext"] += 0x480 <= cp <= 0x4FF
        counts["traditional"] += ch in "們個這說"
        counts["cherokee_ethiopic"] += 0x1380 <= cp <= 0x13BF
        counts["cantonese"] += ch in "嘅喺哋咗嚟"
        kinds.append("word" if wordy else "space" if ch == " " else "other")
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
                           "😀", "\t", "α", "ש", "क", "Ⴀ", "—", "ა", "ሰ", "Ꮳ", "ހ", "ܐ", "ꀀ", "㐀", "┌", "⠁", "ລ",
                           "ক", "ஆ", "\u0301", "𠀀", "\ufe0f", "қ", "ә", "嘅", "Ꭰ", "ᎀ"])
# Mostly ASCII with a few other characters (the other way through ``text_features``), or anything.
_TEXTS = st.one_of(
    st.lists(_PIECES, max_size=80).map("".join),
    st.tuples(st.text(st.sampled_from("ab Z9.\n"), min_size=20, max_size=300), st.lists(_PIECES, max_size=2))
    .map(lambda parts: parts[0] + "".join(parts[1])),
    st.text(max_size=120),
)


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(_TEXTS)
def test_statistics_match_the_reference(text: str) -> None:
    assert features(text) == reference(text)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=120))
def test_ascii_counts_are_the_ascii_part_of_the_statistics(text: str) -> None:
    assert list(ascii_counts(text.encode())) == text_features(text)[0][: len(ASCII_FEATURES)]


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "B", "cD", "Ef", "7", " ", "é", "中", "\n", "abcdefgh"]), max_size=60)
       .map("".join))
def test_safe_statistics_match_the_reference(text: str) -> None:
    extra = dict(zip(SAFE_FEATURES[len(FEATURES):], safe_features(text), strict=True))
    # Given the text's statistics, the passes that cannot find anything are skipped, with the same result.
    assert safe_features(text, text_features(text)[0]) == list(extra.values())
    assert extra["case_changes"] == len(re.findall("[a-z][A-Z]", text))
    assert extra["digit_letter"] == len(re.findall("[0-9](?=[A-Za-z])", text))
    assert extra["per_text"] == 1
    assert extra["long_words"] == sum(len(run) // 16 for run in re.findall("[A-Za-zé]+", text))


@pytest.mark.slow
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
    assert unicode_counts["punctuation"] == 1


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
    assert safe_family(text_features(digest := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")[0],
                       digest, sum(safe_features(digest)[:2])) == "ascii_ids"
    assert family("We walked in the park and then the children had lunch by the lake.") == "english"
    assert family("Kami berjalan di taman lalu makan siang di dekat danau bersama anak anak.") == "ascii"
    assert {family(t) for t in ("", "   ", "12345")} <= set(FAMILIES)


def test_cyrillic_family_splits_russian_from_other_alphabets() -> None:
    # Kazakh, Tatar, Mongolian... (letters of U+0480-04FF) cost about twice Russian per letter: a bound fitted on
    # both would over-count Russian by half.
    assert family("Привет, как дела? Сегодня хорошая погода.") == "cyrillic"
    assert family("Сәлеметсіз бе, қалыңыз қалай? Бүгін ауа райы жақсы.") == "cyrillic_ext"
    assert features("қазақ ә")["cyrillic_ext"] == 3


def test_cherokee_letters_the_ethiopic_group_holds_are_counted_apart() -> None:
    # U+13A0-13BF (Ꭰ-Ꮏ) fall in the block the "ethiopic" group reads; they cost about twice an Ethiopic syllable.
    cherokee = features("ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ")
    assert (cherokee["cherokee_ethiopic"], cherokee["ethiopic"], cherokee["cherokee"]) == (4, 4, 5)
    assert features("የሰው ልጅ ሁሉ")["cherokee_ethiopic"] == 0
