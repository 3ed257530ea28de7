"""Retention: what a model could still answer from a fitted request (facts and probes kept verbatim), measured without
calling one. Only strings are compared (docs/bench.md, "Retention").
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxwin._errors import InvalidInputError
from ctxwin.messages import BaseMessage
from ctxwin.strategies._facts import Fact, find_facts, message_text

USER_WEIGHT = 3
TOLD_KINDS = ("rule", "limit", "fact", "goal", "preference")


@dataclass(frozen=True)
class Probe:
    """A question about a conversation and the strings an answer needs (all of them, verbatim). A typed one (what
    the conversation told: ``kind`` rule, limit, fact, goal or preference) may say where it was said (``at``: the
    message index; a session checks it at every cut after it) and the corrected values it replaced (``stale``:
    none may be sent)."""

    needs: tuple[str, ...]
    question: str = ""
    id: str = ""
    kind: str = ""
    at: int = 0
    stale: tuple[str, ...] = ()


class ProbeFileError(InvalidInputError):
    """A probes file that cannot be read; the message names the file and the line."""


@dataclass(frozen=True)
class Facts:
    """The facts of an original conversation, read once and checked against every fitted request of it."""

    messages: Sequence[BaseMessage]
    facts: list[Fact]

    @classmethod
    def of(cls, messages: Sequence[BaseMessage]) -> Facts:
        return cls(messages, find_facts(messages))

    def kept(self, fitted: Sequence[BaseMessage]) -> FactsKept:
        """Which facts ``fitted`` still holds (docs/bench.md, "Retention")."""
        sent = {id(m) for m in fitted}
        originals = {id(m) for m in self.messages}
        changed = "\n".join(message_text(m) for m in fitted if id(m) not in originals)
        weight = kept_weight = user = user_kept = 0
        for fact in self.facts:
            kept = any(id(self.messages[i]) in sent for i in fact.messages) or fact.text in changed
            share = USER_WEIGHT if fact.user else 1
            weight += share
            kept_weight += share * kept
            user += fact.user
            user_kept += fact.user and kept
        return FactsKept(len(self.facts), kept_weight / weight if weight else None, user_kept / user if user else None)


@dataclass(frozen=True)
class FactsKept:
    """How many facts the original had, the weighted share kept, and the share of the user's facts kept (None when
    there are none)."""

    facts: int
    share: float | None
    user_share: float | None


@dataclass(frozen=True)
class Retained:
    """What one fitted request kept: its facts, and for each probe of its conversation whether it is answerable."""

    facts: FactsKept
    probes: list[bool]
    stale: int = 0  # probes with a corrected value in the request


def retained(facts: Facts, probes: Sequence[Probe], fitted: Sequence[BaseMessage]) -> Retained:
    return Retained(facts.kept(fitted), probes_kept(probes, fitted) if probes else [], stale_sent(probes, fitted))


def request_text(messages: Iterable[BaseMessage]) -> str:
    """Everything a fitted request says, as one text (message texts and tool calls)."""
    return "\n".join(message_text(m) for m in messages)


def probes_kept(probes: Iterable[Probe | Mapping[str, Any]], fitted: Sequence[BaseMessage]) -> list[bool]:
    """For each probe, whether every string it needs is in the fitted request."""
    text = request_text(fitted)
    return [all(need in text for need in _probe(p).needs) for p in probes]


def _probe(probe: Probe | Mapping[str, Any]) -> Probe:
    return probe if isinstance(probe, Probe) else parse_probe(probe)


def parse_probe(data: Mapping[str, Any]) -> Probe:
    """A probe from its JSON object: ``needs`` (a string or a list of strings), optional ``question`` and ``id``."""
    if not isinstance(data, Mapping):
        raise InvalidInputError(f"a probe must be a JSON object, got {type(data).__name__}")
    needs = data.get("needs")
    needs = [needs] if isinstance(needs, str) else needs
    if not isinstance(needs, list) or not needs or not all(isinstance(n, str) and n for n in needs):
        raise InvalidInputError(f"a probe needs 'needs': a non-empty string or list of non-empty strings, got "
                                f"{needs!r}")
    question, ident = data.get("question", ""), data.get("id", "")
    if not isinstance(question, str) or not isinstance(ident, (str, int)):
        raise InvalidInputError("a probe's 'question' must be a string and its 'id' a string or a number")
    kind, at, stale = data.get("kind", ""), data.get("at", 0), data.get("stale", [])
    stale = [stale] if isinstance(stale, str) else stale
    if kind not in ("", *TOLD_KINDS) or isinstance(at, bool) or not isinstance(at, int) or at < 0 \
            or not isinstance(stale, list) or not all(isinstance(v, str) and v for v in stale):
        raise InvalidInputError(f"a probe's 'kind' must be one of {', '.join(TOLD_KINDS)}, its 'at' a message index "
                                f"and "
                                f"its 'stale' a string or a list of strings, got {kind!r}, {at!r}, {stale!r}")
    return Probe(tuple(needs), question, str(ident), kind, at, tuple(stale))


def told_kept(probes: Sequence[Probe], kept: Sequence[bool], tally: dict[str, list[int]]) -> None:
    """Add the typed ``probes`` to ``tally`` (kind -> [kept, total]) by whether each was ``kept``."""
    for probe, held in zip(probes, kept, strict=True):
        if probe.kind:
            counts = tally.setdefault(probe.kind, [0, 0])
            counts[0] += held
            counts[1] += 1


def stale_sent(probes: Sequence[Probe], fitted: Sequence[BaseMessage]) -> int:
    """How many of ``probes`` have a corrected value of theirs in the fitted request."""
    if not any(p.stale for p in probes):
        return 0
    text = request_text(fitted)
    return sum(any(value in text for value in p.stale) for p in probes)


def read_probes(path: str | Path) -> dict[int | None, list[Probe]]:
    """The probes of a JSON list or JSONL file, by the conversation they are about: ``"conversation": N`` (the
    conversation on line N of a JSONL bench file; 1 for a JSON file of one conversation), or every conversation when
    it is left out (key None). Errors name the file and the line (the item, in a JSON list)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProbeFileError(f"{path}: cannot read the probes: {getattr(exc, 'strerror', None) or exc}") from None
    stripped = text.lstrip()
    try:
        if stripped.startswith("["):
            data = json.loads(text)
            rows: list[tuple[int, Any]] = list(enumerate(data if isinstance(data, list) else [data], 1))
        else:
            rows = [(n, json.loads(line)) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    except json.JSONDecodeError as exc:
        raise ProbeFileError(f"{path}: not JSON or JSONL probes: {exc}") from None
    if not rows:
        raise ProbeFileError(f"{path}: no probes")
    probes: dict[int | None, list[Probe]] = {}
    for line, row in rows:
        try:
            probe = parse_probe(row)
            which = row.get("conversation")
            if which is not None and (isinstance(which, bool) or not isinstance(which, int) or which < 1):
                raise InvalidInputError(f"'conversation' must be a line number (1 or more), got {which!r}")
        except ValueError as exc:
            raise ProbeFileError(f"{path}:{line}: {exc}") from None
        probes.setdefault(which, []).append(probe)
    return probes
