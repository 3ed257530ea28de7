"""Default plugin: the opt-in count-tokens endpoints, ``anthropic-api`` and ``gemini-api`` (imported when built)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ctxwin.hookspecs import hookimpl

if TYPE_CHECKING:
    from ctxwin.counters._api.anthropic import AnthropicApiCounter
    from ctxwin.counters._api.gemini import GeminiApiCounter


def anthropic_api_counter(arg: str | None) -> AnthropicApiCounter:
    from ctxwin.counters._api.anthropic import AnthropicApiCounter

    return AnthropicApiCounter(arg or "")  # none: its own error says the model is needed


def gemini_api_counter(arg: str | None) -> GeminiApiCounter:
    from ctxwin.counters._api.gemini import GeminiApiCounter

    return GeminiApiCounter(arg or "")  # none: its own error says the model is needed


@hookimpl
def register_counters(register: Callable[..., None]) -> None:
    register("anthropic-api", anthropic_api_counter,
             origin="online, opt-in: Anthropic's count_tokens endpoint (extra 'anthropic'), counts cached on disk")
    register("gemini-api", gemini_api_counter,
             origin="online, opt-in: Gemini's countTokens endpoint (extra 'gemini'), counts cached on disk")
