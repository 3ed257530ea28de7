"""What the user asked to keep (keep cues, in the user's own words rather than a paste) and what the newest message asks
about (query terms): read by the offline summarizer (docs/planner.md, "The offline summarizer").
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

# The cues of an explicit request to keep something, lower case; a multi-word cue is matched as written.
KEEP_CUES = (
    # English
    "remember", "note that", "make a note", "take note", "note:", "keep in mind", "bear in mind", "don't forget",
    "do not forget", "dont forget", "keep it", "keep this", "keep that", "log it", "log this", "please log",
    "please note", "please remember", "please keep", "please record", "please save", "file it under",
    "for the record", "for later", "write this down", "write it down", "save this",
    "hold on to", "important:",
    # French
    "n'oublie pas", "n'oubliez pas", "retiens", "retenez", "souviens-toi", "souvenez-vous", "note bien",
    "notez bien", "prends note", "prenez note", "garde en tête", "gardez en tête", "garde-le", "gardez-le",
    "à retenir", "pour mémoire",
    # German
    "merk dir", "merken sie sich", "merke dir", "nicht vergessen", "vergiss nicht", "vergessen sie nicht",
    "notier dir", "notieren sie", "notiere", "behalte", "behalten sie", "denk daran", "denken sie daran", "zur info",
    # Spanish, Portuguese, Italian
    "no olvides", "no te olvides", "no olvide", "recuerda", "recuerde", "ten en cuenta", "tenga en cuenta",
    "anota", "apunta", "guarda esto", "toma nota", "não esqueça", "não se esqueça", "lembre", "anote",
    "non dimenticare", "ricorda", "tieni a mente", "prendi nota",
    # Chinese, Japanese, Korean, Russian
    "记住", "記住", "别忘", "別忘", "不要忘", "记下", "記下", "记一下", "备注", "請記", "请记",
    "覚えて", "忘れないで", "忘れずに", "メモして", "控えて", "覚えといて", "念のため",
    "기억해", "기억하세요", "잊지 마", "잊지마", "메모해",
    "запомни", "не забудь", "не забудьте", "запиши", "имей в виду", "имейте в виду",
)
# Cues that documentation and code comments use as well (counted in Python's stdlib sources and reference docs):
# in a long user message they count only in the user's own words or beside a checkable fact.
DOCS_CUES = frozenset({
    "remember", "note that", "note:", "make a note", "take note", "keep in mind", "bear in mind", "keep it",
    "keep this", "keep that", "for the record", "for later", "save this", "important:", "hold on to", "please note",
})
OWN_WORDS_CHARS = 600
_SPACED = re.compile(r"[a-zа-яà-ÿ]")


def _cues(cues: Iterable[str]) -> re.Pattern[str]:
    return re.compile("|".join(
        (r"(?<![\w'])" if _SPACED.match(cue) else "") + re.escape(cue) + (r"(?!\w)" if _SPACED.match(cue[-1]) else "")
        for cue in sorted(cues, key=len, reverse=True)
    ))


_KEEP = _cues(KEEP_CUES)
_EXPLICIT = _cues(set(KEEP_CUES) - DOCS_CUES)
# A cue of a spaced script starts with a whole run of word characters (its boundaries say so): a text whose runs
# hold none of those first runs, and none of the other cues as written, holds no cue. That set lookup comes before
# the pattern, whose many alternatives are tried at every character of a long text.
_RUN = re.compile(r"\w+")
_FIRST_RUNS = frozenset(_RUN.match(cue).group() for cue in KEEP_CUES if _SPACED.match(cue))  # type: ignore[union-attr]
_WRITTEN = tuple(cue for cue in KEEP_CUES if not _SPACED.match(cue))


def keep_cue(text: str, *, explicit: bool = False) -> bool:
    """Whether ``text`` holds a request to keep something (``explicit``: one documentation does not use)."""
    lower = text.lower()
    if _FIRST_RUNS.isdisjoint(_RUN.findall(lower)) and not any(cue in lower for cue in _WRITTEN):
        return False
    return (_EXPLICIT if explicit else _KEEP).search(lower) is not None


def own_words(pieces: Sequence[tuple[str, bool]], text: str) -> list[bool]:
    """For each ``(piece, is_code)`` of a user message's ``text``, whether it is the user's own words: prose, in a
    short message or in the first or last paragraph (up to ``OWN_WORDS_CHARS`` each) of a longer one."""
    if len(text) <= OWN_WORDS_CHARS:
        return [not code for _, code in pieces]
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    own = [" ".join(p.split()) for p in (paragraphs[0], paragraphs[-1]) if len(p) <= OWN_WORDS_CHARS]
    return [not code and any(piece in paragraph for paragraph in own) for piece, code in pieces]


def kept_pieces(pieces: Sequence[tuple[str, bool]], text: str, factual: Sequence[bool] | None = None) -> list[bool]:
    """For each ``(piece, is_code)`` of a user message's ``text``, whether the user asked to keep it:
    every own-words piece of a short message with a keep cue; in a longer one, a cued piece (see the module
    docstring; ``factual[i]``: piece i states a checkable fact), and the prose beside a cued piece that states none
    ("X is 42. Keep it.")."""
    own = own_words(pieces, text)
    factual = factual if factual is not None else [False] * len(pieces)
    cued = [not code and (keep_cue(piece) if own[i] or factual[i] else keep_cue(piece, explicit=True))
            for i, (piece, code) in enumerate(pieces)]
    if not any(cued):
        return [False] * len(pieces)
    if len(text) <= OWN_WORDS_CHARS:
        return own
    bare = [cued[i] and not factual[i] for i in range(len(pieces))]  # "Keep it.": the fact is beside it
    return [not code and (cued[i] or any(bare[max(i - 1, 0): i + 2])) for i, (_, code) in enumerate(pieces)]


_WORD = re.compile(r"[^\W\d_][\w'-]{2,}|\d[\w.-]{2,}")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+")
# Words that say nothing of what a question is about (and the words of asking back: "going back to", "remind me").
_FUNCTION_TEXT = (
    "the and for are but not you your all any can had her was one our out has have him his how its may new now old "
    "see two way who did get got let put say she too use what when where which while with would could should there "
    "their them then than this that these those from into about again back going earlier before remind tell "
    "talked talk said were been being also just only very some more most other such here what's whats it's was "
    "does do did please thanks thank okay yes"
)
_FUNCTION_WORDS = frozenset(_FUNCTION_TEXT.split())


def query_terms(text: str) -> set[str]:
    """The terms of ``text`` that say what it is about (docs/planner.md, "The offline summarizer")."""
    lower = text.lower()
    terms = {w.strip("'-.") for w in _WORD.findall(lower)} - _FUNCTION_WORDS
    for run in _CJK.findall(lower):
        terms.update(run[i: i + 2] for i in range(len(run) - 1))
    return {t for t in terms if len(t) >= 2}


class QueryMatch:
    """How much excerpts share a query's terms, each term weighed by its rarity among the excerpts (idf)."""

    def __init__(self, query: str, texts: Iterable[str]) -> None:
        self.terms = query_terms(query)
        lowered = [t.lower() for t in texts]
        self.found = [{term for term in self.terms if term in text} for text in lowered]
        frequency = Counter(term for found in self.found for term in found)
        self.idf = {term: math.log((1 + len(lowered)) / (1 + frequency[term])) for term in self.terms}

    def scores(self) -> list[float]:
        return [sum(self.idf[t] for t in found) for found in self.found]
