"""Carrying the ledger in a request: the entries the request no longer says where they were said (or a user pinned),
placed after the system prompt and a session's head, before any summary; ``LedgerReport`` is ``Plan.ledger``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxwin.messages import BaseMessage
from ctxwin.strategies._base import leading_system_count
from ctxwin.strategies._ledger import KINDS, Kind, Ledger, LedgerEntry, is_ledger, ledger_message
from ctxwin.strategies._pins import head_length
from ctxwin.strategies._summarize import is_summary


@dataclass(frozen=True)
class LedgerReport:
    """What a plan knows of the conversation's ledger: every entry in force (``entries``, in the order said), those
    its request carries in the block (``carried``), those the block's share left to recall (``left_out``: their
    messages stay searchable), the statements a later one superseded (``superseded``), and the block's
    ``tokens`` (0: no block)."""

    entries: tuple[LedgerEntry, ...]
    carried: tuple[LedgerEntry, ...] = ()
    left_out: tuple[LedgerEntry, ...] = ()
    superseded: tuple[LedgerEntry, ...] = ()
    tokens: int = 0

    @property
    def stale_values(self) -> frozenset[str]:
        """The values superseded statements stated that no statement in force states: corrected values."""
        current = {value for entry in self.entries for value in entry.values}
        return frozenset(value for entry in self.superseded for value in entry.values if value not in current)

    def by_kind(self) -> dict[Kind, list[LedgerEntry]]:
        """The entries in force, by kind (every kind present, maybe empty)."""
        out: dict[Kind, list[LedgerEntry]] = {kind: [] for kind in KINDS}
        for entry in self.entries:
            out[entry.kind].append(entry)
        return out

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the entries by kind (each with its source), and what the block carried and left out."""
        return {
            "entries": {kind: [e.as_dict() for e in entries] for kind, entries in self.by_kind().items()},
            "carried": len(self.carried), "left_out": [e.as_dict() for e in self.left_out],
            "superseded": [e.as_dict() for e in self.superseded], "tokens": self.tokens,
        }


def report(ledger: Ledger, carried: Sequence[LedgerEntry] = (), left_out: Sequence[LedgerEntry] = (),
           tokens: int = 0) -> LedgerReport:
    return LedgerReport(tuple(ledger.entries), tuple(carried), tuple(left_out), tuple(ledger.superseded), tokens)


def without_blocks(messages: list[BaseMessage]) -> list[BaseMessage]:
    """``messages`` less any ledger block (a new one replaces it); the same list when there is none."""
    if not any(is_ledger(m) for m in messages):
        return messages
    return [m for m in messages if not is_ledger(m)]


def carried(ledger: Ledger, request: Sequence[BaseMessage]) -> list[LedgerEntry]:
    """The entries a block for ``request`` holds: those ``request`` does not say where they were said, and those a
    user pinned, edited or added."""
    present = set(map(id, request))
    return [e for e in ledger.entries if e.pinned or e.message is None or id(e.message) not in present]


def block_index(messages: Sequence[BaseMessage], head: Sequence[BaseMessage]) -> int:
    """Where the block goes: after the system prompt (the leading system messages but a summary) and the head (when
    the messages keep it)."""
    start = leading_system_count(messages)
    while start and is_summary(messages[start - 1]):
        start -= 1
    return start + head_length(messages, head, start)


def placed_block(
    ledger: Ledger, entries: Sequence[LedgerEntry], messages: list[BaseMessage], head: Sequence[BaseMessage],
    room: int, count: Callable[[BaseMessage], int],
) -> tuple[list[BaseMessage], list[LedgerEntry], list[LedgerEntry], int] | None:
    """``messages`` with the block of ``entries`` within ``room`` tokens (the message, framing included), the
    entries it holds, those it left out, and its tokens; None when no entry fits."""
    if not entries or room <= 0:
        return None
    index = block_index(messages, head)
    after = messages[index - 1] if index else None
    framing = count(ledger_message("", (), after=after))
    text, left = ledger.render(entries, room - framing, lambda t: count(ledger_message(t, (), after=after))
                               - framing)
    if not text:
        return None
    gone = set(map(id, left))
    kept = [e for e in entries if id(e) not in gone]
    message = ledger_message(text, kept, after=after)
    tokens = count(message)
    if tokens > room:
        return None
    return [*messages[:index], message, *messages[index:]], kept, list(left), tokens
