"""Fact-dense conversations built from documentation and source text, with planted facts and late questions.

The text agents read is dense with identifiers: a chat about a library's docs and code, or an agent run reading
files, carries hundreds of candidate facts by ``ctxwin.strategies._facts``' rule. Into such a conversation
``dense(source, kind, tokens, seed)`` plants ``FACTS`` facts in its first 70%, each about a named subject ("the
Lyon warehouse lease") and stated where conversations state them:

- ``keep``: a user's explicit request to keep it ("Remember: ...", "Please log it under ...", in English, French,
  German, Spanish, Chinese and Japanese), in a turn of its own, at the end of a longer message or (less often) in
  the middle of one, at a paragraph break;
- ``user``: a user's plain statement; ``assistant``: an answer's sentence;
- ``tool`` (agent runs): a line of a tool output (a config dump, a log, a listing).

Each conversation comes with its late questions: for some planted facts, the conversation followed by a user
message asking about the fact's subject ("Going back to the Lyon warehouse lease: what was its reference
number?"), with the ``needs`` string the answer requires; and questions about subjects never mentioned (no
``needs``: recall should bring nothing back for them). A neutral last message ends the conversation when only the
facts kept are measured.

Sources (``SOURCES``): text pools a conversation is made of. ``TUNE`` sources were looked at while the summarizer's
rules were written; ``HELDOUT`` ones were not, and their figures are reported apart. Question and keep phrasings
likewise come in two disjoint sets (``phrasing="tune"`` / ``"heldout"``). Sources outside the standard library are
left out when their package is not installed (``available_sources``).
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import json
import random
import re
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Message = dict[str, Any]

# stdlib modules: disjoint sets for the tuned and the held-out stdlib sources
_TUNE_MODULES = ("argparse.py", "dataclasses.py", "difflib.py", "shutil.py", "subprocess.py", "textwrap.py",
                 "functools.py", "csv.py", "statistics.py", "tarfile.py", "zipfile.py", "enum.py", "tempfile.py")
_HELDOUT_MODULES = ("smtplib.py", "imaplib.py", "ftplib.py", "mailbox.py", "calendar.py", "configparser.py",
                    "gettext.py", "platform.py", "selectors.py", "socketserver.py", "tomllib", "zoneinfo",
                    "xmlrpc", "sched.py", "plistlib.py", "ipaddress.py")
TUNE = ("stdlib-code", "pydoc-topics")
HELDOUT = ("stdlib-heldout-code", "django", "sphinx", "package-readmes")
SOURCES = TUNE + HELDOUT
KINDS = ("chat", "agent")
PHRASINGS = ("tune", "heldout")
FACTS = 20
KEEP_SHARE = 0.5  # of the planted facts, explicit keep requests
_DOC_CHARS = (1_200, 5_000)  # a pasted or read chunk


@dataclass(frozen=True)
class Document:
    """A piece of a source: where it is from (a path or a title), its text, its prose sentences."""

    title: str
    text: str
    sentences: tuple[str, ...]


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])")


def _sentences(text: str) -> tuple[str, ...]:
    """Prose sentences of a text: 6-60 words, mostly letters (no code lines, no tables)."""
    out = []
    for part in _SENTENCE.split(" ".join(text.split())):
        words = part.split()
        letters = sum(c.isalpha() or c.isspace() for c in part)
        if 6 <= len(words) <= 60 and letters > 0.8 * len(part) and part[-1] in ".!?":
            out.append(part)
    return tuple(out)


def _split(title: str, text: str, separator: str) -> list[Document]:
    """``text`` cut at ``separator`` into chunks of about ``_DOC_CHARS``; prose from the whole text."""
    sentences = _sentences(text)
    docs, part = [], ""
    for piece in text.split(separator):
        part = f"{part}{separator}{piece}" if part else piece
        if len(part) >= _DOC_CHARS[0]:
            docs.append(Document(title, part[: _DOC_CHARS[1]].strip(), sentences))
            part = ""
    if part.strip() and len(part) > 200:
        docs.append(Document(title, part.strip(), sentences))
    return docs


def _docstrings(text: str) -> str:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return ""
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef,
                                                                  ast.AsyncFunctionDef)))]
    return "\n\n".join(d for d in (ast.get_docstring(n) for n in nodes) if d)


def _code_files(root: Path, names: tuple[str, ...] | None, prefix: str) -> list[Document]:
    paths: list[Path] = []
    if names is None:
        paths = sorted(p for p in root.rglob("*.py") if "tests" not in p.parts and "__pycache__" not in p.parts)
    else:
        for name in names:
            path = root / name
            paths += sorted(path.rglob("*.py")) if path.is_dir() else [path] if path.exists() else []
    docs: list[Document] = []
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        if len(text) < 1_500:
            continue
        title = f"{prefix}{path.relative_to(root.parent).as_posix()}"
        prose = _sentences(_docstrings(text))
        docs += [Document(title, d.text, prose) for d in _split(title, text, "\n\n")]
    return docs


def _stdlib(names: tuple[str, ...]) -> list[Document]:
    return _code_files(Path(sysconfig.get_paths()["stdlib"]), names, "/usr/lib/")


def _package(module: str) -> list[Document]:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return []
    return _code_files(Path(next(iter(spec.submodule_search_locations))), None, "site-packages/")


def _pydoc_topics() -> list[Document]:
    from pydoc_data.topics import topics

    return [d for key in sorted(topics) for d in _split(f"Python reference: {key}", topics[key], "\n\n")]


def _readmes() -> list[Document]:
    docs: list[Document] = []
    for dist in sorted(importlib.metadata.distributions(), key=lambda d: (d.metadata["Name"] or "").lower()):
        meta = dist.metadata
        if "markdown" in (meta.get("Description-Content-Type") or "") and meta["Name"] != "ctxwin":
            docs += _split(f"{meta['Name']} README", str(meta.get_payload() or ""), "\n\n")
    return docs


_LOADERS: dict[str, Callable[[], list[Document]]] = {
    "stdlib-code": lambda: _stdlib(_TUNE_MODULES),
    "pydoc-topics": _pydoc_topics,
    "stdlib-heldout-code": lambda: _stdlib(_HELDOUT_MODULES),
    "django": lambda: _package("django"),
    "sphinx": lambda: _package("sphinx"),
    "package-readmes": _readmes,
}


@functools.cache
def documents(source: str) -> tuple[Document, ...]:
    if source not in _LOADERS:
        raise ValueError(f"unknown source {source!r}; one of {', '.join(SOURCES)}")
    return tuple(d for d in _LOADERS[source]() if d.sentences)


def available_sources(names: tuple[str, ...] = SOURCES) -> tuple[str, ...]:
    return tuple(name for name in names if len(documents(name)) >= 20)


# --- what is planted ---------------------------------------------------------------------------------------------

_CITIES = ("Lyon", "Porto", "Hamburg", "Oslo", "Kyoto", "Austin", "Lagos", "Turin", "Gdansk", "Quito", "Leeds",
           "Bergen", "Valencia", "Utrecht", "Nagoya", "Tallinn", "Cordoba", "Graz", "Malmo", "Bilbao", "Ghent",
           "Poznan", "Sendai", "Dundee")
_THINGS = ("warehouse lease", "staging cluster", "payroll export", "billing job", "vendor contract",
           "backup bucket", "network outage", "schema migration", "office move", "insurance claim", "audit finding",
           "fleet contract", "data-center contract", "support escalation", "release train", "tax filing")


def _letters(rng: random.Random, n: int) -> str:
    return "".join(chr(65 + int(rng.random() * 26)) for _ in range(n))


def _digits(rng: random.Random, n: int) -> str:
    return str(1 + int(rng.random() * 9)) + "".join(str(int(rng.random() * 10)) for _ in range(n - 1))


# attribute -> (value maker, the attribute as a question names it)
_ATTRIBUTES: dict[str, Callable[[random.Random, str], str]] = {
    "reference number": lambda r, s: f"{''.join(w[0] for w in s.upper().replace('-', ' ').split())}-{_digits(r, 5)}",
    "ticket": lambda r, s: f"{_letters(r, 3)}-{_digits(r, 4)}",
    "host": lambda r, s: f"{s.split()[0].lower()}-{_letters(r, 2).lower()}{_digits(r, 2)}.infra.internal",
    "IP address": lambda r, s: f"10.{int(r.random() * 250)}.{int(r.random() * 250)}.{2 + int(r.random() * 250)}",
    "amount": lambda r, s: f"€{_digits(r, 2)},{_digits(r, 3)}.{_digits(r, 2)}",
    "deadline": lambda r, s: f"2027-{1 + int(r.random() * 12):02d}-{1 + int(r.random() * 28):02d}",
    "version": lambda r, s: f"v{_digits(r, 1)}.{int(r.random() * 40)}.{int(r.random() * 20)}-rc{_digits(r, 1)}",
    "account id": lambda r, s: f"acct_{_letters(r, 4).lower()}{_digits(r, 6)}",
    "contact email": lambda r, s: f"{s.split()[0].lower()}.{_letters(r, 3).lower()}@example-ops.com",
    "phone number": lambda r, s: f"+{_digits(r, 2)} {_digits(r, 3)} {_digits(r, 4)} {_digits(r, 3)}",
}

# Keep requests and plain statements, by phrasing set: {s} the subject, {a} the attribute, {v} the value.
_KEEP = {
    "tune": (
        "Remember: the {a} for the {s} is {v}.",
        "Please log it under {v}, that's the {a} of the {s}.",
        "Keep in mind that the {s} has {a} {v}.",
        "N'oublie pas : pour le {s}, le {a} est {v}.",
        "Merk dir bitte: {s}, {a} {v}.",
        "请记住：{s} 的 {a} 是 {v}。",
    ),
    "heldout": (
        "Note that the {a} of the {s} is {v}; don't forget it.",
        "The {s}: {a} {v}. Keep it.",
        "For later, please log the {s} under {v} ({a}).",
        "No olvides: el {a} del {s} es {v}.",
        "Bitte nicht vergessen: {s} hat {a} {v}.",
        "覚えておいてください：{s}の{a}は{v}です。",
    ),
}
_STATED = {
    "tune": ("The {s} uses {a} {v}, by the way.", "fyi the {a} on the {s} is {v}"),
    "heldout": ("Context: {s}, {a} {v}.", "Side note, the {s} ({a}) is {v}."),
}
_ASSISTANT = ("I looked it up: the {s} has {a} {v}.", "Confirmed, {v} is the {a} of the {s}.")
_TOOL = ("{key}.{field} = {v}", "[info] {s}: {a} resolved to {v}", '  "{field}": "{v}",  // {s}')
_QUESTIONS = {
    "tune": ("Going back to the {s}: what was its {a}?", "What {a} did we have for the {s} again?"),
    "heldout": ("Earlier we talked about the {s}. Which {a} was it?", "Remind me, the {s} — its {a}?"),
}
_NEUTRAL = "Thanks, that's all clear. Let's continue with the next part."
_ACKS = ("Got it.", "Noted.", "OK, I'll keep that in mind.", "Understood.")
_ASKS = ("What does `{sym}` do here, and when would I use it?", "Can you explain this part of {t}?",
         "Is there anything surprising in this section of {t}?", "How does `{sym}` interact with the rest?")
_SYMBOL = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\(\)|\b[a-z]+_[a-z_]+\b")


@dataclass
class Planted:
    """One planted fact."""

    subject: str
    attribute: str
    value: str
    placement: str  # keep, user, assistant, tool


@dataclass
class Dense:
    """A dense conversation (OpenAI chat dicts, without its last user message), its facts and its questions."""

    source: str
    kind: str
    seed: int
    messages: list[Message]
    facts: list[Planted]
    questions: list[dict[str, Any]] = field(default_factory=list)  # {"question", "needs": [..] or [], "fact"}

    def ending(self, question: str) -> list[Message]:
        return [*self.messages, {"role": "user", "content": question}]

    def neutral(self) -> list[Message]:
        return self.ending(_NEUTRAL)


def _pick(rng: random.Random, items: tuple[Any, ...] | list[Any]) -> Any:
    return items[int(rng.random() * len(items))]


def _answer(rng: random.Random, doc: Document, low: int, high: int) -> str:
    n = low + int(rng.random() * (high - low + 1))
    start = int(rng.random() * max(len(doc.sentences) - n, 1))
    return " ".join(doc.sentences[start: start + n])


def _symbol(rng: random.Random, doc: Document) -> str:
    found = _SYMBOL.findall(doc.text)
    return _pick(rng, found) if found else doc.title.rsplit("/", 1)[-1]


def _chat(rng: random.Random, docs: tuple[Document, ...], chars: int) -> list[Message]:
    messages: list[Message] = [{"role": "system", "content": "You are a senior engineer. Answer questions about "
                                "the documentation and code the user shares; be precise and cite names."}]
    size = 0
    while size < chars:
        doc = _pick(rng, docs)
        ask = _pick(rng, _ASKS).format(sym=_symbol(rng, doc), t=doc.title)
        fence = "```\n" if rng.random() < 0.5 else ""
        user = f"Here is a part of {doc.title}:\n\n{fence}{doc.text}\n{fence.strip()}\n\n{ask}" if rng.random() < 0.7 \
            else ask
        answer = _answer(rng, doc, 3, 10)
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": answer or "It depends."}]
        size += len(user) + len(answer)
    return messages


def _agent(rng: random.Random, docs: tuple[Document, ...], chars: int) -> list[Message]:
    messages: list[Message] = [{"role": "system", "content": "You are a coding agent. Use read_file, grep and "
                                "list_dir to inspect the project before you answer."}]
    size, n = 0, 0
    while size < chars:
        doc = _pick(rng, docs)
        messages.append({"role": "user", "content": _pick(rng, _ASKS).format(sym=_symbol(rng, doc), t=doc.title)})
        for _ in range(1 + int(rng.random() * 3)):
            n += 1
            doc = _pick(rng, docs)
            tool = _pick(rng, ("read_file", "grep", "list_dir"))
            args = {"path": doc.title} if tool != "grep" else {"pattern": _symbol(rng, doc), "path": doc.title}
            call = f"call_{n:04d}_{_letters(rng, 6).lower()}"
            body = doc.text if tool != "list_dir" else "\n".join(
                f"{d.title}  {len(d.text):>6} bytes" for d in (_pick(rng, docs) for _ in range(40)))
            messages += [{"role": "assistant", "content": None, "tool_calls": [{"id": call, "type": "function",
                          "function": {"name": tool, "arguments": json.dumps(args)}}]},
                         {"role": "tool", "tool_call_id": call, "content": body}]
            size += len(body)
        answer = _answer(rng, doc, 2, 8) or "Done."
        messages.append({"role": "assistant", "content": answer})
        size += len(answer)
    return messages


def dense(source: str, kind: str, tokens: int, seed: int, *, phrasing: str = "heldout", facts: int = FACTS,
          questions: int = 8, never_said: int = 3) -> Dense:
    """A conversation of about ``tokens`` tokens from ``source``, ``kind`` "chat" or "agent", with
    ``facts`` facts planted in its first 70%, ``questions`` late questions about them and ``never_said`` about
    subjects it never mentions."""
    if kind not in KINDS or phrasing not in PHRASINGS:
        raise ValueError(f"kind must be one of {KINDS} and phrasing one of {PHRASINGS}")
    rng = random.Random(f"{source}/{kind}/{seed}/{phrasing}")
    docs = documents(source)
    messages = _chat(rng, docs, int(tokens * 4.4)) if kind == "chat" else _agent(rng, docs, int(tokens * 3.6))
    text = json.dumps(messages, ensure_ascii=False)
    subjects = [f"{c} {t}" for c in _CITIES for t in _THINGS]
    rng.shuffle(subjects)
    subjects = [s for s in subjects if s.split()[0] not in text]
    sizes = [len(json.dumps(m, ensure_ascii=False)) for m in messages]
    total, running, end = sum(sizes), 0, len(messages)
    for i, size in enumerate(sizes):
        running += size
        if running > 0.7 * total:
            end = i
            break
    placements = ["keep"] * round(facts * KEEP_SHARE)
    rest = ("user", "assistant", "tool") if kind == "agent" else ("user", "assistant")
    placements += [rest[i % len(rest)] for i in range(facts - len(placements))]
    rng.shuffle(placements)
    planted: list[Planted] = []
    inserts: list[tuple[int, list[Message]]] = []
    for placement, subject in zip(placements, subjects, strict=False):
        attribute = _pick(rng, tuple(_ATTRIBUTES))
        value = _ATTRIBUTES[attribute](rng, subject)
        while value in text or any(value == p.value for p in planted):
            value = _ATTRIBUTES[attribute](rng, subject)
        planted.append(Planted(subject, attribute, value, placement))
        _plant(rng, messages, end, planted[-1], phrasing, inserts)
    for at, new in sorted(inserts, key=lambda item: -item[0]):
        messages[at:at] = new
    conversation = Dense(source, kind, seed, messages, planted)
    asked = list(planted)
    rng.shuffle(asked)
    for fact in asked[:questions]:
        question = _pick(rng, _QUESTIONS[phrasing]).format(s=fact.subject, a=fact.attribute)
        conversation.questions.append({"question": question, "needs": [fact.value], "placement": fact.placement})
    for subject in subjects[len(planted): len(planted) + never_said]:
        question = _pick(rng, _QUESTIONS[phrasing]).format(s=subject, a=_pick(rng, tuple(_ATTRIBUTES)))
        conversation.questions.append({"question": question, "needs": [], "placement": "never said"})
    return conversation


def _plant(rng: random.Random, messages: list[Message], end: int, fact: Planted, phrasing: str,
           inserts: list[tuple[int, list[Message]]]) -> None:
    s, a, v = fact.subject, fact.attribute, fact.value
    if fact.placement == "tool":
        tools = [i for i, m in enumerate(messages[:end]) if m["role"] == "tool"]
        at = _pick(rng, tools)
        key, name = s.lower().replace(" ", "_").replace("-", "_"), a.lower().replace(" ", "_")
        line = _pick(rng, _TOOL).format(key=key, field=name, s=s, a=a, v=v)
        lines = messages[at]["content"].split("\n")
        cut = 1 + int(rng.random() * max(len(lines) - 1, 1))
        messages[at]["content"] = "\n".join([*lines[:cut], line, *lines[cut:]])
        return
    if fact.placement == "assistant":
        at = _pick(rng, [i for i, m in enumerate(messages[:end]) if m["role"] == "assistant" and m.get("content")])
        messages[at]["content"] += " " + _pick(rng, _ASSISTANT).format(s=s, a=a, v=v)
        return
    sentence = _pick(rng, _KEEP[phrasing] if fact.placement == "keep" else _STATED[phrasing]).format(s=s, a=a, v=v)
    users = [i for i, m in enumerate(messages[:end]) if m["role"] == "user"]
    if rng.random() < 0.5:  # a turn of its own
        inserts.append((_pick(rng, users), [{"role": "user", "content": sentence},
                                            {"role": "assistant", "content": _pick(rng, _ACKS)}]))
    elif rng.random() < 0.7:  # at the end of a longer message
        at = _pick(rng, users)
        messages[at]["content"] += "\n\n" + sentence
    else:  # in the middle of one, at a paragraph break outside a code fence
        at = _pick(rng, users)
        parts = messages[at]["content"].split("\n\n")
        fenced = [sum(p.count("```") for p in parts[:i]) % 2 == 1 for i in range(len(parts))]
        cut = _pick(rng, [i for i in range(1, len(parts)) if not fenced[i]] or [len(parts)])
        messages[at]["content"] = "\n\n".join([*parts[:cut], sentence, *parts[cut:]])


def added_tokens(sent: list[Any], original: list[Any], counter: Any) -> int:
    """Tokens of ``sent`` in messages that are not the original's, not a summary and not a shortened copy of one
    of its messages (by id, or a tool result's call id): what recall added."""
    from ctxwin.messages import ToolMessage
    from ctxwin.strategies._summarize import is_summary

    ids = {m.id for m in original if m.id} | {m.tool_call_id for m in original if isinstance(m, ToolMessage)}
    texts = {m.text for m in original}
    return sum(counter.count_message(m) for m in sent
               if m.text not in texts and not is_summary(m)
               and not (m.id in ids or (isinstance(m, ToolMessage) and m.tool_call_id in ids)))


def recalled_for(sent: list[Any], question: str, counter: Any) -> int:
    """Tokens of ``sent``'s recall messages recalled for ``question`` (the newest query): what the question itself
    pulled in. A cache-stable session's request also carries the recall of earlier questions, fixed until its next
    cut; ``added_tokens`` counts those too."""
    from ctxwin.recall._inject import RECALL_KEY, is_recalled

    return sum(counter.count_message(m) for m in sent
               if is_recalled(m) and question in m.response_metadata[RECALL_KEY].get("query", ""))
