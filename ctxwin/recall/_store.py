"""``RecallStore``: what left a request, searchable by full text (SQLite FTS5, BM25 ranking), filled incrementally so a
session indexes each message once. Its tables, folding and relevance rule: docs/recall.md.
"""

from __future__ import annotations

import functools
import json
import math
import re
import sqlite3
import threading
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ctxwin.messages import AIMessage, BaseMessage, ToolCall, ToolMessage
from ctxwin.messages._openai_format import openai_role
from ctxwin.recall._text import UNSPACED, WORD, fold, spaced, storable, whole_at

EXCERPT_CHARS = 300
# json.dumps's, without its per-call set-up; a value JSON has no form for (a date in a tool call's arguments) as its str
_arguments = json.JSONEncoder(ensure_ascii=False, default=str).encode
QUERY_WORDS = 32  # the words a query is searched by at the most (query_terms)
QUERY_GRAMS = 64  # and the pieces of unspaced script (a pasted Chinese document must not make thousands)
# The candidates BM25 returns before relevance is weighed in Python.
_CANDIDATES = 24
# The most excerpts of one message a search returns: a long tool output that names the query's words on every line
# must not crowd out the short message that answers it.
_PER_MESSAGE = 2
# An excerpt is relevant only if it holds a distinctive query term: one in at most this share of the excerpts (or
# _RARE_MIN of them), so a query whose words every excerpt has (a tool called the same way a hundred times) recalls
# nothing.
_RARE_SHARE = 0.15
_RARE_MIN = 1
# An excerpt that holds only some of the query's terms is relevant only if those terms are together in at most this
# many messages: more, and they are a phrase the conversation repeats (a question's frame like "how does ... interact
# with the rest", a tool's boilerplate), not what this question is about.
_RECURRING = 3
# A query keeps its this many heaviest terms (a pasted log as the question must not make a thousand-term query).
_MAX_TERMS = 24
# What ends a sentence or a clause, after which a capital is the first word's, not a name's (named_words).
_CLAUSE_ENDS = frozenset(".!?:;\"'(«“¿¡")

# A query's words and its runs of unspaced script (``_text.UNSPACED``: indexed by trigram; Hangul is spaced, but its
# particles stick to nouns, so trigrams find "티켓" in "티켓은" too). A run is taken whole, its vowel marks with it
# (a Thai mark is no word character).
_TOKEN = re.compile(f"{UNSPACED.pattern}|{WORD.pattern}")
# Words that say nothing about what a question is about: function words and what a question about the past says
# around its subject ("going back to...", "what was...").
_STOPWORD_TEXT = """
a about above actually after again against ago all also am an and any anything are as ask asked at back be
because been before being below between both but by can cannot could did do does doing done down during each
earlier else even ever exactly few find for found from further get give go going got had has have having he her
here hers him his how i if in into is it its itself just keep kept know last let like look me mean meant
mentioned more most my myself need no nor not note noted now of off ok okay on once one only or other our ours
out over own please previously quick quickly recall really remember remind right said same say see she should so
some something still such sure talk talked tell than thank thanks that the their them then there these they
thing things think this those through to today told too under until up us use used very want was way we were
what whatever when where which while who whom why will with would yes yesterday you your yours yourself hi hello
hey again
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# Function characters and question words of the unspaced scripts, taken out of a query's runs before they are cut
# into trigrams (a trigram of "是什么" matches nothing the conversation said about its subject).
_UNSPACED_FILLER = re.compile(
    "什么时候|什么|之前|刚才|那个|这个|哪个|哪里|多少|几|哪|吗|呢|吧|啊|的|了|是|请|问|我们|我|你|他|说|过|再|一下|"
    "いつ|どこ|どれ|だれ|誰|"
    "なん|何|でした|です|ます|でしょう|ですか|した|って|の|は|が|を|に|で|と|も|か|ね|よ|"
    "이전에|무엇|뭐|였|입니다|은|는|이|가|을|를|에|요"
)


# Document frequencies of terms and the number of documents (RecallStore.search's ``frequencies``).
Frequencies = tuple[dict[str, int], int]


@dataclass(frozen=True)
class Excerpt:
    """A piece of a message the store holds: its text and where it was. ``position``: the message's index in the
    conversation; ``part``: the excerpt's index within the message (tool calls come after the text);
    ``tool``/``call_id``: a tool result's or a tool call's; ``score``: the relevance a search gave it (0 to 1)."""

    position: int
    part: int
    role: str
    text: str
    message_id: str | None = None
    tool: str | None = None
    call_id: str | None = None
    score: float = 0.0

    @property
    def label(self) -> str:
        """How recall names it: the message id, or ``#position``."""
        return self.message_id or f"#{self.position}"

    @property
    def heading(self) -> str:
        """The line that heads it where recall shows it: label, role, tool name and call id."""
        tool = f" {self.tool}" if self.tool else ""
        call = f" (call {self.call_id})" if self.call_id else ""
        return f"--- {self.label}, {self.role}{tool}{call} ---"

    def as_dict(self) -> dict[str, object]:
        return {"position": self.position, "part": self.part, "role": self.role, "message_id": self.message_id,
                "tool": self.tool, "call_id": self.call_id, "score": round(self.score, 4), "text": self.text}


