"""Faster tokenizer engines, used for a tokenizer only where ``data/engines.json`` records them exact on it for the
installed engine version, so a new engine release never changes a count silently (docs/counters.md).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ctxwin._errors import InvalidInputError

__all__ = ["ENGINES", "EngineChoice", "choose_engine", "engine_record", "family_engine", "installed_engines"]

ENGINE_MODES = ("auto", "reference")


@dataclass(frozen=True)
class EngineChoice:
    """The engine a counter counts with, and why: ``engine`` is ``"kitoken 0.11.1"`` or the reference's name;
    ``encode`` / ``encode_batch`` are the faster engine's id readers (None: the reference counts)."""

    engine: str
    reason: str
    encode: Callable[[str], Sequence[int]] | None = None
    encode_batch: Callable[[list[str]], Sequence[Sequence[int]]] | None = None


def engine_record() -> dict[str, Any]:
    """``data/engines.json``: per tokenizer (by name, with its sha256), each engine version's differential result."""
    data = resources.files(__package__) / "data" / "engines.json"
    record: dict[str, Any] = json.loads(data.read_text(encoding="utf-8"))
    return record


def _installed(engine: str) -> str | None:
    try:
        return importlib.metadata.version(engine)
    except importlib.metadata.PackageNotFoundError:
        return None


def _verdict_text(engine: str, version: str, verdict: dict[str, Any]) -> str:
    return (f"{engine} {version}: {verdict['differing']} of {verdict['documents']:,} documents and "
            f"{verdict['adversarial_differing']} of {verdict['adversarial']} adversarial texts differ, "
            f"{verdict['speedup']:.2f}x the reference's speed")


def _usable(verdict: dict[str, Any]) -> bool:
    return bool(verdict["differing"] == 0 and verdict["adversarial_differing"] == 0 and verdict["speedup"] > 1)


Readers = tuple[Callable[[str], Sequence[int]], Callable[[list[str]], Sequence[Sequence[int]]]]


def _kitoken(tokenizer_json: bytes) -> Readers:
    import kitoken  # type: ignore[import-not-found, unused-ignore]  # the optional extra "fast"

    tokenizer = kitoken.Kitoken.from_tokenizers(tokenizer_json)
    # encode_specials=True: added tokens written in the text are one token each, as tokenizers reads them.
    return (functools.partial(tokenizer.encode, encode_specials=True),
            functools.partial(tokenizer.encode_all, encode_specials=True))


# The engines ctxwin can load a tokenizer.json into: name -> (one-text reader, batch reader).
ENGINES: dict[str, Callable[[bytes], Readers]] = {"kitoken": _kitoken}


def installed_engines() -> dict[str, str]:
    """The installed version of each engine ctxwin can load."""
    return {engine: version for engine in ENGINES if (version := _installed(engine)) is not None}


def _decide(family: str, entry: dict[str, Any], installed: dict[str, str]) -> tuple[str | None, str]:
    """The engine ``family`` counts with (None: the reference) and why."""
    reasons = []
    for engine, versions in entry["engines"].items():
        version = installed.get(engine)
        verdict = versions.get(version) if version else None
        if version and verdict is not None and _usable(verdict) and engine in ENGINES:
            return engine, f"exact on the differential corpus ({_verdict_text(engine, version, verdict)})"
        for known, result in versions.items():
            if not _usable(result):
                reasons.append(f"{_verdict_text(engine, known, result)}")
        verified = [known for known, result in versions.items() if _usable(result)]
        if verified and version:
            reasons.append(f"{engine} {version} is not a verified version ({', '.join(verified)})")
        elif verified:
            reasons.append(f"{engine} is not installed (verified: {', '.join(verified)}; extra 'fast')")
    return None, f"reference on {family}: {'; '.join(reasons) or 'no faster engine was tried'}"


def choose_engine(tokenizer_json: bytes | None, reference: str, mode: str = "auto",
                  installed: dict[str, str] | None = None) -> EngineChoice:
    """The engine to count a ``tokenizer.json`` with: a faster engine whose installed version ``engines.json``
    records as exact and faster on these very bytes, else the reference (``mode="reference"``: always).
    ``installed`` maps engine names to versions (by default what is installed)."""
    if mode not in ENGINE_MODES:
        raise InvalidInputError(f"engine must be one of {', '.join(map(repr, ENGINE_MODES))}, got {mode!r}")
    if mode == "reference":
        return EngineChoice(reference, "reference: asked for (engine='reference')")
    if tokenizer_json is None:
        return EngineChoice(reference, "reference: no tokenizer.json bytes to verify (an in-memory Tokenizer)")
    digest = hashlib.sha256(tokenizer_json).hexdigest()
    family, entry = next(((name, entry) for name, entry in engine_record()["families"].items()
                          if entry["sha256"] == digest), (None, None))
    if family is None or entry is None:
        return EngineChoice(reference, "reference: no faster engine was verified on this tokenizer.json")
    versions = installed_engines() if installed is None else installed
    engine, reason = _decide(family, entry, versions)
    if engine is None:
        return EngineChoice(reference, reason)
    encode, encode_batch = ENGINES[engine](tokenizer_json)
    return EngineChoice(f"{engine} {versions[engine]}", reason, encode, encode_batch)


def family_engine(family: str, reference: str) -> str:
    """Which engine counts ``family`` here and why, in one line (``ctxwin counters``)."""
    entry = engine_record()["families"].get(family)
    if entry is None:
        return f"{family}: {reference} (no faster engine was tried)"
    engine, reason = _decide(family, entry, installed_engines())
    used = reference if engine is None else f"{engine} {installed_engines()[engine]}"
    return f"{family}: {used}, {reason}"
