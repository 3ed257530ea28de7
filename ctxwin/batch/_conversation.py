"""A conversation read from a file, and the errors of reading one: what the CLI reads and the batch code takes (it
sits below the CLI, so these live here)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from ctxwin._errors import InvalidInputError
from ctxwin.messages import BaseMessage


class ConversationFileError(InvalidInputError):
    """A file that cannot be read as conversations; the message names the file and where."""


def nesting_error() -> ConversationFileError:
    """Python's JSON parser and ctxwin's converters recurse: past the interpreter's limit, say so in one line."""
    return ConversationFileError(f"nested too deeply (limit about {sys.getrecursionlimit():,} levels)")


@dataclass(frozen=True)
class Conversation:
    """One conversation from a file: where it came from, its messages, its tools and the model its request names
    (``{"model": "claude-sonnet-4-5", "messages": [...]}``; None when it names none)."""

    source: str
    line: int | None
    messages: list[BaseMessage]
    tools: list[dict[str, Any]] | None = None
    model: str | None = None
