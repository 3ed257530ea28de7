"""The approximate counter's text statistics against a plain regex reference, and safe mode's family choice."""

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

# Letter-like characters (the scripts that separate words by spaces) by UTF-8 lead byte: U+0080-0FFF,
# U+1000-1FFF, U+A000-DFFF and U+E000-EFFF.
_LETTER_LIKE = "[A-Za-z\u0080-\u1fff\ua000-\ud7ff\ue000-\uefff]"


def reference(text: str) -> dict[str, int]:
    """The run statistics, written the slow and obvious way; digits are deleted first, as documented."""
    no_digits = re.sub("[0-9]", "", text)
    return {
        "word_starts": len(re.findall(f"(?<!{_LETTER_LIKE}){_LETTER_LIKE}", no_digits)),
        "spaces": text.count(" "),
        "space_runs": len(re.findall("(?<! )  ", no_digits)),
        "newlines": text.count("\n"),
        "digits": len(re.findall("[0-9]", text)),
        "han": len(re.findall("[\u4000-\u9fff]", text)),
        "ukrainian": len(re.findall("[іїєІЇЄ]", text)),
        "traditional": len(re.findall("[們個這說]", text)),
    }


def features(text: str) -> dict[str, int]:
    counts, n_bytes = text_features(text)
    assert n_bytes == len(text.encode("utf-8"))
    return dict(zip(FEATURES, counts, strict=True))


_PIECES = st.sampled_from(["a", "Z", " ", "  ", "\n", "7", ".", "é", "я", "і", "中", "們", "カ", "한", "😀", "\t"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=80).map("".join))
def test_statistics_match_the_reference(text: str) -> None:
    counts = features(text)
    assert {name: counts[name] for name in reference(text)} == reference(text)


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
    # Runs straddling the 64 KiB chunk boundaries of the integer reads must be counted once.
    text = ("word  " * 11_000 + "x" + " " * 7 + "tail\n") * 3
    assert {name: features(text)[name] for name in reference(text)} == reference(text)


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