def format_excerpts(excerpts: Sequence[Excerpt]) -> str:
    """Excerpts as text, each under its ``heading``."""
    return "\n".join(f"{e.heading}\n{e.text.strip()}" for e in excerpts)


def pieces(text: str, size: int = EXCERPT_CHARS) -> list[str]:
    """``text`` in pieces of at most ``size`` characters, cut after a line end where one falls in the second half of
    the piece, else after a sentence's end, else after a space (a sentence or a word cut in two is found by
    neither half), else at ``size``."""
    out: list[str] = []
    start = 0
    while len(text) - start > size:
        low, high = start + size // 2, start + size
        end = text.rfind("\n", low, high)
        if end < 0:
            end = max(text.rfind(". ", low, high - 1), text.rfind("? ", low, high - 1), text.rfind("! ", low, high - 1))
            end = end + 1 if end >= 0 else text.rfind(" ", low, high)
        end = high if end < 0 else end + 1
        out.append(text[start:end])
        start = end
    if start < len(text) or not out:
        out.append(text[start:])
    return [piece for piece in out if piece.strip()]


def _call_text(call: ToolCall) -> str:
    """A tool call as the store keeps it: ``name(arguments)``."""
    return storable(f"{call.get('name')}({_arguments(call.get('args', {}))})")


def searchable_text(message: BaseMessage) -> str:
    """All the store would search of ``message`` as it stores it: its text and its tool calls' names and arguments,
    ``storable``."""
    content = message.content
    text = storable(content if content.__class__ is str else str(message.text))
    if isinstance(message, AIMessage) and message.tool_calls:
        return "\n".join([text, *map(_call_text, message.tool_calls)])
    return text


def _storable_or_none(value: str | None) -> str | None:
    return None if value is None else storable(str(value))


def message_excerpts(message: BaseMessage, position: int, *, named: bool = True) -> list[Excerpt]:
    """What the store keeps of ``message``: its text in pieces, then each tool call as ``name(arguments)``; the
    role as providers name it (``user``, ``assistant``), which a recall excerpt's heading shows the model.
    ``named=False``: its id is not kept (an id other messages of the conversation share, such as a framework's
    placeholder, names no one message: the excerpts are labelled by position)."""
    role = openai_role(message)
    message_id = _storable_or_none(message.id) if named else None
    tool = _storable_or_none(message.name) if isinstance(message, ToolMessage) else None
    call_id = _storable_or_none(message.tool_call_id) if isinstance(message, ToolMessage) else None
    out = [Excerpt(position, part, role, text, message_id, tool, call_id)
           for part, text in enumerate(pieces(storable(str(message.text))))]
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            out.append(Excerpt(position, len(out), role, _call_text(call), message_id,
                               _storable_or_none(call.get("name")), _storable_or_none(call.get("id"))))
    return out


