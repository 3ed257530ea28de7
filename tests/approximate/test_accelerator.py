"""The C accelerator gives the approximate counter's pure-Python numbers exactly: the same statistics and the same
counts (estimate and safe mode, both targets), on every code point, on generated text and on the corpus."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import sysconfig

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters._approximate.accelerator import MODEL
from ctxwin.counters._approximate.calibration import TARGETS
from ctxwin.counters._approximate.counter import ApproximateCounter, _calibrated
from ctxwin.counters._approximate.features import (
    FEATURES,
    accelerator_tables,
    cut_latin,
    dense_features,
    safe_parts,
    text_parts,
)
from ctxwin.counters._approximate.pieces import LATIN_RANGES, PIECE_RANGES, Pieces, target_pieces
from ctxwin.counters._base import scalar_text


def _compiler() -> str | None:
    """The C compiler the package's build would use, if there is one on this machine."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc)


if MODEL is None:
    if os.environ.get("CTXWIN_NO_ACCELERATOR") or not _compiler():
        pytest.skip("the C accelerator is turned off or there is no C compiler", allow_module_level=True)
    pytest.fail(f"a C compiler is present ({_compiler()}) but the accelerator is not built: reinstall the package "
                "(pip install -e .) and read the build log", pytrace=False)

import ctxwin.counters._approximate.speedups as speedups  # noqa: E402  (only where it is built)

COUNTERS = [ApproximateCounter(target, safe=safe) for target in TARGETS for safe in (False, True)]


def _python_count(counter: ApproximateCounter, text: str) -> int:
    return counter.py_safe_bound(text) if counter.safe else counter.py_count(text)


def _c_count(counter: ApproximateCounter, text: str) -> int:
    """What the accelerator computes of ``counter``'s count (in safe mode, the estimator's bound, which the counter
    raises to the exact counts)."""
    model = _calibrated(counter.target).model
    assert model is not None
    return model.safe(text) if counter.safe else model.estimate(text)


def assert_same(text: str) -> None:
    """The statistics and every counter's count of ``text``, C against Python."""
    assert speedups.safe_parts(text) == safe_parts(text), text
    assert speedups.text_parts(text) == text_parts(text), text
    for counter in COUNTERS:
        assert _c_count(counter, text) == _python_count(counter, text), (counter.name, counter.target, text)


@pytest.mark.slow
def test_every_code_point() -> None:
    """Each code point (surrogates aside) in runs of 61 consecutive ones, alone, among ASCII words and digits, and
    doubled; the runs cross every block boundary, split range and counted subset."""
    code_points = [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000]
    for i in range(0, len(code_points), 61):
        run = "".join(map(chr, code_points[i : i + 61]))
        assert speedups.safe_parts(run) == safe_parts(run)
        text = f"ab {run} 12x{run[:7]}  Zz9 {run[::-1]}"
        assert speedups.safe_parts(text) == safe_parts(text)
    for cp in range(0x0, 0x3100):  # the blocks with splits and subsets, one code point in context each
        assert_same(f"The word {chr(cp)}x2 {chr(cp) * 3}")


# Alphabets that exercise every branch: ASCII classes, runs of spaces, digits next to letters, case changes, long
# runs, every script group, the Ukrainian and Traditional letters, emoji, and anything at all.
_SPECIAL = " \n\t  0123456789abcXYZ the .,;{}" + "іїєІЇЄґқңө們個這說" + "éßñ" + "ʻ̀͡" + "ΑΩαωάЖжӘәԱա" + "שׁאבג"
_SCRIPTS = "".join(chr(cp) for cp in (*range(0x600, 0x700, 7), *range(0x900, 0x1000, 5), *range(0x10A0, 0x1400, 13),
                                      *range(0x2000, 0x2900, 11), *range(0x3000, 0x3100, 3), *range(0x4E00, 0x4F00, 9),
                                      *range(0xAC00, 0xAD00, 17), 0x1F600, 0x1F44D, 0x200D, 0xFE0F, 0x20000, 0xFF21))
TEXTS = st.one_of(
    st.text(alphabet=st.sampled_from(_SPECIAL + _SCRIPTS), max_size=300),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200),
    st.lists(st.sampled_from(["The quick brown fox ", "Съешь же ещё ", "我们今天", "カタカナ", "한국어 ", "नमस्ते ",
                              "ภาษาไทย ", "a1b2c3d4", "getCoreSchema", "    ", "\n", "aaaaaaaaaaaaaaaaaaaaaa"]),
             max_size=40).map("".join),
)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_generated_text(text: str) -> None:
    assert_same(text)


