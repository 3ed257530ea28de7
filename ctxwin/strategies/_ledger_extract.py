"""The ledger's extractor: the typed statements one message makes, read from their structure (negation, modal verbs,
a bound beside a number, words of aim, an answer's form, a stated value), in the user's own words, the assistant's
commitments and the tool-result lines the user asked about (docs/planner.md, "The ledger")."""

from __future__ import annotations

import functools
import itertools
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from ctxwin.strategies._facts import items
from ctxwin.strategies._keep import OWN_WORDS_CHARS, keep_cue, kept_pieces, own_words
from ctxwin.strategies._ledger_words import (
    BOUNDS,
    COMMITMENTS,
    CORRECTIONS,
    DIRECTIVES,
    FORMS,
    FUNCTION,
    GOALS,
    MARKERS,
    Text,
)
from ctxwin.strategies._salience import pieces

# The metadata keys of the messages ctxwin writes (summaries, recalls, ledger blocks).
CTXWIN_KEYS = "ctxwin_"
# A line up to this many characters is one statement (its sentences read together: "X is hands off. Nobody touches
# it."); a longer one is read sentence by sentence.
LINE_CHARS = 240
# A short user turn of its own with this many subject terms is a statement even without a marker or a value.
STANDALONE_TERMS = 4
# A statement is quoted up to this many characters (a long sentence is cut around its values).
STATEMENT_CHARS = 300
# A tool result up to this many characters is one fact when it answers the user's question; a longer one gives the
# lines that share the question's terms, at most TOOL_LINES of them.
TOOL_CHARS = 400
TOOL_LINES = 3
TOOL_CANDIDATES = 64  # lines mentioning the question read at most, from the top
# A long user message's last paragraphs up to this many characters each, at most TRAILING_PARAGRAPHS of them, are
# its own words (what it says after a paste).
TRAILING_CHARS = 400
TRAILING_PARAGRAPHS = 4
# Fact kinds that make a declarative sentence a fact (a code symbol without digits, in a sentence, is prose).
VALUE_KINDS = frozenset({"id", "url", "email", "path", "file", "date", "time", "quantity", "phone", "ip", "number",
                         "name"})
# A number of its own (not part of an identifier: "sync-49", "v2"), maybe with a unit: "17 pods", "12G".
_NUMBER = re.compile(r"(?<![\w.\-/#])\d[\d,.]*(?![\w.\-/]*[\-/_])")
_AMOUNT_KINDS = frozenset({"quantity", "date", "time", "number"})
_SPACED_WORD = re.compile(r"[A-Za-zÀ-ÿ]+")
_QUESTION = re.compile(r"[?？]\s*$")
_LEAD_IN = re.compile(r"[:：]\s*$")
_WORD = re.compile(r"[^\W\d_][\w'-]*")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+")
# A leading label: "Note: ...", "SAFETY RULE: ...", "Constraint: ...".
_LABEL = re.compile(r"^[^\W\d_][\w'-]*(?:\s+[\w'-]+){0,3}\s*[:：]\s+")
# A leading condition before a main clause: "If X, ...", "When X, ...".
_CONDITION = re.compile(
    r"^(?:if|when|whenever|before|after|unless|once|in case|whatever|wherever)\b[^,;]{0,160}[,;]\s*", re.I)
_AUXILIARIES = frozenset({"is", "are", "was", "were", "be", "been", "has", "have", "had", "will", "would", "can",
                          "could", "should", "may", "might", "must", "does", "do", "did", "shall", "isn't", "aren't",
                          "wasn't", "doesn't", "don't", "won't", "can't"})
_PRONOUN_OR_ARTICLE = frozenset({
    "the", "a", "an", "this", "that", "these", "those", "it", "them", "all", "every", "each", "any", "my", "our",
    "your", "me", "us", "his", "her", "their", "its",
})


@dataclass(frozen=True)
class Statement:
    """A typed statement: its kind, its text, the values it states and the terms that say what it is about;
    ``correcting``: it is worded as a correction ("actually", "now", "changed to", ...)."""

    kind: str
    text: str
    values: tuple[str, ...]
    subject: frozenset[str]
    correcting: bool