def shared_ids(messages: Iterable[BaseMessage]) -> set[str]:
    """The ids more than one of ``messages`` has (``message_excerpts``' ``named``)."""
    seen: set[str] = set()
    shared: set[str] = set()
    for message in messages:
        if message.id is not None:
            (shared if message.id in seen else seen).add(message.id)
    return shared


def query_terms(query: str) -> tuple[list[str], list[str]]:
    """The words (folded, stopwords and one-letter words out) and the pieces of unspaced script (the trigrams
    of each run between function characters, or the run itself when it has two characters) a query is searched by,
    each once, in order. A query with more than ``QUERY_WORDS`` words (a pasted log or file) keeps its most specific
    ones (``_specific``): each word costs a pass over what a plan left out (without the C scanner), and a paste's
    common words (numbers of a timestamp, "print", "error") would find everything; of the pieces it keeps the first
    ``QUERY_GRAMS`` (a question comes before what it pastes, and no piece says more than another)."""
    words: list[str] = []
    grams: list[str] = []
    for word in _TOKEN.findall(fold(storable(query))):
        if UNSPACED.fullmatch(word):
            for run in _UNSPACED_FILLER.split(word):
                if len(run) == 2:
                    grams.append(run)
                grams.extend(run[i : i + 3] for i in range(max(len(run) - 2, 0)))
        elif (len(word) > 1 or word.isdigit()) and word not in STOPWORDS:
            words.append(word)
    words = list(dict.fromkeys(words))
    if len(words) > QUERY_WORDS:
        kept = set(sorted(words, key=_specific, reverse=True)[:QUERY_WORDS])
        words = [word for word in words if word in kept]
    return words, list(dict.fromkeys(grams))[:QUERY_GRAMS]


@dataclass(frozen=True)
class Weighed:
    """A query's terms weighed: each term's inverse document frequency (BM25's; a term no document holds at its
    maximum), the distinctive ones (an excerpt must hold one), and the ``terms`` relevance is measured against
    (the heaviest ``_MAX_TERMS``) with their ``total`` weight."""

    weights: dict[str, float]
    rare: set[str]
    terms: list[str]
    total: float

    @functools.cached_property
    def _counted(self) -> frozenset[str]:
        return frozenset(self.terms)

    def bound(self, held: Iterable[str]) -> float:
        """The most relevance an excerpt of a message holding ``held`` (of the query's terms) can have."""
        counted = self._counted
        return sum(self.weights[t] for t in set(held) if t in counted) / self.total if self.total else 0.0


@dataclass(frozen=True)
class SearchedTerms:
    """What a search looks for: the query's ``words`` and ``grams`` (``query_terms``), then the terms of an agent
    round's tool call (``call``) not already asked, which count only where a document holds them. ``named``: the
    query's words written as names (``named_words``)."""

    words: list[str]
    grams: list[str]
    asked: frozenset[str]
    call: bool
    named: frozenset[str] = frozenset()

    def weighed(self, frequencies: Frequencies) -> Weighed:
        df, n = frequencies
        terms = [*self.words, *self.grams]
        weights = {term: math.log(1 + (n - df.get(term, 0) + 0.5) / (df.get(term, 0) + 0.5)) for term in terms}
        # A term no document holds weighs the most, and so outweighs what the excerpts hold: a question that names
        # something never said (a place, a product, an id) is about what was never said, and so may be one that
        # names nothing. A question that names only what was said (a PIN, an IBAN, an order id) is about that: a
        # plain word of it never said is how the user asks ("I gave it to you at the beginning", "I cannot find the
        # sticky note") and weighs nothing; unspaced script, which writes no names apart, keeps its weight. A
        # call's term never said (a new path or pattern) weighs nothing either.
        names = [t for t in self.named if t in self.asked]
        asking = bool(names) and all(df.get(t, 0) for t in names)
        weights = {t: w for t, w in weights.items()
                   if df.get(t, 0) or (t in self.asked and (not asking or t in self.grams))}
        heaviest = sorted(weights, key=lambda t: -weights[t])[:_MAX_TERMS]
        return Weighed(weights, distinctive(terms, frequencies), heaviest, sum(weights[t] for t in heaviest))


