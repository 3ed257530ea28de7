"""``get_buffer_string``: a conversation as one transcript string (for summarisers and string-only models)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal
from xml.sax.saxutils import escape, quoteattr

from ctxwin._errors import InvalidInputError
from ctxwin.messages._ai import AIMessage
from ctxwin.messages._base import BaseMessage
from ctxwin.messages._chat import ChatMessage
from ctxwin.messages._human import HumanMessage
from ctxwin.messages._system import SystemMessage
from ctxwin.messages._tool import ToolMessage


def get_buffer_string(
    messages: Sequence[BaseMessage],
    human_prefix: str = "Human",
    ai_prefix: str = "AI",
    *,
    system_prefix: str = "System",
    function_prefix: str = "Function",
    tool_prefix: str = "Tool",
    message_separator: str = "\n",
    format: Literal["prefix", "xml"] = "prefix",
) -> str:
    """``"Role: text"`` lines (LangChain's format; AI tool calls appended), or ``<message type=...>`` elements."""
    if format not in ("prefix", "xml"):
        raise InvalidInputError(f"Unrecognized format={format!r}. Supported formats are 'prefix' and 'xml'.")
    lines: list[str] = []
    for m in messages:
        if isinstance(m, HumanMessage):
            role = human_prefix
        elif isinstance(m, AIMessage):
            role = ai_prefix
        elif isinstance(m, SystemMessage):
            role = system_prefix
        elif isinstance(m, ToolMessage):
            role = tool_prefix
        elif isinstance(m, ChatMessage):
            role = function_prefix if m.role == "function" else m.role
        else:
            raise InvalidInputError(f"Got unsupported message type: {m}")
        calls = m.tool_calls if isinstance(m, AIMessage) else []
        legacy = m.additional_kwargs.get("function_call") if isinstance(m, AIMessage) and not calls else None
        if format == "prefix":
            tool_info = str(calls) if calls else (str(legacy) if legacy is not None else "")
            lines.append(f"{role}: {m.text}{tool_info}")
            continue
        body = escape(m.text)
        kind = quoteattr(role.lower())
        if not calls:
            lines.append(f"<message type={kind}>{body}</message>")
            continue
        parts = [f"<message type={kind}>"] + ([f"  <content>{body}</content>"] if body else [])
        parts += [
            f"  <tool_call id={quoteattr(c.get('id') or '')} name={quoteattr(c['name'])}>"
            f"{escape(json.dumps(c['args'], ensure_ascii=False))}</tool_call>"
            for c in calls
        ]
        lines.append("\n".join([*parts, "</message>"]))
    return message_separator.join(lines)
