"""The built-in models' prompt caching and prices (``CachingRules``), by model name, as the providers publish them.

Read on the date each entry gives, from the source it names (the providers' pricing and caching pages); prices change,
so a deployment that bills differently registers its own ``ModelSpec(..., caching=...)`` through a plugin
(docs/sessions.md). Models whose provider does not cache (gpt-4-turbo, gpt-3.5, Gemini before 2.5) have none.
"""

from __future__ import annotations

from ctxwin.counters.caching import CachingRules

_OPENAI = "https://platform.openai.com/docs/pricing; https://platform.openai.com/docs/guides/prompt-caching"
_ANTHROPIC = ("https://platform.claude.com/docs/en/about-claude/pricing; "
              "https://platform.claude.com/docs/en/build-with-claude/prompt-caching")
_GEMINI = "https://ai.google.dev/gemini-api/docs/pricing; https://ai.google.dev/gemini-api/docs/caching"
_DEEPSEEK = "https://api-docs.deepseek.com/quick_start/pricing; https://api-docs.deepseek.com/guides/kv_cache"
_READ = "2026-11-26"

_OPENAI_TTL = "in-memory, 5-10 min idle (up to 1 h); no write fee"
_GEMINI_ASSUMED = ("the granularity of implicit cache hits is not published: 1 token assumed; implicit caching has "
                   "no write fee and no storage fee; prices for prompts up to 200k tokens")
_DEEPSEEK_TTL = "on disk, hours to days; no write fee"


def _openai(input_price: float, cached: float, output: float) -> CachingRules:
    return CachingRules("automatic", 1024, 128, input_price, cached, input_price, output, _OPENAI, _READ,
                        ttl=_OPENAI_TTL)


def _anthropic(input_price: float, output: float, min_prefix: int, read: float | None = None,
               write: float | None = None) -> CachingRules:
    # Anthropic prices caching by multiples of the input price, a read 0.1x and a 5-minute write 1.25x (1-hour: 2x),
    # except Claude 3 Haiku's, which its page lists on their own.
    read = read if read is not None else round(input_price * 0.1, 4)
    write = write if write is not None else round(input_price * 1.25, 4)
    return CachingRules("explicit", min_prefix, 1, input_price, read, write, output, _ANTHROPIC, _READ, ttl="5m",
                        max_breakpoints=4)


def _gemini(input_price: float, cached: float, output: float, min_prefix: int, assumed: str = "") -> CachingRules:
    return CachingRules("automatic", min_prefix, 1, input_price, cached, input_price, output, _GEMINI, _READ,
                        ttl="implicit, not published", assumed=_GEMINI_ASSUMED + assumed)


def _deepseek(input_price: float | None, cached: float | None, output: float | None, assumed: str) -> CachingRules:
    return CachingRules("automatic", 64, 64, input_price, cached, input_price, output, _DEEPSEEK, _READ,
                        ttl=_DEEPSEEK_TTL, assumed=assumed)


_V32 = "deepseek-chat and deepseek-reasoner serve DeepSeek-V3.2 since 2025-09-29: its prices"
_V4 = ("DeepSeek-V4's prices are not in the sources read (third-party figures disagree): none set; caching in 64-token "
       "units as for V3, assumed")

BUILTIN_CACHING: dict[str, CachingRules] = {
    "gpt-4o": _openai(2.50, 1.25, 10.00),
    "gpt-4o-mini": _openai(0.15, 0.075, 0.60),
    "gpt-4.1": _openai(2.00, 0.50, 8.00),
    "gpt-4.1-mini": _openai(0.40, 0.10, 1.60),
    "gpt-4.1-nano": _openai(0.10, 0.025, 0.40),
    "gpt-5": _openai(1.25, 0.125, 10.00),
    "gpt-5-mini": _openai(0.25, 0.025, 2.00),
    "gpt-5-nano": _openai(0.05, 0.005, 0.40),
    "gpt-5.1": _openai(1.25, 0.125, 10.00),
    "o1": _openai(15.00, 7.50, 60.00),
    "o1-mini": _openai(1.10, 0.55, 4.40),
    "o3": _openai(2.00, 0.50, 8.00),
    "o3-mini": _openai(1.10, 0.55, 4.40),
    "o4-mini": _openai(1.10, 0.275, 4.40),
    "claude-3-haiku": _anthropic(0.25, 1.25, 2048, read=0.03, write=0.30),
    "claude-3-opus": _anthropic(15.00, 75.00, 1024),
    "claude-3-5-haiku": _anthropic(0.80, 4.00, 2048),
    "claude-3-5-sonnet": _anthropic(3.00, 15.00, 1024),
    "claude-3-7-sonnet": _anthropic(3.00, 15.00, 1024),
    "claude-sonnet-4": _anthropic(3.00, 15.00, 1024),
    "claude-sonnet-4-5": _anthropic(3.00, 15.00, 1024),
    "claude-opus-4": _anthropic(15.00, 75.00, 1024),
    "claude-opus-4-1": _anthropic(15.00, 75.00, 1024),
    "claude-haiku-4-5": _anthropic(1.00, 5.00, 4096),
    "claude-opus-4-5": _anthropic(5.00, 25.00, 4096),
    "gemini-2.5-pro": _gemini(1.25, 0.125, 10.00, 2048),
    "gemini-2.5-flash": _gemini(0.30, 0.03, 2.50, 2048),
    "gemini-2.5-flash-lite": _gemini(0.10, 0.01, 0.40, 2048, "; its minimum prefix is not listed: 2.5 Flash's"),
    "gemini-3-pro": _gemini(2.00, 0.20, 12.00, 4096),
    "deepseek-v3": _deepseek(0.28, 0.028, 0.42, _V32),
    "deepseek-r1": _deepseek(0.28, 0.028, 0.42, _V32),
    "deepseek-v3.1": _deepseek(0.28, 0.028, 0.42, _V32 + " (V3.1 is served as V3.2)"),
    "deepseek-v3.2": _deepseek(0.28, 0.028, 0.42, _V32),
    "deepseek-v4-flash": _deepseek(None, None, None, _V4),
    "deepseek-v4-pro": _deepseek(None, None, None, _V4),
}