# Texts swept across every threshold of safe mode's decisions (family by script shares, Cyrillic alphabets, kana,
# hangul against Han, accented letters, letter-digit boundaries, punctuation and digits, " the ", long random runs,
# symbol soup, short and mixed short texts): a base, with ever more of a filler.
_BASES = ["The cat sat on a mat and then the dog came in. " * 6, "Съешь же ещё этих мягких французских булок. " * 4,
          "我们今天去公园散步，天气很好。" * 6, "한국어 문장입니다 " * 8, "नमस्ते दुनिया " * 10, "مرحبا بالعالم " * 8,
          "Hi"]
_FILLERS = ["ә", "カ", "한", "中", "é", "a1", "{;}", "7", " the ", " x", "qwertyuiopasdfghjklzx", "  ", "\n", "ß"]


@pytest.mark.slow
@pytest.mark.parametrize("base", _BASES)
def test_thresholds(base: str) -> None:
    for cut in {len(base), len(base) * 3 // 4, len(base) // 2}:
        for filler in _FILLERS:
            for k in range(0, 48, 1 if len(filler) < 3 else 3):
                assert_same(base[:cut] + filler * k)
                assert_same(filler * k + base[: 3 * k])
    for words in range(50, 70):  # " the " once in 60 words: English exactly at the threshold
        assert_same(" the" + " word" * words + base[:2])


def test_kana_threshold() -> None:
    """Han text with about one kana in twenty characters: Japanese or Chinese by one character."""
    han = "我们今天去公园散步天气很好这是一个测试句子用来看看速度"
    for n in range(40, 400, 3):
        for kana in range(n // 19 - 2, n // 19 + 3):
            assert_same((han * 20)[:n] + "。" + "の" * kana)


@pytest.mark.slow
def test_corpus_documents_and_long_texts() -> None:
    """Real documents of every kind, and texts longer than the Python statistics' 64K-character chunks."""
    from corpus import build

    docs = build("heldout")
    for doc in docs[::3]:
        assert_same(doc.text)
    long_text = "".join(doc.text for doc in docs[:40])
    assert len(long_text) > 200_000
    assert_same(long_text)
    assert_same("  " * 70_000 + "x")


def _piece_counter(pieces: Pieces, feature: str) -> speedups.Model:
    """A Model whose estimate is its text's statistic ``feature`` (weight 1 on it, 0 elsewhere, no floor)."""
    weights = [float(f == feature) for f in FEATURES]
    return speedups.Model(weights, [0.0] * len(FEATURES), 0.0, 0.0, None, tuple(pieces.pieces))


# Runs of piece scripts: real words, characters the vocabulary has no piece for, and text around them.
_PIECE_TEXT = st.lists(st.one_of(
    st.sampled_from(["नमस्ते ", "दुनिया", " के ", "মানুষ ", "ภาษาไทย", "Բարեւ ", "مرحبا", " ", "  ", "x", "1", "-", "\n",
                     "ক্ষ", "\u200c", "中", "á"]),
    st.text(alphabet=st.sampled_from([chr(cp) for lo, hi in PIECE_RANGES[:6] for cp in range(lo, hi + 1, 3)]),
            max_size=12),
), max_size=30).map("".join)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_PIECE_TEXT)
def test_pieces_are_cut_as_in_python(text: str) -> None:
    """The accelerator's greedy cut gives ``Pieces.count``'s number, for the o200k table and a small one where the
    longest piece is short (so that runs are cut often) and the space-led pieces matter."""
    small = Pieces(["नम", "नमस्", " दु", "दुनिया", "या", " म", "ภา", "ษาไ", " Բա", "مر", "حبا"])
    for pieces in (target_pieces("o200k_base"), small):
        for feature, expected in zip(("pieces", "piece_words"), pieces.count(text)[:2], strict=True):
            assert _piece_counter(pieces, feature).estimate(text) == (
                min(len(text.encode()), max(1, expected)) if text else 0)
    assert_same(text)


# Latin text of every kind cut_latin meets: words of languages other than English, accented and decomposed letters,
# Latin extended and Vietnamese, English and code around the thresholds, digits, apostrophes, other scripts.
_LATIN_TEXT = st.lists(st.one_of(
    st.sampled_from(["Wszyscy ", "ludzie ", "rodzą ", "się ", "naïve ", "café", "Việt ", "ʻōlelo ", "sie\u0328 ",
                     "Ngwana ", "the ", " the ", "The ", "getUserName", "x2", "l'homme ", "ÀÉÎÕÜ", "ß", "«»", "°",
                     " ", "  ", "1", "-", ",", "\n", "Жж ", "中", "नम", "{", "}", "%(count)s ", "septiliwn ",
                     "return ", "self.x", "=", "();"]),
    st.text(alphabet=st.sampled_from([chr(cp) for lo, hi in LATIN_RANGES for cp in range(lo, hi + 1, 7)]),
            max_size=20),
), max_size=40).map("".join)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_LATIN_TEXT)
def test_latin_words_are_cut_as_in_python(text: str) -> None:
    """Where ``cut_latin`` cuts a text's Latin words, the accelerator cuts them into the same number of pieces, and
    leaves the same text uncut; every counter counts the text as in Python."""
    for target in TARGETS:
        latin = target_pieces(target, latin=True)
        weights = [float(f == "latin_pieces") for f in FEATURES]
        model = speedups.Model(weights, [0.0] * len(FEATURES), 0.0, 0.0, None, (), tuple(latin.pieces))
        counts, parts, n_bytes = text_parts(text)
        expected = dense_features(*cut_latin(text, counts, parts, functools.partial(target_pieces, target, latin=True))
                                  )[FEATURES.index("latin_pieces")]
        assert model.estimate(text) == (min(n_bytes, max(1, expected)) if text else 0), target
    assert_same(text)


