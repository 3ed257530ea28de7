"""The ledger: what a conversation told (rules, limits, facts, the goal state, preferences), typed, with sources;
read once per message, a later statement superseding an earlier one about the same subject, steered by its users
(``add``, ``pin``, ``edit``, ``drop``) and written as one block whose least recent facts go first when it outgrows
its room (docs/planner.md, "The ledger")."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ctxwin._errors import InvalidInputError
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.strategies._facts import items
from ctxwin.strategies._ledger_extract import Statement, stated_values, statements, subject_terms

Kind = Literal["rule", "limit", "fact", "goal", "preference"]
KINDS: tuple[Kind, ...] = ("rule", "limit", "fact", "goal", "preference")
# The order entries leave a block that is over its room: facts first (least recent first), rules last.
LEAVING_ORDER: tuple[Kind, ...] = ("fact", "preference", "goal", "limit", "rule")
SECTIONS = {"rule": "Rules", "limit": "Limits", "fact": "Facts", "goal": "Goal and next steps",
            "preference": "Preferences"}
LEDGER_HEADER = "What the conversation told so far (newest values):"
LEDGER_KEY = "ctxwin_ledger"
# A later statement supersedes an earlier one when their subject terms overlap this much (shared / all), or, when
# it is worded as a correction, CORRECTED_SUBJECT.
SAME_SUBJECT = 0.6
CORRECTED_SUBJECT = 0.3
# The shapes of values that can replace one another (a date is corrected by a date, an amount by an amount).
_SHAPES = {"date": "when", "time": "when", "quantity": "amount", "number": "amount", "phone": "id", "ip": "id",
           "id": "id", "url": "id", "email": "id", "path": "id", "file": "id", "symbol": "id", "name": "name"}


@dataclass(frozen=True)
class LedgerEntry:
    """One thing the conversation told: its ``kind``, its ``text`` (the statement as said, or as a user wrote it),
    where it was said (``source``: the message's id, else ``#position``; ``position`` its index), who said it
    (``speaker``: user, assistant, tool, or ``added`` by ``Ledger.add``), whether a user ``pinned`` it (never
    left out of a block), and the texts it superseded (``replaces``)."""

    kind: Kind
    text: str
    source: str
    position: int
    speaker: str = "user"
    pinned: bool = False
    replaces: tuple[str, ...] = ()
    values: tuple[str, ...] = field(default=(), repr=False, compare=False)
    subject: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    correcting: bool = field(default=False, repr=False, compare=False)  # worded as a correction
    # the message that said it (None: added by a user, or read back from a block): a request holding this object
    # still says it where it was said
    message: BaseMessage | None = field(default=None, repr=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "source": self.source, "speaker": self.speaker,
                "pinned": self.pinned, "replaces": list(self.replaces)}


class Ledger:
    """The typed ledger of one conversation (see the module docstring). ``entries`` are the statements in force,
    in the order they were said; ``superseded`` those a later one replaced."""

    def __init__(self) -> None:
        self._entries: list[LedgerEntry] = []
        self._index: _Index | None = None  # the entries by subject term (built when first needed)
        self.superseded: list[LedgerEntry] = []
        self._read = 0
        self._question = ""  # the newest user message read: what a tool result answers
        self._dropped: set[str] = set()  # texts a user dropped: not taken again
        self._edited: dict[str, LedgerEntry] = {}  # text as said -> the user's version

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[LedgerEntry]:
        return iter(self._entries)

    @property
    def entries(self) -> list[LedgerEntry]:
        return list(self._entries)

    @property
    def read_count(self) -> int:
        """How many messages of the conversation it has read."""
        return self._read

    def by_kind(self) -> dict[Kind, list[LedgerEntry]]:
        """The entries in force, by kind (every kind present, maybe empty)."""
        out: dict[Kind, list[LedgerEntry]] = {kind: [] for kind in KINDS}
        for entry in self._entries:
            out[entry.kind].append(entry)
        return out

    def holding(self, entries: Iterable[LedgerEntry]) -> Ledger:
        """A copy in force with ``entries`` only (what a block holds), superseded as this one."""
        other = self.copy()
        other._entries, other._index = list(entries), None
        return other

    def copy(self) -> Ledger:
        other = Ledger()
        other._entries, other.superseded = list(self._entries), list(self.superseded)
        other._read, other._question = self._read, self._question
        other._dropped, other._edited = set(self._dropped), dict(self._edited)
        return other

    # --- reading -------------------------------------------------------------------------------------------------

    def read(self, messages: Sequence[BaseMessage]) -> Ledger:
        """Read ``messages[read_count:]`` (the conversation so far; what was read before is not read again)."""
        for position in range(self._read, len(messages)):
            self._read_one(messages[position], position)
        self._read = max(self._read, len(messages))
        return self

    def _read_one(self, message: BaseMessage, position: int) -> None:
        block = from_block(message)
        if block is not None:  # a block this ledger (or another) wrote: its entries, as they were
            for entry in block:
                self._take(dataclasses.replace(entry, position=position, source=_source(message, position)))
            return
        if isinstance(message, HumanMessage):
            self._question = message.text
        speaker = "user" if isinstance(message, HumanMessage) else "assistant" if isinstance(
            message, AIMessage) else "tool" if isinstance(message, ToolMessage) else "system"
        for statement in statements(message, self._question):
            self._take(_entry(statement, message, position, speaker))

    def _take(self, entry: LedgerEntry) -> None:
        if entry.text in self._dropped:
            return
        entry = self._edited.get(entry.text, entry)
        index = self._lookup()
        for old in sorted(self._replaced(entry), key=index.order, reverse=True):
            if old.pinned and old.speaker == "added":
                continue  # a user's own entry is theirs to change
            self._entries.pop(next(k for k in range(len(self._entries) - 1, -1, -1) if self._entries[k] is old))
            index.remove(old)
            if old.values != entry.values or old.text != entry.text:
                self.superseded.append(old)
                entry = dataclasses.replace(entry, replaces=(*entry.replaces, *old.replaces, old.text),
                                            pinned=entry.pinned or old.pinned)
            elif old.message is None and entry.message is not None:  # said again where it can be seen
                entry = dataclasses.replace(entry, replaces=old.replaces, pinned=old.pinned)
        self._entries.append(entry)
        index.add(entry)

    def _lookup(self) -> _Index:
        if self._index is None:
            self._index = _Index(self._entries)
        return self._index

    def _replaced(self, new: LedgerEntry) -> list[LedgerEntry]:
        """The entries ``new`` supersedes or restates: every one about its subject, and the one it corrects when it
        is worded as a correction (only those sharing a subject term or its text are looked at, newest first)."""
        found: list[LedgerEntry] = []
        best, best_share = None, 0.0
        terms = new.subject
        for old in self._lookup().related(new):
            if old.text == new.text:
                return [old]
            shared = len(old.subject & terms)
            if not shared or not (new.values or not old.values):
                continue
            share = shared / len(old.subject | new.subject)
            same_shape = _shapes(new.values) & _shapes(old.values) or not old.values
            if not same_shape:
                continue
            related = new.kind == old.kind or {new.kind, old.kind} <= {"fact", "limit"}
            if share >= SAME_SUBJECT and related:
                found.append(old)
            elif new.correcting and share >= CORRECTED_SUBJECT and share > best_share:
                best, best_share = old, share
        return found if best is None else [*found, best]

    # --- steering ------------------------------------------------------------------------------------------------

    def add(self, kind: Kind, text: str) -> LedgerEntry:
        """Add an entry of the user's own (pinned, speaker ``added``): it supersedes what it is about."""
        if kind not in KINDS:
            raise InvalidInputError(f"Ledger.add: kind must be one of {', '.join(KINDS)}, got {kind!r}")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("Ledger.add: text must be a non-empty string")
        values = stated_values(text)
        entry = LedgerEntry(kind, " ".join(text.split()), "added", self._read, "added", True, (), values,
                            subject_terms(text, values))
        self._take(entry)
        return entry

    def pin(self, entry: LedgerEntry | str) -> LedgerEntry:
        """Pin an entry (never left out of a block); ``entry`` is an entry or its text."""
        return self._change(entry, lambda e: dataclasses.replace(e, pinned=True), "pin")

    def edit(self, entry: LedgerEntry | str, text: str) -> LedgerEntry:
        """Replace an entry's text with ``text`` (pinned: the user's version), kept when the conversation is read
        again."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("Ledger.edit: text must be a non-empty string")
        old = self._find(entry, "edit")
        values = stated_values(text)
        new = dataclasses.replace(old, text=" ".join(text.split()), pinned=True, values=values,
                                  subject=subject_terms(text, values))
        self._edited[old.text] = new
        self._entries[self._entries.index(old)] = new
        self._index = None
        return new

    def drop(self, entry: LedgerEntry | str) -> LedgerEntry:
        """Remove an entry; the same statement read again is not taken."""
        old = self._find(entry, "drop")
        self._entries.remove(old)
        self._index = None
        self._dropped.add(old.text)
        return old

    def _change(self, entry: LedgerEntry | str, change: Callable[[LedgerEntry], LedgerEntry], what: str) -> LedgerEntry:
        old = self._find(entry, what)
        new = change(old)
        self._entries[self._entries.index(old)] = new
        self._index = None
        return new

    def _find(self, entry: LedgerEntry | str, what: str) -> LedgerEntry:
        text = entry.text if isinstance(entry, LedgerEntry) else entry
        for found in self._entries:
            if found.text == text or found == entry:
                return found
        raise KeyError(f"Ledger.{what}: no entry {text!r} in the ledger (its entries: ledger.entries)")

    # --- writing -------------------------------------------------------------------------------------------------

    def render(
        self, entries: Sequence[LedgerEntry] | None = None, max_tokens: int | None = None,
        count: Callable[[str], int] | None = None,
    ) -> tuple[str, list[LedgerEntry]]:
        """The block of ``entries`` (default: all in force) and the entries left out to stay within
        ``max_tokens`` (as ``count`` counts them): least recent facts first, rules last, pinned never."""
        chosen = list(self._entries if entries is None else entries)
        text = render_block(chosen)
        if max_tokens is None or count is None or count(text) <= max_tokens:
            return text, []
        leaving = sorted((e for e in chosen if not e.pinned),
                         key=lambda e: (LEAVING_ORDER.index(e.kind), e.position), reverse=True)
        # binary search on how many leave, in leaving order (counting is the cost)
        low, high = 0, len(leaving)
        while low < high:
            middle = (low + high) // 2
            gone = {id(e) for e in leaving[len(leaving) - middle:]} if middle else set()
            if count(render_block([e for e in chosen if id(e) not in gone])) <= max_tokens:
                high = middle
            else:
                low = middle + 1
        gone_list = leaving[len(leaving) - low:] if low else []
        gone = {id(e) for e in gone_list}
        kept = [e for e in chosen if id(e) not in gone]
        return (render_block(kept) if kept else ""), sorted(gone_list, key=lambda e: e.position)


class _Index:
    """A ledger's entries by subject term and by text, in the order they were taken: what a new statement could
    supersede is looked up, not scanned for (a long conversation holds thousands of entries)."""

    def __init__(self, entries: Iterable[LedgerEntry]) -> None:
        self._order: dict[int, int] = {}  # id(entry) -> when it was taken
        self._entries: dict[int, LedgerEntry] = {}
        self._by_key: dict[str, set[int]] = {}  # a subject term, or "\0" + the text -> ids
        self._taken = 0
        for entry in entries:
            self.add(entry)

    @staticmethod
    def _keys(entry: LedgerEntry) -> Iterator[str]:
        yield "\0" + entry.text
        yield from entry.subject

    def order(self, entry: LedgerEntry) -> int:
        return self._order[id(entry)]

    def add(self, entry: LedgerEntry) -> None:
        self._order[id(entry)], self._entries[id(entry)] = self._taken, entry
        self._taken += 1
        for key in self._keys(entry):
            self._by_key.setdefault(key, set()).add(id(entry))

    def remove(self, entry: LedgerEntry) -> None:
        del self._order[id(entry)], self._entries[id(entry)]
        for key in self._keys(entry):
            self._by_key[key].discard(id(entry))

    def related(self, new: LedgerEntry) -> list[LedgerEntry]:
        """The entries with the text of ``new`` or sharing at least ``CORRECTED_SUBJECT`` of their subject terms
        with it (shared over all: no fewer could be superseded), newest first."""
        shared: dict[int, int] = {}
        for term in new.subject:
            for k in self._by_key.get(term, ()):
                shared[k] = shared.get(k, 0) + 1
        size = len(new.subject)
        ids = {k for k, n in shared.items() if n / (len(self._entries[k].subject) + size - n) >= CORRECTED_SUBJECT}
        ids.update(self._by_key.get("\0" + new.text, ()))
        return [self._entries[k] for k in sorted(ids, key=self._order.__getitem__, reverse=True)]


def _source(message: BaseMessage, position: int) -> str:
    return message.id or f"#{position}"


def _entry(statement: Statement, message: BaseMessage, position: int, speaker: str) -> LedgerEntry:
    return LedgerEntry(statement.kind, sendable(statement.text), _source(message, position), position,  # type: ignore[arg-type]
                       speaker, False, (), statement.values, statement.subject, statement.correcting, message)


def sendable(text: str) -> str:
    """``text`` as a UTF-8 request (and a terminal) can carry it: a lone surrogate (a JSON ``\\ud800`` escape read
    back) written as its escape, as recall writes it."""
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


@functools.lru_cache(maxsize=4_096)
def _shapes(values: tuple[str, ...]) -> frozenset[str]:
    shapes = set()
    for value in values:
        found = items(value)
        shapes.add(_SHAPES.get(found[0][1], "id") if found else "amount" if any(c.isdigit() for c in value) else "id")
    return frozenset(shapes)


def render_block(entries: Sequence[LedgerEntry]) -> str:
    """The block's text: ``LEDGER_HEADER``, then a section per kind with one line per entry."""
    lines = [LEDGER_HEADER]
    for kind in KINDS:
        section = [e for e in entries if e.kind == kind]
        if section:
            lines.append(f"{SECTIONS[kind]}:")
            lines += [f"- {e.text}" for e in section]
    return "\n".join(lines)


def ledger_message(text: str, entries: Sequence[LedgerEntry], *, after: BaseMessage | None = None) -> BaseMessage:
    """The message carrying a block: a system message, or, ``after`` a session's head (providers take system
    messages only first), one of the other side than the head's last message (so that an API joining a side's
    consecutive messages keeps the head's end apart); ``response_metadata`` (never sent) holds its entries."""
    metadata = {LEDGER_KEY: [e.as_dict() for e in entries]}
    if after is None or isinstance(after, SystemMessage):
        return SystemMessage(text, id="ctxwin-ledger", response_metadata=metadata)
    if isinstance(after, AIMessage):
        return HumanMessage(text, id="ctxwin-ledger", response_metadata=metadata)
    return AIMessage(text, id="ctxwin-ledger", response_metadata=metadata)


def is_ledger(message: BaseMessage) -> bool:
    """Whether ``message`` is a ledger block (written by a plan, or its text given back)."""
    return LEDGER_KEY in message.response_metadata or (
        isinstance(message.content, str) and message.content.startswith(LEDGER_HEADER))


def from_block(message: BaseMessage) -> list[LedgerEntry] | None:
    """The entries of a block message: from its metadata, or read back from its text (a block given back as text:
    a compactor's own output); None when ``message`` is no block."""
    record = message.response_metadata.get(LEDGER_KEY)
    if isinstance(record, list):
        return [LedgerEntry(r["kind"], r["text"], r.get("source", "?"), 0, r.get("speaker", "user"),
                            bool(r.get("pinned")), tuple(r.get("replaces", ())), *_read_values(r["text"]))
                for r in record if isinstance(r, dict) and r.get("kind") in KINDS and isinstance(r.get("text"), str)]
    text = message.text
    if LEDGER_HEADER not in text:
        return None
    titles = {f"{title}:": kind for kind, title in SECTIONS.items()}
    entries: list[LedgerEntry] = []
    kind: Kind | None = None
    for line in text[text.index(LEDGER_HEADER) + len(LEDGER_HEADER):].splitlines():
        stripped = line.strip()
        if stripped in titles:
            kind = titles[stripped]  # type: ignore[assignment]
        elif stripped.startswith("- ") and kind is not None:
            entries.append(LedgerEntry(kind, stripped[2:], "?", 0, "user", False, (), *_read_values(stripped[2:])))
        elif stripped and not stripped.startswith("- "):
            kind = None  # the block ended: what follows is not the ledger's
    return entries


def _read_values(text: str) -> tuple[tuple[str, ...], frozenset[str]]:
    values = stated_values(text)
    return values, subject_terms(text, values)


def told_texts(ledger: Ledger) -> set[str]:
    """The statements of ``ledger`` in force and superseded: what a summary beside its block does not quote."""
    return {e.text.rstrip("…") for e in (*ledger.entries, *ledger.superseded)}


def takes_ledger(summarizer: Callable[..., Any]) -> bool:
    """Whether ``summarizer`` takes the ledger (a ``ledger`` keyword, or ``**kwargs``): it is then given it."""
    try:
        parameters = inspect.signature(summarizer).parameters
    except (TypeError, ValueError):
        return False
    return "ledger" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())
