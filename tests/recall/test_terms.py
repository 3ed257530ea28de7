"""Recall's term counts: the C scanner (one pass over a text for all terms) counts as the Python loop does (one
pass per term), on text dense with what makes counting hard: words inside words, underscores, digits, CJK, Thai and
Han Extension B written against Latin, overlapping terms, characters outside the BMP, lone surrogates."""

from __future__ import annotations

import os
import shutil
import sysconfig
from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxwin.recall import _terms
from ctxwin.recall._terms import py_term_counts, term_counts
from ctxwin.recall._text import UNSPACED_RANGES


def scanner() -> Callable[[list[str], list[str], list[bool]], _terms.Counts]:
    """The C scanner; skips where it is turned off or cannot be built, fails where it should have been."""
    if _terms._C_TERM_COUNTS is None:
        if os.environ.get("CTXWIN_NO_ACCELERATOR") or not shutil.which(
            (sysconfig.get_config_var("CC") or "cc").split()[0]
        ):
            pytest.skip("the C scanner is turned off or there is no C compiler")
        pytest.fail("a C compiler is present but ctxwin/recall/_termscan.c is not built: reinstall the package "
                    "(pip install -e .) and read the build log", pytrace=False)
    c_counts = _terms._C_TERM_COUNTS
    return lambda texts, terms, whole: c_counts(texts, terms, whole, UNSPACED_RANGES)

# A surrogate alone (a JSON "\ud800" escape), Thai with a vowel mark, Han Extension B, a NUL.
ALPHABET = "ab_1 .\n-é是の글😀\ud800\udc00ครั𠀀\x00"
pieces = st.text(ALPHABET, min_size=1, max_size=5)


def test_words_count_where_whole_and_other_terms_as_str_count() -> None:
    texts = [
        "the border crossing reorders its order; order-tracking, orders",
        "quito_support_escalation moved to quito",
        "仓库确认order已发货 and 是是是",
        "nothing to see",
    ]
    counts = term_counts(texts, ["order", "quito", "是是"], [True, True, False])
    assert counts == [(2, 0, 0), (0, 2, 0), (1, 0, 1), None]


def test_a_script_written_without_spaces_bounds_a_word() -> None:
    texts = ["ครับpostgresqlครับ", "𠀀𠀁zurich", "ไม่ใช่postgresqlx", "zurich_office", "zurichx"]
    counts = term_counts(texts, ["postgresql", "zurich"], [True, True])
    assert counts == [(1, 0), (0, 1), None, (0, 1), None]
    # a word holding an underscore is an identifier, which an underscore continues
    assert term_counts(["ext/_directive.py, ext/_directive_options.py"], ["_directive"], [True]) == [(1,)]


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(st.text(ALPHABET, max_size=80), max_size=6),
    terms=st.lists(pieces, min_size=1, max_size=8, unique=True),
    data=st.data(),
)
@example(texts=["aaaa a_a_a"], terms=["aa", "a_a", "a"], data=None)
@example(texts=["ครับab_ครับ 𠀀ab𠀀 ab\ud800ab _a_b a_b_ a_b"], terms=["ab", "a_b", "\ud800"], data=None)
def test_the_c_scanner_counts_as_the_python_loop(texts: list[str], terms: list[str], data: st.DataObject) -> None:
    whole = [data.draw(st.booleans()) for _ in terms] if data is not None else [False, True, True]
    assert scanner()(texts, terms, whole) == py_term_counts(texts, terms, whole)


def test_the_c_scanner_refuses_what_it_cannot_count() -> None:
    count = scanner()
    with pytest.raises(TypeError, match="term 1 is not a non-empty str"):
        count(["text"], ["a", ""], [True, True])
    with pytest.raises(TypeError, match="text 0 is not a str"):
        count([b"text"], ["a"], [True])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="given twice"):
        count(["text"], ["a", "a"], [True, True])
    with pytest.raises(ValueError, match="differ in length"):
        count(["text"], ["a"], [])
    with pytest.raises(TypeError, match="range 0 is not a"):
        _terms._C_TERM_COUNTS(["text"], ["a"], [True], ("ab",))  # type: ignore[misc]


def test_many_terms_go_through_the_scanner_and_count_the_same() -> None:
    texts = ["ticket ly-2231 for quito_support_escalation, 大阪倉庫 order", "border orders", ""]
    terms = ["ly", "2231", "quito", "support", "order", "大阪倉", "阪倉庫", "ticket"]
    whole = [True, True, True, True, True, False, False, True]
    assert len(terms) >= _terms.C_FROM_TERMS
    assert term_counts(texts, terms, whole) == py_term_counts(texts, terms, whole)
    assert term_counts(texts, terms, whole)[0] == (1, 1, 1, 1, 1, 1, 1, 1)
