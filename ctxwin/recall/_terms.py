"""How often each of a query's terms occurs in each of many folded texts: what a one-off plan's recall reads what it
left out for (``InputRecall``). The C scanner (``_termscan.c``) gives the same counts where it was built.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from ctxwin.recall._text import UNSPACED_RANGES, whole_at

Counts = list[tuple[int, ...] | None]


def _whole_words(word: str, text: str) -> int:
    """How often ``word`` occurs in ``text`` as a word, left to right without overlap."""
    count = 0
    at = whole_at(text, word)
    while at >= 0:
        count += 1
        at = whole_at(text, word, at + len(word))
    return count


def py_term_counts(texts: Sequence[str], terms: Sequence[str], whole: Sequence[bool]) -> Counts:
    """For each text, None where no term occurs, else each term's count (``whole``: the term is a word)."""
    out: Counts = []
    for text in texts:
        held = [k for k, term in enumerate(terms) if term in text]  # a cheap test first: most texts hold none
        counts = [0] * len(terms)
        for k in held:
            counts[k] = _whole_words(terms[k], text) if whole[k] else text.count(terms[k])
        out.append(tuple(counts) if any(counts) else None)
    return out


Scanner = Callable[[list[str], list[str], list[bool], tuple[tuple[int, int], ...]], Counts]


def _scanner() -> Scanner | None:
    if os.environ.get("CTXWIN_NO_ACCELERATOR"):
        return None
    try:
        from ctxwin.recall._termscan import term_counts
    except ImportError:  # not built: no C compiler when the package was installed
        return None
    return term_counts


_C_TERM_COUNTS = _scanner()
# From this many terms on the C scanner is the faster: it steps through every character (an automaton's step waits
# for the last one), where ``str.find`` skips through a text for one term several times faster, so a few terms'
# passes cost less than one step a character (benchmarks/README.md, "Recall's cost in a one-off plan").
C_FROM_TERMS = 7


def term_counts(texts: Sequence[str], terms: Sequence[str], whole: Sequence[bool]) -> Counts:
    """For each of ``texts``, None where none of ``terms`` (distinct, non-empty) occurs, else each term's count;
    ``whole[k]``: term ``k`` is a word."""
    if _C_TERM_COUNTS is None or len(terms) < C_FROM_TERMS:
        return py_term_counts(texts, terms, whole)
    return _C_TERM_COUNTS(list(texts), list(terms), list(whole), UNSPACED_RANGES)
