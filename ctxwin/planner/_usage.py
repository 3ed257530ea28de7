"""A provider's reported input usage, read from whichever shape it comes in (``PlanSession.observe``): OpenAI's two
forms, Anthropic, Gemini and LangChain's ``usage_metadata``, as SDK objects or dicts (docs/sessions.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ctxwin._errors import InvalidInputError

# No request comes near this many tokens; a larger count is a corrupted or made-up usage (and past 2**1024 would
# overflow the float ratios observe() takes).
MAX_TOKENS = 10**12


@dataclass(frozen=True)
class Usage:
    """One request's input as the provider counted it: every input token, and how many of them the cache read and
    how many were written to it (``cache_write_long_tokens`` of those at the longer lifetime: Anthropic's hour,
    OpenAI's 12 hours)."""

    input_tokens: int
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_long_tokens: int = 0

    def __post_init__(self) -> None:
        if self.cached_tokens + self.cache_write_tokens > self.input_tokens:
            raise InvalidInputError(
                f"usage: {self.cached_tokens} cached and {self.cache_write_tokens} written tokens are more than the "
                f"{self.input_tokens} input tokens"
            )
        if self.cache_write_long_tokens > self.cache_write_tokens:
            raise InvalidInputError(
                f"usage: {self.cache_write_long_tokens} tokens written for the longer lifetime are more than the "
                f"{self.cache_write_tokens} written"
            )


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def _count(obj: Any, *path: str) -> int | None:
    for name in path:
        if obj is None:
            return None
        obj = _get(obj, name)
    if obj is None:
        return None
    if isinstance(obj, bool) or not isinstance(obj, int) or obj < 0:
        raise InvalidInputError(f"usage {'.'.join(path)} must be a non-negative int, got {obj!r}")
    if obj > MAX_TOKENS:
        magnitude = int(obj.bit_length() * math.log10(2))  # no float of it: past 2**1024 there is none
        raise InvalidInputError(f"usage {'.'.join(path)} is about 10^{magnitude} tokens, more than any request (at "
                                f"most "
                                f"{MAX_TOKENS:,}): not a provider's count")
    return obj


def read_usage(usage: Any) -> Usage:
    """``usage`` (any shape docs/sessions.md lists) as a ``Usage``; ValueError naming what was expected otherwise."""
    if usage is None or isinstance(usage, (str, bytes, int, float)):
        raise InvalidInputError(f"usage must be a provider's usage object or dict, got {usage!r}")
    anthropic_read = _count(usage, "cache_read_input_tokens")
    anthropic_write = _count(usage, "cache_creation_input_tokens")
    if anthropic_read is not None or anthropic_write is not None:
        read, written = anthropic_read or 0, anthropic_write or 0
        hour = _count(usage, "cache_creation", "ephemeral_1h_input_tokens") or 0
        return Usage((_count(usage, "input_tokens") or 0) + read + written, read, written, min(hour, written))
    prompt = _count(usage, "prompt_tokens")
    if prompt is not None:
        return Usage(prompt, _count(usage, "prompt_tokens_details", "cached_tokens") or 0,
                     _count(usage, "prompt_tokens_details", "cache_write_tokens") or 0)
    gemini = _count(usage, "prompt_token_count")
    if gemini is not None:
        return Usage(gemini, _count(usage, "cached_content_token_count") or 0)
    total = _count(usage, "input_tokens")
    if total is not None:
        details = _get(usage, "input_token_details")
        if details is not None:  # LangChain's usage_metadata
            written = _count(details, "cache_creation") or 0
            hour = _count(details, "ephemeral_1h_input_tokens") or 0
            return Usage(total, _count(details, "cache_read") or 0, written, min(hour, written))
        written = _count(usage, "input_tokens_details", "cache_write_tokens") or 0
        long = _count(usage, "input_tokens_details", "cache_write_tokens_details", "ttl_12h_tokens") or 0
        return Usage(total, _count(usage, "input_tokens_details", "cached_tokens") or 0, written, min(long, written))
    raise InvalidInputError(
        "usage has no input token count: expected OpenAI's prompt_tokens or input_tokens, Anthropic's input_tokens "
        f"with cache_read_input_tokens, Gemini's prompt_token_count or LangChain's usage_metadata; got {usage!r}"
    )


def cleared_tokens(context_management: Any) -> int:
    """The input tokens Anthropic's context editing removed from a request before counting it: the
    ``cleared_input_tokens`` of each applied edit of its reply's ``context_management`` (an SDK object or a dict);
    0 for None. ValueError for anything else."""
    if context_management is None:
        return 0
    edits = _get(context_management, "applied_edits")
    if not isinstance(edits, (list, tuple)):
        raise InvalidInputError(f"context_management must be a reply's context_management, with applied_edits, got "
                                f"{context_management!r}")
    return sum(_count(edit, "cleared_input_tokens") or 0 for edit in edits)