def subject_terms(text: str, values: tuple[str, ...] = ()) -> frozenset[str]:
    """What ``text`` is about: its words of three letters or more less function words, markers and ``values``;
    for CJK, character pairs."""
    lower = text.lower()
    for value in values:
        lower = lower.replace(value.lower(), " ")
    words = {w.strip("'-") for w in _WORD.findall(lower)}
    terms = {w for w in words if len(w) >= 3 and w not in FUNCTION and w not in MARKERS and not _CJK.match(w)}
    for run in _CJK.findall(lower):
        for marker in _cjk_markers(run):
            run = run.replace(marker, " ")
        for part in run.split():
            terms.update(part[i: i + 2] for i in range(len(part) - 1))
    return frozenset(terms)


def _cjk_markers(run: str) -> list[str]:
    return [*DIRECTIVES.written_in(run), *CORRECTIONS.written_in(run)]


def stated_values(text: str, found: list[tuple[str, str]] | None = None) -> tuple[str, ...]:
    """The values ``text`` states (``facts.items`` of a value kind; a "name" led by a function word, "Das Budget",
    is none); ``found``: its items, when the caller has them."""
    pairs = items(text) if found is None else found
    kept = [item for item, kind in pairs if (kind in VALUE_KINDS or any(c.isdigit() for c in item))
            and not (kind == "name" and item.split()[0].lower() in FUNCTION)]
    return tuple(dict.fromkeys(kept))


def _imperative(text: str, values: tuple[str, ...] = ()) -> bool:
    """An imperative in a spaced script: a verb first, with no subject before it and no auxiliary after it ("Keep
    the export...", "Use metric units...", not "Retries are capped..."), maybe after a leading condition ("If
    it fails, page the on-call.")."""
    clause = _CONDITION.sub("", _LABEL.sub("", text, count=1), count=1)
    words = clause.split()
    if len(words) < 2:
        return False
    first, second = words[0].lower().strip(",.;:!"), words[1].strip(",.;:!")
    if not _SPACED_WORD.fullmatch(first) or first in FUNCTION or first in MARKERS or words[0].endswith(":"):
        return False
    if second.lower() in _PRONOUN_OR_ARTICLE or second in values:
        return True
    # a plural noun, a past form or a gerund first reads as a subject or a report ("Notes", "Deployed the fix",
    # "Discussing the headers")
    return len(words) >= 3 and not first.endswith(("s", "ed", "ing")) and second.lower() not in _AUXILIARIES \
        and not words[1].endswith(":")


def classify(text: str, *, speaker: str = "user", standalone: bool = False) -> Statement | None:
    """The statement ``text`` makes (see the module docstring), or None. ``standalone``: ``text`` is a user's turn
    of its own, short: a declarative one is something told even without a marker or a value."""
    flat = " ".join(text.split())
    if len(flat) < 6 or _QUESTION.search(flat) or _LEAD_IN.search(flat):
        return None
    read = Text(flat.lower())
    if speaker == "assistant" and not COMMITMENTS.found(read):  # (before the values: most of its pieces bind nothing)
        return None
    found = items(flat)
    values = stated_values(flat, found)
    number = _NUMBER.search(flat)
    amount = any(kind in _AMOUNT_KINDS for _, kind in found) or number is not None
    correcting = CORRECTIONS.found(read)
    if speaker == "assistant":
        kind = "rule"
    elif amount and BOUNDS.found(read):
        kind = "limit"
    elif GOALS.found(read):
        kind = "goal"
    elif FORMS.found(read) and (DIRECTIVES.found(read) or _imperative(flat, values) or len(flat) <= LINE_CHARS):
        kind = "preference"
    elif DIRECTIVES.found(read) or _imperative(flat, values):
        kind = "rule"
    elif values or (number is not None and len(number.group()) > 1):  # "question 1" is a label, "17 pods" a fact
        kind = "fact"
    else:
        return None
    quoted = flat if len(flat) <= STATEMENT_CHARS else flat[: STATEMENT_CHARS - 1].rstrip() + "…"
    return Statement(kind, quoted, values, subject_terms(flat, values), correcting)


