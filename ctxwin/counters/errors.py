"""Errors raised when a counter's tokenizer data cannot be used."""

from __future__ import annotations


class TokenizerDataError(RuntimeError):
    """Tokenizer data is missing, corrupt or the wrong version; the message names the file and the fix."""
