"""Facts: the rare, checkable strings of a conversation (ids, dates, quantities, paths...), found by one documented rule
(docs/bench.md, "Retention"). Matching is by exact substring, so a fact survives only verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage

RARE_MESSAGES = 3
MIN_CHARS = 4

_MONTHS = (
    "Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?"
    "|Nov(?:ember)?|Dec(?:ember)?"
)
_UNITS = (
    r"%|‰|ms|µs|ns|s|sec|secs|seconds?|min|mins|minutes?|h|hrs?|hours?|days?|weeks?|months?|years?|"
    r"[KMGTP]i?B|[kMG]?bps|[KMG]Hz|kg|g|mg|lbs?|km|m|cm|mm|mi|ft|°C|°F|kWh|W|kW|V|mAh|"
    r"req/s|rps|qps|ops/s|tokens?|rows?|users?|items?|pages?|MB/s|GB/s|"
    r"USD|EUR|GBP|JPY|CNY|CHF|INR|RUB|KRW|元|円|원|руб|€|\$|£|¥|個|件|人|台"
)
# ASCII word edges: "\b" would see none between a CJK character and a Latin letter ("工单号是ABC-12345").
_L, _R = r"(?<![A-Za-z0-9_])", r"(?![A-Za-z0-9_])"
_W = "[A-Za-z0-9_]"
# One alternation, longest and most specific kinds first, so ``https://x/y.csv`` is one url, not a path and a file.
_PATTERNS = (
    ("url", r"https?://[^\s<>\"'`()\[\]{}，。、）]+"),
    ("email", r"(?<![A-Za-z0-9_.+-])[A-Za-z0-9_.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"),
    ("path", r"(?:[A-Za-z]:\\|~/|\.{1,2}/|(?<![\w.])/)[\w.@+-]+(?:[/\\][\w.@+-]+)+/?"),
    ("date", rf"{_L}(?:\d{{4}}-\d{{1,2}}-\d{{1,2}}(?:[T ]\d{{1,2}}:\d{{2}}(?::\d{{2}})?)?"
             rf"|\d{{4}}年\d{{1,2}}月\d{{1,2}}日|\d{{1,2}}[./]\d{{1,2}}[./]\d{{2,4}}{_R}"
             rf"|(?:{_MONTHS})\.? \d{{1,2}}(?:st|nd|rd|th)?(?:, \d{{4}})?{_R}|\d{{1,2}} (?:{_MONTHS}) \d{{4}}{_R})"),
    ("ip", rf"{_L}\d{{1,3}}(?:\.\d{{1,3}}){{3}}(?::\d+)?{_R}"),
    ("phone", r"\+\d{1,3}(?:[ -]?\(?\d{2,4}\)?){2,5}"),
    ("time", rf"{_L}\d{{1,2}}:\d{{2}}(?::\d{{2}})?(?:\s?(?:[ap]\.?m\.?|UTC|GMT|CET|CEST|PST|EST|JST))?{_R}"),
    ("quantity", rf"[$€£¥]\s?\d(?:[\d,.]*\d)?(?:\s?[kKmMbB]n?)?"
                 rf"|{_L}\d(?:[\d,.]*\d)?[kKMB]?(?:\s?(?:{_UNITS}))(?![\w/])"),
    ("file", rf"{_L}[A-Za-z0-9_-]{{1,64}}\.(?:py|js|ts|tsx|jsx|json|ya?ml|toml|ini|cfg|md|rst|csv|tsv|txt|log|sql|sh|go"
             rf"|rs|c|h|cc|cpp|hpp|java|kt|rb|php|html|css|xml|pdf|docx?|xlsx?|pptx?|png|jpe?g|svg|zip|gz|tar|whl"
             rf"|lock){_R}"),
    ("symbol", rf"{_L}[A-Za-z_]{_W}*(?:\.[A-Za-z_]{_W}*)*\(\)|{_L}[A-Za-z_]{_W}*(?:\.[A-Za-z_]{_W}*)+{_R}"
               rf"|{_L}[a-z]+[A-Z]{_W}*{_R}|{_L}[A-Z][a-z]+[A-Z]{_W}*{_R}|{_L}_*[A-Za-z]+_{_W}+{_R}"),
    # (the look-aheads are bounded: from every start of "a-a-a-…" an unbounded one would rescan the rest)
    ("id", rf"#\d{{3,}}{_R}|{_L}(?=[A-Za-z0-9_.-]{{0,63}}\d)(?=[A-Za-z0-9_.-]{{0,63}}[A-Za-z])"
           rf"[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?{_R}|{_L}\d[\d-]{{3,}}\d{_R}"),
    ("number", rf"{_L}\d{{4}}{_R}"),
    ("name", rf"{_L}[A-Z][a-zà-ÿ]+(?:[ -][A-Z][a-zà-ÿ]+)+{_R}"),
)
# Every fact starts at one of these characters, after none of the word characters: most positions are rejected
# before the alternation is tried (a several-fold speed-up on prose and logs).
_START = (
    r"(?=[A-Za-z0-9_~./#$€£¥+\\])(?<![A-Za-z0-9_])"
    # ... and a plain word (lower case, or capitalised and not followed by another capitalised word) is none
    r"(?![a-z]+(?=[\s,;!?\"')\]]|$)|[A-Z][a-z]+(?=[,;!?\"')\]]|\s+[^A-Z0-9\s]|$))"
)
_FACT = re.compile(_START + "(?:" + "|".join(f"(?P<{kind}>{pattern})" for kind, pattern in _PATTERNS) + ")")
# Capitalised words that open sentences and headings more often than they start a name.
_NOT_NAMES = frozenset({
    "The", "This", "That", "These", "Those", "There", "Then", "Here", "When", "Where", "What", "Which", "Who", "Why",
    "How", "If", "And", "But", "Or", "So", "Also", "Please", "Thanks", "Thank", "Hi", "Hello", "Dear", "Yes", "No",
    "Not", "Now", "Next", "Let", "Can", "Could", "Would", "Should", "Will", "Do", "Does", "Did", "Is", "Are", "Was",
    "We", "You", "They", "It", "In", "On", "At", "For", "From", "With", "By", "To", "Of", "As", "My", "Our", "Your",
    "Their", "After", "Before", "Since", "While", "Note", "See", "Use", "Added", "Fixed", "Summary", "Details",
    "Example", "Notes", "Background", "Steps", "Error", "Warning", "Info", "Debug", "True", "False", "None",
})
_TRAILING = ".,;:!?)]}'\"”’»"


@dataclass(frozen=True)
class Fact:
    """One fact: its text, its kind (docs/bench.md, "Retention"), whether a user message states it, and the indexes
    of the messages it is found in."""

    text: str
    kind: str
    user: bool
    messages: tuple[int, ...]


def items(text: str) -> list[tuple[str, str]]:
    """``(text, kind)`` of every fact-shaped item in ``text``, in order (repeats included)."""
    found: list[tuple[str, str]] = []
    for match in _FACT.finditer(text):
        kind = match.lastgroup or "id"
        item = match.group()
        if kind in ("url", "path", "id"):
            item = item.rstrip(_TRAILING)
        if len(item) < MIN_CHARS:
            continue
        if kind == "name" and item.split()[0].split("-")[0] in _NOT_NAMES:
            words = item.split()[1:]
            if len(words) < 2:
                continue
            item = " ".join(words)
        if kind == "id" and item.replace(".", "").replace("-", "").isdigit() and "." in item:
            continue  # a plain decimal number (3.14) is no identifier
        found.append((item, kind))
    return found


def message_text(message: BaseMessage) -> str:
    """What a message says: its text and, for an assistant message, its tool calls' names and arguments."""
    text = str(message.text)
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = " ".join(f"{call['name']} {_arguments(call['args'])}" for call in message.tool_calls)
        text = f"{text}\n{calls}" if text else calls
    return text


def _arguments(args: object) -> str:
    if isinstance(args, dict):
        return " ".join(_arguments(value) for value in args.values())
    if isinstance(args, (list, tuple)):
        return " ".join(_arguments(value) for value in args)
    return str(args)


def find_facts(
    messages: Sequence[BaseMessage], found: Sequence[Iterable[tuple[str, str]]] | None = None
) -> list[Fact]:
    """The conversation's facts, in order of first appearance: items found in at most ``RARE_MESSAGES`` messages.
    ``found`` (the ``items`` of each message) saves reading the messages again when the caller has them."""
    if found is None:
        found = [items(message_text(m)) for m in messages]
    seen: dict[str, tuple[str, list[int]]] = {}  # item -> (kind, the messages it is found in)
    for index, pairs in enumerate(found):
        for item, kind in dict(pairs).items():
            seen.setdefault(item, (kind, []))[1].append(index)
    return [
        Fact(text, kind, any(isinstance(messages[i], HumanMessage) for i in where), tuple(where))
        for text, (kind, where) in seen.items()
        if len(where) <= RARE_MESSAGES
    ]