def _units(text: str) -> list[tuple[str, bool]]:
    """The statement units of a text: each line up to ``LINE_CHARS`` whole (a paragraph of wrapped prose joined
    first), else its sentences; with whether the unit is code."""
    out: list[tuple[str, bool]] = []
    fenced = False  # a code fence may hold blank lines
    for paragraph in text.split("\n\n"):
        joined = " ".join(paragraph.split()) if not fenced and _wrapped(paragraph) else paragraph
        for piece, code in pieces(("```\n" if fenced else "") + joined, sentences=False):
            if fenced or code or len(piece) <= LINE_CHARS:
                out.append((piece, code))
            else:
                out.extend(pieces(piece))
        fenced ^= paragraph.count("```") % 2 == 1
    return out


def _wrapped(paragraph: str) -> bool:
    """A paragraph of prose wrapped at a fixed width (a line that does not end a sentence, then one that goes on in
    lower case): pasted documentation, which a user typing into a chat does not write."""
    lines = [line.strip() for line in paragraph.strip().splitlines()]
    return any(a and b and a[-1] not in ".!?:;。！？" and b[0].islower() for a, b in itertools.pairwise(lines))


def _own(units: list[tuple[str, bool]], text: str) -> list[bool]:
    """Which units of a user message are its own words: ``keep.own_words`` (a short message whole, else its first
    and last paragraphs), and the short paragraphs that end a long one after what it pasted (a question, then a
    remark or two), up to ``TRAILING_PARAGRAPHS``; never a paragraph of wrapped prose."""
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    pasted = [" ".join(p.split()) for p in paragraphs if _wrapped(p)]
    own = [mine and not any(unit in p for p in pasted) for (unit, _), mine in zip(units, own_words(units, text),
                                                                                  strict=True)]
    if len(text) <= OWN_WORDS_CHARS:
        return own
    trailing: list[str] = []
    for paragraph in reversed(paragraphs):
        if len(paragraph) > TRAILING_CHARS or "```" in paragraph or _wrapped(paragraph) \
                or len(trailing) >= TRAILING_PARAGRAPHS:
            break
        trailing.append(" ".join(paragraph.split()))
    return [mine or (not code and any(unit in p for p in trailing)) for (unit, code), mine in zip(units, own,
                                                                                              strict=True)]


def user_statements(text: str) -> list[Statement]:
    """The statements of a user message's own words."""
    units = _units(text)
    own = _own(units, text)
    if len(text) <= LINE_CHARS:
        kept = own
    elif keep_cue("\n".join(unit for unit, code in units if not code)):  # one search before one a piece
        kept = kept_pieces(units, text)
    else:
        kept = [False] * len(units)
    standalone = len(text) <= LINE_CHARS
    found = []
    for (unit, code), mine, keep in zip(units, own, kept, strict=True):
        if code or not (mine or keep):
            continue
        statement = classify(unit, standalone=standalone)
        if statement is not None:
            found.append(statement)
    return found


def assistant_statements(text: str) -> list[Statement]:
    """The assistant's commitments in ``text``."""
    if not COMMITMENTS.found(Text(text.lower())):  # most answers bind the assistant to nothing: read no further
        return []
    found = []
    for unit, code in pieces(text):
        statement = None if code else classify(unit, speaker="assistant")
        if statement is not None:
            found.append(statement)
    return found


