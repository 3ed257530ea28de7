"""Default plugin: the opt-in count-tokens endpoints, ``anthropic-api`` and ``gemini-api``."""

from __future__ import annotations

from collections.abc import Callable

from ctxwin.counters.api.anthropic import AnthropicApiCounter
from ctxwin.counters.api.gemini import GeminiApiCounter
from ctxwin.hookspecs import hookimpl


@hookimpl
def register_counters(register: Callable[..., None]) -> None:
    register("anthropic-api", AnthropicApiCounter,
             origin="online, opt-in: Anthropic's count_tokens endpoint (extra 'anthropic'), counts cached on disk",
             exact=True)
    register("gemini-api", GeminiApiCounter,
             origin="online, opt-in: Gemini's countTokens endpoint (extra 'gemini'), counts cached on disk",
             exact=True)