def searched_terms(query: str, call: str = "") -> SearchedTerms:
    """The terms a search for ``query`` (and an agent round's newest ``call``) looks for."""
    words, grams = query_terms(query)
    asked = frozenset({*words, *grams})
    if call:
        more_words, more_grams = query_terms(call)
        words += [w for w in more_words if w not in asked]
        grams += [g for g in more_grams if g not in asked]
    return SearchedTerms(words, grams, asked, bool(call), named_words(query))


def named_words(query: str) -> frozenset[str]:
    """The words (folded) ``query`` writes as names: with a capital other than as the first word of a sentence or
    clause, in capitals (two letters or more), or identifiers (a digit beside letters, an underscore)."""
    text = storable(query)
    named: set[str] = set()
    end = 0
    for match in WORD.finditer(text):
        word, between = match.group(), text[end : match.start()].strip()
        first = end == 0 or (between != "" and between[-1] in _CLAUSE_ENDS)
        end = match.end()
        capitals = sum(c.isupper() for c in word)
        if (capitals and not first) or capitals >= 2 or "_" in word or (not word.isdigit() and any(map(
                str.isdigit, word))):
            named.add(fold(word))
    return frozenset(named)


def distinctive(terms: Iterable[str], frequencies: Frequencies) -> set[str]:
    """The ``terms`` rare enough that an excerpt must hold one of them to be relevant (``_RARE_SHARE``)."""
    df, n = frequencies
    rare = max(_RARE_MIN, _RARE_SHARE * n)
    return {term for term in terms if df.get(term, 0) <= rare}


def _specific(word: str) -> tuple[bool, int]:
    """Identifiers first (a digit beside letters, an underscore: ``LY-2231-X``'s pieces, ``quito_support``), then
    the longer words."""
    mixed = "_" in word or (any(c.isdigit() for c in word) and not word.isdigit())
    return mixed, len(word)


def bigrams(folded: str) -> str:
    """The two-character pieces of the runs of unspaced script of ``folded`` text, space-separated: what the
    ``pairs`` table indexes, so a two-character word (most Chinese words) is a token of its own."""
    return " ".join(run[i : i + 2] for run in UNSPACED.findall(folded) for i in range(len(run) - 1))


def holds(folded: str, term: str, word: bool) -> bool:
    """Whether ``folded`` text holds ``term`` (a query's ``word`` where it is whole: ``_text.whole_at``)."""
    return whole_at(folded, term) >= 0 if word else term in folded


def as_position(handle: str) -> int | None:
    """The position ``#123`` names (ASCII digits, fewer than 19: SQLite's integers hold no more); None when
    ``handle`` names none."""
    digits = handle[1:]
    if handle.startswith("#") and 0 < len(digits) < 19 and digits.isascii() and digits.isdigit():
        return int(digits)
    return None


def _fts_phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