def tool_statements(text: str, question: str) -> list[Statement]:
    """The facts of a tool result that answer ``question`` (the user message whose turn called the tool)."""
    asked = _question_terms(question)
    if not asked or not text.strip():
        return []
    if len(text) <= TOOL_CHARS:
        body = " ".join(line.strip() for line in text.splitlines() if line.strip())
        values = stated_values(body)
        about = subject_terms(body)
        if values and (about & asked or any(v.lower() in question.lower() for v in values)):
            return [Statement("fact", body, values, about, False)]
        return []
    # only the lines holding a term of the question are read (a long output has thousands of others), a few each
    lower = text.lower()
    # the rarest terms first (the lines that answer are those few), then by name: the same lines on every run
    spaced = sorted((term for term in asked if not _CJK.match(term)), key=lambda term: (lower.count(term), term))
    if not spaced:
        return []
    starts: dict[int, int] = {}  # line start -> end, for each line holding a mention
    for term in spaced:
        at = lower.find(term)
        while at >= 0 and len(starts) <= TOOL_CANDIDATES:
            start = lower.rfind("\n", 0, at) + 1
            end = lower.find("\n", at)
            end = len(lower) if end < 0 else end
            starts.setdefault(start, end)
            at = lower.find(term, end)
    candidates = [(text[a:b], asked.intersection(_WORD.findall(lower[a:b])))
                  for a, b in sorted(starts.items()) if b - a <= LINE_CHARS]
    # a term of the question in every line of a listing says nothing of which line answers it: the terms in at
    # most two lines are specific, and only the lines holding one are read further
    spread: dict[str, int] = {}
    for _, words in candidates:
        for term in words:
            spread[term] = spread.get(term, 0) + 1
    specific = {term for term, n in spread.items() if n <= 2}
    found = []
    for raw, words in candidates:
        if words.isdisjoint(specific):
            continue
        for line, code in pieces(raw, sentences=False):
            values = () if code else stated_values(line)
            line_terms = subject_terms(line, values) if values else frozenset()
            if line_terms & specific:
                found.append(Statement("fact", line, values, line_terms, False))
                if len(found) >= TOOL_LINES:
                    return found
    return found


@functools.lru_cache(maxsize=64)
def _question_terms(question: str) -> frozenset[str]:
    """``subject_terms`` of a user's question, which every tool result of its turn is read against."""
    return subject_terms(question)


def statements(message: BaseMessage, question: str = "") -> list[Statement]:
    """The statements ``message`` makes: a user's, an assistant's commitments, a tool result's answer to
    ``question``; none for a system message (the system prompt is sent whole in every request) or one ctxwin wrote
    (a summary, a recall: what they quote was read where it was said). What a text says is remembered
    (``_SAID``): a chat loop fitting its growing conversation reads each message once, not at every fit."""
    if any(key.startswith(CTXWIN_KEYS) for key in message.response_metadata):
        return []
    read: Callable[[str], list[Statement]]
    if isinstance(message, HumanMessage):
        read, key = user_statements, ("user", "")
    elif isinstance(message, AIMessage):
        read, key = assistant_statements, ("assistant", "")
    elif isinstance(message, ToolMessage):
        read, key = functools.partial(tool_statements, question=question), ("tool", question)
    else:
        return []
    text = message.text
    if not text:
        return []
    return _SAID.get((*key, len(text), hash(text)), lambda: read(text))


# A text's key: its speaker, the question (a tool result's), its length and its hash, not the text itself (a cache
# of pasted logs would hold their megabytes); two texts of one length whose 64-bit hashes agree are not expected.
_Key = tuple[str, str, int, int]


class _Said:
    """The statements of the texts read last, at most ``size`` of them (the oldest forgotten first), shared by
    every ledger of the process (the statements are immutable)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._said: dict[_Key, list[Statement]] = {}
        self._lock = threading.Lock()

    def get(self, key: _Key, read: Callable[[], list[Statement]]) -> list[Statement]:
        with self._lock:
            said = self._said.pop(key, None)
            if said is not None:
                self._said[key] = said  # the newest again
                return list(said)
        said = read()
        with self._lock:
            self._said[key] = said
            while len(self._said) > self._size:
                del self._said[next(iter(self._said))]
        return list(said)

    def clear(self) -> None:
        """Forget every text (a cold read, as the benchmarks measure it)."""
        with self._lock:
            self._said.clear()


_SAID = _Said(20_000)