@pytest.mark.slow
def test_latin_pieces_are_read_at_the_first_text_to_cut() -> None:
    """A Model given a callable for its Latin pieces calls it at the first text whose Latin words are cut, once (most
    text is never cut: building the table takes a tenth of a second); an error from it reaches the caller, and the
    next text to cut tries again."""
    calls: list[int] = []
    latin = target_pieces("o200k_base", latin=True)

    def source() -> tuple[str, ...]:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("pieces unreadable")
        return tuple(latin.pieces)

    weights = [float(f == "latin_pieces") for f in FEATURES]
    model = speedups.Model(weights, [0.0] * len(FEATURES), 0.0, 0.0, None, (), source)
    polish = "Wszyscy ludzie rodzą się wolni i równi pod względem swej godności i swych praw."
    for kept in ("The cat sat on the mat, and the dog watched the door.", "def f(x):\n    return x + 1\n", "中文"):
        model.estimate(kept)
    assert calls == []
    with pytest.raises(OSError, match="pieces unreadable"):
        model.estimate(polish)
    assert model.estimate(polish) == latin.count(polish)[0] == model.estimate(polish)
    assert calls == [1, 1]


def test_cached_cuts_count_as_fresh_ones() -> None:
    """The accelerator remembers the cut of short runs in a small table: thousands of distinct words (which evict
    each other) count the same on a second pass, by a fresh Model, and as ``Pieces.count`` does."""
    o200k = target_pieces("o200k_base")
    letters = [chr(cp) for cp in range(0x915, 0x939)]
    signs = ["", "\u093e", "\u093f", "\u0940", "\u0941", "\u0947", "\u094b", "\u094d"]
    words = [a + s + b + t for a in letters[:12] for s in signs for b in letters[12:24] for t in signs[:4]]
    text = " ".join(words * 2)
    model = _piece_counter(o200k, "pieces")
    first = model.estimate(text)
    assert first == model.estimate(text) == _piece_counter(o200k, "pieces").estimate(text) == o200k.count(text)[0]
    assert len(words) > 2 * 2048


