"""Errors and warnings the persistent histories raise about what they find on disk."""

from __future__ import annotations

from ctxwin._errors import InvalidInputError


class HistoryFormatError(InvalidInputError):
    """A history file or database is corrupt, foreign (not written by ctxwin) or from a newer ctxwin.

    Raised instead of guessing, so nothing is ever overwritten or dropped silently.
    """


class TornLineWarning(UserWarning):
    """A JSONL history ends with (or once ended with) a line cut short by a crash; that line was skipped."""
