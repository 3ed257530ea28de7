"""An offline extractive summarizer: one line per message, built from what the message itself says.

No model is called: each message contributes its first sentence (or the start of it), tool calls their names and
arguments, tool results their first words. An earlier summary is carried over line by line, so summaries grow
incrementally instead of being rewritten.

Given a token cap (the ``summarize`` step passes its room), the summary covers the whole span it replaces: the lines
share the cap (short lines whole, long ones cut to one common length), and when there are more messages than the
cap has room for lines, lines evenly spread across the span are quoted and the summary's first line says so. It
never covers the oldest messages and stops, which would misreport what was summarised.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ctxwin.messages import AIMessage, BaseMessage, ToolMessage
from ctxwin.strategies.summary import SUMMARY_HEADER, is_summary

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")
LINE_CHARS = 160
# A line cut shorter than this says nothing; with less room per line, fewer lines are quoted instead.
MIN_LINE_CHARS = 40
# Rounds of fitting the text to the cap: each rescales the characters allowed by the measured tokens per character.
_ROUNDS = 4


def _first_sentence(text: str, limit: int = LINE_CHARS) -> str:
    text = " ".join(text.split())
    sentence = _SENTENCE_END.split(text, maxsplit=1)[0] if text else ""
    return _shorten(sentence, limit)


def _shorten(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[: max(limit - 1, 0)] + "…"


def _lines(message: BaseMessage) -> list[str]:
    """The summary lines of one message (an earlier summary: its own lines)."""
    if is_summary(message):
        body = message.text.removeprefix(SUMMARY_HEADER).strip()
        return [line for line in body.split("\n") if line and not line.startswith("(")]  # not its coverage line
    role = {"ai": "assistant", "human": "user"}.get(message.type, message.type)
    text = _first_sentence(message.text)
    if isinstance(message, ToolMessage):
        return [f"- tool result {message.name or message.tool_call_id}: {text}"]
    lines = [f"- {role}: {text}"] if text else []
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            args = json.dumps(call["args"], ensure_ascii=False)
            lines.append(f"- assistant called {call['name']}({_first_sentence(args, 80)})")
    return lines


@dataclass(frozen=True)
class Extract:
    """A summary text and how much of its span it quotes (``quoted`` of ``lines`` lines, each whole or cut)."""

    text: str
    lines: int
    quoted: int


def extractive_summary(
    messages: Sequence[BaseMessage], max_tokens: int | None = None, count: Callable[[str], int] | None = None
) -> Extract:
    """The summary of ``messages`` within ``max_tokens`` (as ``count`` counts them), covering the whole span."""
    lines = [line for message in messages for line in _lines(message)]
    full = "\n".join(lines)
    if max_tokens is None or count is None or not lines:
        return Extract(full, len(lines), len(lines))
    sample = full[:4000]
    chars = max(len(sample) / max(count(sample), 1), 1.0) * max_tokens  # characters the cap holds, first guess
    if len(full) <= chars and count(full) <= max_tokens:
        return Extract(full, len(lines), len(lines))
    extract = Extract(full, len(lines), len(lines))
    for _ in range(_ROUNDS):
        extract = _within(lines, int(chars))
        tokens = count(extract.text)
        if tokens <= max_tokens:
            break
        chars *= 0.97 * max_tokens / tokens
    return extract  # may still be a little over: the summarize step cuts it to the cap


def _within(lines: list[str], chars: int) -> Extract:
    """The lines within about ``chars`` characters: all of them sharing the room, or evenly spread ones."""
    header = f"(covers {len(lines)} lines; " + "{what})"
    room = chars - len(header) - 40
    per_line = room // len(lines) - 1
    if per_line >= MIN_LINE_CHARS:
        picked = lines
        what = "long lines shortened"
    else:
        wanted = max(room // (MIN_LINE_CHARS + 1), 1)
        step = (len(lines) - 1) / max(wanted - 1, 1)
        picked = [lines[round(k * step)] for k in range(min(wanted, len(lines)))]
        what = f"{len(picked)} quoted, evenly spread"
    level = _level([len(line) for line in picked], room - len(picked))
    text = "\n".join([header.format(what=what), *(_shorten(line, level) for line in picked)])
    return Extract(text, len(lines), len(picked))


def _level(lengths: list[int], room: int) -> int:
    """The largest line length ``L`` with ``sum(min(length, L)) <= room``: short lines whole, long ones cut evenly."""
    remaining, left = room, len(lengths)
    for length in sorted(lengths):
        if length * left > remaining:
            return max(remaining // left, 1)
        remaining -= length
        left -= 1
    return max(lengths, default=1)


def extractive_summarizer(messages: list[BaseMessage]) -> str:
    """One line per message: who said what first, which tools were called with what, what they returned. The
    ``summarize`` step calls the capped form (``extractive_summary``) so that the summary covers its whole span."""
    return extractive_summary(messages).text
