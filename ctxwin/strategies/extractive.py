"""An offline extractive summarizer: one line per message, built from what the message itself says.

No model is called: each message contributes its first sentence (or the start of it), tool calls their names and
arguments, tool results their first words. An earlier summary is carried over as it is, so summaries grow
incrementally instead of being rewritten.
"""

from __future__ import annotations

import json
import re

from ctxwin.messages import AIMessage, BaseMessage, ToolMessage
from ctxwin.strategies.summary import SUMMARY_HEADER, is_summary

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")
LINE_CHARS = 160


def _first_sentence(text: str, limit: int = LINE_CHARS) -> str:
    text = " ".join(text.split())
    sentence = _SENTENCE_END.split(text, maxsplit=1)[0] if text else ""
    return sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"


def extractive_summarizer(messages: list[BaseMessage]) -> str:
    """One line per message: who said what first, which tools were called with what, what they returned."""
    lines: list[str] = []
    for message in messages:
        if is_summary(message):
            lines.append(message.text.removeprefix(SUMMARY_HEADER).strip())
            continue
        role = {"ai": "assistant", "human": "user"}.get(message.type, message.type)
        text = _first_sentence(message.text)
        if isinstance(message, ToolMessage):
            lines.append(f"- tool result {message.name or message.tool_call_id}: {text}")
            continue
        if text:
            lines.append(f"- {role}: {text}")
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                args = json.dumps(call["args"], ensure_ascii=False)
                lines.append(f"- assistant called {call['name']}({_first_sentence(args, 80)})")
    return "\n".join(line for line in lines if line)
