"""Query-aware recall: which excerpts of what a plan left out come back into its request, and where (after any cached
prefix, before the newest turns, never between a tool call and its results: docs/recall.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter
from typing import Any, Protocol

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage
from ctxwin.recall._store import (
    EXCERPT_CHARS,
    Excerpt,
    RecallStore,
    format_excerpts,
    message_excerpts,
    searchable_text,
    searched_terms,
    shared_ids,
)
from ctxwin.recall._terms import term_counts
from ctxwin.recall._text import fold
from ctxwin.strategies._base import leading_system_count
from ctxwin.strategies._summarize import is_summary

RECALL_KEY = "ctxwin_recall"
# An excerpt must hold at least this share of the query's weight (RecallStore.search): measured on planted-fact
# conversations, questions about what was said against questions about what never was (docs/recall.md).
MIN_SCORE = 0.5
# A one-off plan searches at most this many characters of what it left out, newest first (InputRecall); a session
# indexes at most this many more at each cut (SessionRecall), newest first, so its store catches up over cuts.
INPUT_CHARS = 1_000_000
# A one-off plan's reach follows its budget (``input_reach``): this many windows back, at about this many characters
# a token, and at least ``MIN_REACH`` characters. Reading what was left out costs a plan about as much as tokenizing
# what it keeps, so a small window does not read a million characters; what lies further back a session's store
# holds. The floor keeps the late questions of the planted and dense benches (up to ~210,000 characters at 8,000
# tokens) in reach.
REACH_WINDOWS = 2
MIN_REACH = 256_000
_CHARS_PER_TOKEN = 4
# The most excerpts one recall considers (the token room usually ends it first).
MAX_EXCERPTS = 12
_QUERY_SHOWN = 160
_HEADER = "[Recalled by ctxwin: excerpts of earlier messages no longer in this conversation, for: {query}]"


def is_recalled(message: BaseMessage) -> bool:
    """Whether ``message`` is a recall message a plan added."""
    return isinstance(message, HumanMessage) and RECALL_KEY in message.response_metadata


def without_recalled(messages: list[BaseMessage]) -> list[BaseMessage]:
    """``messages`` less the recall messages an earlier plan added (the same list when it has none). Only messages
    with response metadata can be one, found in one C loop: reading every message costs milliseconds in a long
    history (they are not in the CPU's cache)."""
    if not any(map(is_recalled, compress(messages, map(attrgetter("response_metadata"), messages)))):
        return messages
    return [m for m in messages if not is_recalled(m)]


def recall_queries(messages: Sequence[BaseMessage]) -> list[str]:
    """What recall searches for: the newest user message's text and, when an agent round follows it, the newest
    tool call after it as ``name arguments`` (whose terms count only where said before: ``find``); empty without
    a user message."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, HumanMessage) and not is_recalled(message):
            queries = [str(message.text)]
            for later in reversed(messages[index + 1 :]):
                if isinstance(later, AIMessage) and later.tool_calls:
                    call = later.tool_calls[-1]
                    queries.append(f"{call.get('name')} {call.get('args')}")
                    break
            return queries
    return []


def recall_query(messages: Sequence[BaseMessage]) -> str:
    """The query as a plan reports it: ``recall_queries``, one a line."""
    return "\n".join(recall_queries(messages))


def find(source: RecallSource, messages: Sequence[BaseMessage], *, limit: int, min_score: float) -> list[Excerpt]:
    """The excerpts relevant to ``messages``' ``recall_queries`` that ``messages`` (a request) do not hold, best
    first: the user message searched with the tool call's terms that were said before."""
    queries = recall_queries(messages)
    if not queries:
        return []
    return source.search(queries[0], messages, limit=limit, min_score=min_score, call="\n".join(queries[1:]))


def _within(terms: list[str], text: str) -> list[str]:
    return [term for term in terms if term in text]


class RecallSource(Protocol):
    """Where recall finds excerpts: ``search(query, fitted)``, the relevant excerpts of the messages ``fitted`` (a
    request) does not hold as they were, best first."""

    def search(
        self, query: str, fitted: Sequence[BaseMessage], *, limit: int, min_score: float, call: str = ""
    ) -> list[Excerpt]: ...


def input_reach(max_input_tokens: int) -> int:
    """How many characters of what it left out a one-off plan within ``max_input_tokens`` searches: about
    ``REACH_WINDOWS`` windows back, from ``MIN_REACH`` up to ``INPUT_CHARS``."""
    return min(INPUT_CHARS, max(MIN_REACH, REACH_WINDOWS * _CHARS_PER_TOKEN * max_input_tokens))


class InputRecall:
    """A one-off plan's source: its input. What a fitted request lacks is searched newest first, at most ``reach``
    characters of it (``input_reach`` of the plan's budget), and only the excerpts holding a distinctive query term
    are indexed (a plan indexes what the question can find, not a whole history: the index is built per plan); the
    terms' weights are their frequencies in all the messages searched (counted as the store would count them, by
    excerpt)."""

    def __init__(self, messages: Sequence[BaseMessage], reach: int = INPUT_CHARS) -> None:
        self._messages = messages
        self._reach = reach
        self._store: RecallStore | None = None  # made when something is worth indexing
        self._indexed: set[int] = set()

    @property
    def store(self) -> RecallStore:
        if self._store is None:
            self._store = RecallStore()
        return self._store

    def search(
        self, query: str, fitted: Sequence[BaseMessage], *, limit: int, min_score: float, call: str = ""
    ) -> list[Excerpt]:
        asked = searched_terms(query, call)
        terms = asked.words + asked.grams
        if not terms:
            return []
        kept = set(map(id, fitted))
        texts: list[str] = []  # what the request left out, newest first, within the room
        positions: list[int] = []
        room = self._reach
        index = len(self._messages)
        while room > 0 and index > 0:
            index -= 1
            message = self._messages[index]
            if id(message) not in kept:
                texts.append(fold(searchable_text(message)))
                positions.append(index)
                room -= len(texts[-1])
        whole = [k < len(asked.words) for k in range(len(terms))]
        holding: list[tuple[int, list[str]]] = []  # the messages holding a query term, with the terms
        df: dict[str, int] = dict.fromkeys(terms, 0)
        documents = 0
        for index, text, counts in zip(positions, texts, term_counts(texts, terms, whole), strict=True):
            parts = -(-len(text) // EXCERPT_CHARS)  # the excerpts it makes, about: frequencies are the store's
            documents += parts
            if counts is None:
                continue
            held = list(compress(terms, counts))
            for term, count in zip(held, filter(None, counts), strict=True):
                df[term] += min(count, parts)
            if index not in self._indexed:
                holding.append((index, held))
        # A search returns only excerpts holding a distinctive term and min_score of the query's weight
        # (RecallStore.search), so only those are indexed: a query's common words are in hundreds of messages,
        # and indexing costs more than reading.
        weighed = asked.weighed((df, documents))
        shared = shared_ids(self._messages) if holding else set()

        def relevant(held: list[str]) -> bool:
            return weighed.bound(held) >= min_score and any(term in weighed.rare for term in held)

        new = [
            excerpt
            for index, held in reversed(holding)
            if relevant(held)
            for excerpt in message_excerpts(self._messages[index], index, named=self._messages[index].id not in shared)
            if relevant(_within(held, fold(excerpt.text)))
        ]
        if not new and not self._indexed:
            return []
        self.store.add_excerpts(new)
        self._indexed.update(excerpt.position for excerpt in new)
        present = {index for index in self._indexed if id(self._messages[index]) in kept}
        found = self.store.search(query, limit=limit, min_score=min_score, exclude=present,
                                  frequencies=(df, documents), call=call)
        return unseen(found, fitted)


@dataclass(frozen=True)
class Recalled:
    """What a plan recalled: the ``query`` searched and the ``excerpts`` its request carries (in its recall
    message, right before the newest user message), and that message's ``tokens``."""

    query: str
    excerpts: list[Excerpt] = field(default_factory=list)
    tokens: int = 0

    @property
    def labels(self) -> list[str]:
        """The messages recalled from (id or ``#position``), each once, in order."""
        return list(dict.fromkeys(e.label for e in self.excerpts))

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.query, "tokens": self.tokens, "from": self.labels,
                "excerpts": [e.as_dict() for e in self.excerpts]}


def quoted(query: str) -> str:
    """``query`` as a recall message or the recall tool quotes it: on one line, at most ``_QUERY_SHOWN``
    characters, every character printable (``repr``: a lone surrogate or a NUL written as its escape)."""
    flat = " ".join(query.split())
    return repr(flat if len(flat) <= _QUERY_SHOWN else flat[: _QUERY_SHOWN - 1] + "…")


def recall_message(query: str, excerpts: Sequence[Excerpt]) -> HumanMessage:
    """The user-side message carrying ``excerpts`` (in conversation order, each headed by where it was)."""
    ordered = sorted(excerpts, key=lambda e: (e.position, e.part))
    body = format_excerpts(ordered)
    record = {"query": query, "from": list(dict.fromkeys(e.label for e in ordered))}
    return HumanMessage(f"{_HEADER.format(query=quoted(query))}\n{body}", response_metadata={RECALL_KEY: record})


def choose(
    query: str, excerpts: Sequence[Excerpt], room: int, count: Callable[[BaseMessage], int]
) -> tuple[HumanMessage, list[Excerpt], int] | None:
    """The recall message of the best ``excerpts`` (in order) that fits in ``room`` tokens, what it holds and its
    tokens; None when not even the first fits."""
    chosen: list[Excerpt] = []
    best: tuple[HumanMessage, list[Excerpt], int] | None = None
    for excerpt in excerpts:
        trial = [*chosen, excerpt]
        message = recall_message(query, trial)
        tokens = count(message)
        if tokens > room:
            continue  # a smaller excerpt further down may still fit
        chosen, best = trial, (message, trial, tokens)
    return best


def placed(
    messages: Sequence[BaseMessage], recall: HumanMessage, head: Sequence[BaseMessage] = ()
) -> list[BaseMessage]:
    """``messages`` with ``recall`` where the kept conversation starts: after the leading system messages, a
    session's ``head`` (when the messages keep it) and a summary. So the newest turns stay verbatim at the end, and
    in a session the cached prefix (tools, system prompt, head) stays in front; no tool call waits for its results
    there (a head ends where none does, and a plan leaves no result without its call)."""
    index = leading_system_count(messages)
    if head and len(messages) >= index + len(head) and all(
        a is b for a, b in zip(messages[index : index + len(head)], head, strict=True)
    ):
        index += len(head)
    while index < len(messages) and is_summary(messages[index]):
        index += 1
    return [*messages[:index], recall, *messages[index:]]


def before_newest_user(messages: Sequence[BaseMessage], recall: HumanMessage) -> list[BaseMessage]:
    """``messages`` with ``recall`` right before the newest user message (where a session between cuts appends it:
    what the previous request sent stays its prefix)."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage) and not is_recalled(messages[index]):
            return [*messages[:index], recall, *messages[index:]]
    return [*messages, recall]


def unseen(excerpts: Sequence[Excerpt], messages: Sequence[BaseMessage]) -> list[Excerpt]:
    """``excerpts`` less those whose text ``messages`` (a request) already carry: a message said again (a user who
    repeats "keep going"), a tool call made again (the newest one, an agent's query), or what a recall message
    already brought back."""
    texts = [searchable_text(m) for m in messages]
    return [e for e in excerpts if not any(e.text.strip() in text for text in texts)]