class RecallStore:
    """Excerpts of messages, searchable by full text; in memory, or in the SQLite file at ``path``.

    ``add(messages, start)`` stores messages as positions ``start``, ``start + 1``, ...; ``search(query)`` returns
    the excerpts relevant to it, best first; ``message(handle)`` the whole text of one message by call id, message
    id or ``#position``. Thread-safe (one lock)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self._db = sqlite3.connect(":memory:" if path is None else str(path), check_same_thread=False)
        self._lock = threading.Lock()
        self._db.executescript(
            """
            CREATE TABLE IF NOT EXISTS excerpts (id INTEGER PRIMARY KEY, position INTEGER, part INTEGER, role TEXT,
                text TEXT, message_id TEXT, tool TEXT, call_id TEXT);
            CREATE INDEX IF NOT EXISTS excerpts_position ON excerpts (position);
            CREATE VIRTUAL TABLE IF NOT EXISTS words USING fts5(text, content='',
                tokenize='unicode61 remove_diacritics 0');
            CREATE VIRTUAL TABLE IF NOT EXISTS grams USING fts5(text, content='', tokenize='trigram');
            CREATE VIRTUAL TABLE IF NOT EXISTS words_terms USING fts5vocab(words, 'row');
            CREATE VIRTUAL TABLE IF NOT EXISTS grams_terms USING fts5vocab(grams, 'row');
            CREATE VIRTUAL TABLE IF NOT EXISTS pairs USING fts5(text, content='', tokenize='unicode61');
            CREATE VIRTUAL TABLE IF NOT EXISTS pairs_terms USING fts5vocab(pairs, 'row');
            """
        )
        self._positions: set[int] = {row[0] for row in self._db.execute("SELECT DISTINCT position FROM excerpts")}

    def __len__(self) -> int:
        """How many messages the store holds."""
        return len(self._positions)

    def __contains__(self, position: object) -> bool:
        return position in self._positions

    def close(self) -> None:
        self._db.close()

    def add(self, messages: Iterable[BaseMessage], start: int = 0, *, skip: Collection[int] = ()) -> None:
        """Store ``messages`` as positions ``start`` on (a position already stored, or in ``skip``, is left as
        it is)."""
        excerpts = [
            excerpt
            for position, message in enumerate(messages, start)
            if position not in self._positions and position not in skip
            for excerpt in message_excerpts(message, position)
        ]
        self.add_excerpts(excerpts)

    def add_excerpts(self, excerpts: Sequence[Excerpt]) -> None:
        if not excerpts:
            return
        with self._lock, self._db:
            first = self._db.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM excerpts").fetchone()[0]
            rows = [(first + i, e.position, e.part, e.role, storable(e.text), _storable_or_none(e.message_id),
                     _storable_or_none(e.tool), _storable_or_none(e.call_id)) for i, e in enumerate(excerpts)]
            self._db.executemany("INSERT INTO excerpts VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
            folded = [(r[0], fold(r[4])) for r in rows]
            self._db.executemany("INSERT INTO words (rowid, text) VALUES (?, ?)",
                                 [(rowid, spaced(text)) for rowid, text in folded])
            unspaced = [(rowid, text) for rowid, text in folded if UNSPACED.search(text)]
            self._db.executemany("INSERT INTO grams (rowid, text) VALUES (?, ?)", unspaced)
            self._db.executemany("INSERT INTO pairs (rowid, text) VALUES (?, ?)",
                                 [(rowid, bigrams(text)) for rowid, text in unspaced])
            self._positions.update(e.position for e in excerpts)

    def search(
        self, query: str, *, limit: int = 8, min_score: float = 0.0, exclude: Collection[int] = (),
        frequencies: Frequencies | None = None, call: str = "",
    ) -> list[Excerpt]:
        """The excerpts relevant to ``query`` (``score`` >= ``min_score``: the share of the query's weight they
        hold), best first, at most ``limit``, none from the positions in ``exclude``. ``frequencies``: the terms'
        document frequencies and the number of documents, when the store holds only part of what is searched (a
        one-off plan indexes the messages that hold a query term). ``call``: an agent round's newest tool call, whose
        terms join the query's only where the store holds them (a path or pattern never said before would weigh
        the most and outweigh the question's subject)."""
        asked = searched_terms(query, call)
        words, grams = asked.words, asked.grams
        if not (words or grams) or not self._positions:
            return []
        with self._lock:
            weighed = asked.weighed(frequencies or self._frequencies(words, grams))
            weights, rare, terms, total = weighed.weights, weighed.rare, weighed.terms, weighed.total
            found: dict[int, float] = {}
            searched = [t for t in terms if t in rare]  # an excerpt must hold one of them: the others only weigh
            if not searched:
                return []
            trigrams = [t for t in searched if t in grams and len(t) == 3]
            pairs = [t for t in searched if t in grams and len(t) == 2]
            for table, chosen in (("words", [t for t in searched if t in words]), ("grams", trigrams),
                                  ("pairs", pairs)):
                if chosen:
                    match = " OR ".join(map(_fts_phrase, chosen))
                    rows = self._db.execute(
                        f"SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH ? ORDER BY rank LIMIT ?",
                        (match, _CANDIDATES),
                    ).fetchall()
                    for rowid, rank in rows:
                        found[rowid] = min(found.get(rowid, 0.0), rank)
            if not found:
                return []
            marks = ",".join("?" * len(found))
            rows = self._db.execute(
                f"SELECT id, position, part, role, text, message_id, tool, call_id FROM excerpts WHERE id IN ({marks})",
                list(found),
            ).fetchall()
            scored: list[tuple[float, float, Excerpt]] = []
            recurring: dict[frozenset[str], bool] = {}
            for rowid, position, part, role, text, message_id, tool, call_id in rows:
                if position in exclude:
                    continue
                folded = fold(text)
                matched = [t for t in terms if holds(folded, t, t in words)]
                share = sum(weights[t] for t in matched) / total
                if share < min_score or not any(t in rare for t in matched):
                    continue
                if len(matched) < len(terms):
                    key = frozenset(matched)
                    if key not in recurring:
                        recurring[key] = self._recurs(key, words)
                    if recurring[key]:
                        continue
                excerpt = Excerpt(position, part, role, text, message_id, tool, call_id, share)
                scored.append((-share, found[rowid], excerpt))
        scored.sort(key=lambda item: (item[0], item[1], item[2].position, item[2].part))
        out: list[Excerpt] = []
        seen: set[str] = set()
        per_message: dict[int, int] = {}
        for _, _, excerpt in scored:  # a text said twice (a call repeated) comes back once, its first best
            text = excerpt.text.strip()
            if text in seen or per_message.get(excerpt.position, 0) >= _PER_MESSAGE or len(out) >= limit:
                continue
            seen.add(text)
            per_message[excerpt.position] = per_message.get(excerpt.position, 0) + 1
            out.append(excerpt)
        return out

    def _recurs(self, terms: Collection[str], words: Collection[str]) -> bool:
        """Whether more than ``_RECURRING`` messages hold all of ``terms`` (words, trigrams and character pairs) in
        one excerpt."""
        grams = [t for t in terms if t not in words]
        tables = (("words", [t for t in terms if t in words]), ("grams", [t for t in grams if len(t) == 3]),
                  ("pairs", [t for t in grams if len(t) == 2]))
        where = [(f"id IN (SELECT rowid FROM {table} WHERE {table} MATCH ?)", " AND ".join(map(_fts_phrase, chosen)))
                 for table, chosen in tables if chosen]
        if not where:
            return False
        held = " AND ".join(w for w, _ in where)
        query = f"SELECT COUNT(*) FROM (SELECT DISTINCT position FROM excerpts WHERE {held} LIMIT {_RECURRING + 1})"
        return bool(self._db.execute(query, [m for _, m in where]).fetchone()[0] > _RECURRING)

    def _frequencies(self, words: list[str], grams: list[str]) -> Frequencies:
        """The terms' document frequencies among the store's excerpts, and their number."""
        n = self._db.execute("SELECT COUNT(*) FROM excerpts").fetchone()[0]
        df: dict[str, int] = {}
        for table, terms in (("words_terms", words), ("grams_terms", [t for t in grams if len(t) == 3]),
                             ("pairs_terms", [t for t in grams if len(t) == 2])):
            if terms:
                marks = ",".join("?" * len(terms))
                df.update(self._db.execute(f"SELECT term, doc FROM {table} WHERE term IN ({marks})", terms))
        return df, n

    def message(self, handle: str) -> list[Excerpt]:
        """The excerpts of one message, in order: ``handle`` is a tool call id, a message id or ``#position`` (none
        for a position no message can have)."""
        with self._lock:
            position = as_position(handle)
            if position is not None:
                rows = self._db.execute(self._select("position = ?"), (position,)).fetchall()
            else:
                handle = storable(handle)
                rows = self._db.execute(self._select("call_id = ? OR message_id = ?"), (handle, handle)).fetchall()
                if rows:  # a call id names the call and its result: the result is what was masked
                    positions = sorted({r[0] for r in rows})
                    results = [r for r in rows if r[2] == "tool"]
                    rows = results or [r for r in rows if r[0] == positions[0]]
        return [Excerpt(*row) for row in rows]

    @staticmethod
    def _select(where: str) -> str:
        return (f"SELECT position, part, role, text, message_id, tool, call_id FROM excerpts WHERE {where} "
                "ORDER BY position, part")