def test_surrogates_are_counted_as_their_replacement() -> None:
    """A lone surrogate raises what ``str.encode`` raises, and count_text counts the text as tiktoken would see it."""
    text = "caf\udce9 and more \ud83d words"
    with pytest.raises(UnicodeEncodeError):
        speedups.text_parts(text)
    with pytest.raises(UnicodeEncodeError):
        text_parts(text)
    for counter in COUNTERS:
        assert _c_count(counter, scalar_text(text)) == _python_count(counter, scalar_text(text))
        assert counter.count_text(text) == counter.count_text(scalar_text(text))
        assert scalar_text(text) != text


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="count_text expects a str, got bytes"):
        ApproximateCounter().count_text(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected a str, got int"):
        speedups.text_parts(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no safe bounds"):
        speedups.Model([0.0] * len(FEATURES), [0.0] * len(FEATURES), 0.0, 0.0, None).safe("text")
    with pytest.raises(ValueError, match="expected"):
        speedups.Model([0.0] * 3, [0.0] * 3, 0.0, 0.0, None)
    for bad in (["ok", 3], ["x" * 65], [""]):
        with pytest.raises(ValueError, match="Model pieces: each must be a str of 1 to 64 characters"):
            speedups.Model([0.0] * len(FEATURES), [0.0] * len(FEATURES), 0.0, 0.0, None, bad)
        latin = speedups.Model([0.0] * len(FEATURES), [0.0] * len(FEATURES), 0.0, 0.0, None, (), lambda bad=bad: bad)
        with pytest.raises(ValueError, match="Model pieces: each must be a str of 1 to 64 characters"):
            latin.estimate("Wszyscy ludzie rodzą się wolni")
    with pytest.raises(TypeError, match="Model pieces must be a sequence of str"):
        speedups.Model([0.0] * len(FEATURES), [0.0] * len(FEATURES), 0.0, 0.0, None, (), 3)  # type: ignore[arg-type]


def test_configure_again_rebuilds_the_same_tables() -> None:
    """A second configure (the package imported again in the process) is accepted; a failed one leaves nothing to
    count with until one succeeds, never half a table."""
    texts = ["The quick brown fox. " * 9, "我们今天去公园散步。" * 7, "Съешь же ещё этих булок. " * 5]
    before = [[counter.count_text(t) for t in texts] for counter in COUNTERS]
    tables = accelerator_tables()
    speedups.configure(*tables["configure"])
    speedups.configure_safe(*tables["configure_safe"])
    assert [[counter.count_text(t) for t in texts] for counter in COUNTERS] == before
    bad = list(tables["configure"])
    bad[5] = bad[5][:10]  # feature_of_code cut short
    with pytest.raises(TypeError, match="feature_of_code must be a tuple of 256 ints"):
        speedups.configure(*bad)
    try:
        with pytest.raises(RuntimeError, match=r"configure\(\) was not called"):
            speedups.text_parts("text")
    finally:
        speedups.configure(*tables["configure"])
        speedups.configure_safe(*tables["configure_safe"])
    assert [[counter.count_text(t) for t in texts] for counter in COUNTERS] == before


@pytest.mark.slow
def test_reimporting_ctxwin_in_the_same_process() -> None:
    """``importlib.reload`` of the accelerator module and a fresh ``import ctxwin`` after dropping it from
    ``sys.modules`` (test runners, IPython's autoreload) keep counting the same (a real subprocess: its own
    module state)."""
    script = (
        "import importlib, sys\n"
        "import ctxwin\n"
        "from ctxwin.counters._approximate import accelerator\n"
        "text = 'The quick brown fox jumps over the lazy dog. 我们今天去公园散步。'\n"
        "first = ctxwin.get_counter('approximate').count_text(text)\n"
        "assert accelerator.MODEL is not None\n"
        "importlib.reload(accelerator)\n"
        "importlib.reload(sys.modules['ctxwin.counters._approximate.speedups'])\n"
        "importlib.reload(accelerator)\n"
        "for name in [n for n in sys.modules if n == 'ctxwin' or n.startswith('ctxwin.')]:\n"
        "    del sys.modules[name]\n"
        "import ctxwin\n"
        "from ctxwin.counters._approximate.counter import ApproximateCounter\n"
        "again = ctxwin.get_counter('approximate').count_text(text)\n"
        "safe = ApproximateCounter(safe=True).count_text(text)\n"
        "import ctxwin.cli._main\n"
        "print(first, again, safe > 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "CTXWIN_NO_ACCELERATOR"})
    assert done.returncode == 0, done.stderr
    first, again, safe = done.stdout.split()
    assert first == again and safe == "True"


@pytest.mark.slow
def test_turned_off_it_counts_the_same_in_python() -> None:
    """``CTXWIN_NO_ACCELERATOR=1`` (a real subprocess): the counter counts in Python, with the same numbers."""
    texts = ["The quick brown fox jumps over the lazy dog. " * 9, "我们今天去公园散步，天气很好。" * 7,
             "Съешь же ещё этих мягких французских булок. " * 5, '{"id": "9f86d081-884c-7d65", "n": [1, 2]}' * 4]
    script = (
        "import json, sys\n"
        "from ctxwin.counters._approximate.counter import ApproximateCounter\n"
        "from ctxwin.counters._approximate.accelerator import MODEL\n"
        "counters = [ApproximateCounter(t, safe=s) for t in ('o200k_base', 'cl100k_base') for s in (False, True)]\n"
        "texts = json.loads(sys.stdin.read())\n"
        "print(json.dumps([MODEL is None, [[c.count_text(t) for t in texts] for c in counters]]))\n"
    )
    env = {**os.environ, "CTXWIN_NO_ACCELERATOR": "1"}
    done = subprocess.run([sys.executable, "-c", script], input=json.dumps(texts), capture_output=True, text=True,
                          env=env, check=True, timeout=120)
    python_off, counts = json.loads(done.stdout)
    assert python_off
    assert counts == [[c.count_text(t) for t in texts] for c in COUNTERS]
