"""The built-in models' prompt caching and prices (``CachingRules``), by model name, as the providers publish them.

Read on the date each entry gives, from the source it names (the providers' pricing and caching pages); prices change,
so a deployment that bills differently registers its own ``ModelSpec(..., caching=...)`` through a plugin
(docs/sessions.md). Models whose provider does not cache (gpt-4-turbo, gpt-3.5, Gemini before 2.5) have none.
"""

from __future__ import annotations

from ctxwin.counters._caching import CachingRules

_OPENAI = "https://platform.openai.com/docs/pricing; https://platform.openai.com/docs/guides/prompt-caching"
# GPT-5.2 to 5.6: each model's page (developers.openai.com/api/docs/models/<name>), the prompt caching guide and the
# openai SDK's own parameter docs (prompt_cache_options, prompt_cache_breakpoint, usage cache_write_tokens).
_OPENAI_56 = ("https://developers.openai.com/api/docs/models/{name}; https://developers.openai.com/api/docs/pricing; "
              "https://developers.openai.com/api/docs/guides/prompt-caching")
_READ_NOW = "2026-11-28"
_ANTHROPIC = ("https://platform.claude.com/docs/en/about-claude/pricing; "
              "https://platform.claude.com/docs/en/build-with-claude/prompt-caching")
_GEMINI = "https://ai.google.dev/gemini-api/docs/pricing; https://ai.google.dev/gemini-api/docs/caching"
_DEEPSEEK = "https://api-docs.deepseek.com/quick_start/pricing; https://api-docs.deepseek.com/guides/kv_cache"
_READ = "2026-11-26"

_OPENAI_TTL = "in-memory, 5-10 min idle (up to 1 h); no write fee"
_GEMINI_ASSUMED = ("the granularity of implicit cache hits is not published: 1 token assumed; implicit caching has "
                   "no write fee and no storage fee; prices for prompts up to 200k tokens")
_DEEPSEEK_TTL = "on disk, hours to days; no write fee"
_LONG_PROMPT = "; prompts over 272k input tokens are billed 2x input, 1.5x output for the whole request: not modelled"
_OPENAI_56_ASSUMED = ("minimum prefix 1,024 tokens as for earlier OpenAI models (not restated for GPT-5.6); explicit "
                      "breakpoints are not rounded to a token block; the price of a 12h write is not published: the "
                      "30m write price assumed" + _LONG_PROMPT)


def _openai(input_price: float, cached: float, output: float) -> CachingRules:
    return CachingRules("automatic", 1024, 128, input_price, cached, input_price, output, _OPENAI, _READ,
                        ttl=_OPENAI_TTL)


def _openai_5x(input_price: float, cached: float, output: float) -> CachingRules:
    """GPT-5.2 to 5.5: automatic caching, no write fee; ``prompt_cache_key`` routes requests."""
    return CachingRules("automatic", 1024, 128, input_price, cached, input_price, output,
                        _OPENAI_56.format(name="gpt-5.5"), _READ_NOW, ttl="in-memory or 24h (prompt_cache_retention)",
                        cache_key=True, assumed=_LONG_PROMPT.removeprefix("; "))


def _openai_56(name: str, input_price: float, cached: float, output: float, assumed: str = "") -> CachingRules:
    """GPT-5.6: a cache write costs 1.25x the input price (reported as ``cache_write_tokens``); up to four explicit
    ``prompt_cache_breakpoint`` markers a request; ``prompt_cache_options.ttl`` 30m by default, 12h per
    breakpoint."""
    return CachingRules("automatic", 1024, 1, input_price, cached, round(input_price * 1.25, 4), output,
                        _OPENAI_56.format(name=name), _READ_NOW, ttl="30m", max_breakpoints=4, long_ttl="12h",
                        cache_key=True, assumed=_OPENAI_56_ASSUMED + assumed)


def _anthropic(input_price: float, output: float, min_prefix: int, read: float | None = None,
               write: float | None = None, *, date: str = _READ, assumed: str = "") -> CachingRules:
    # Anthropic prices caching by multiples of the input price, a read 0.1x and a 5-minute write 1.25x (1-hour: 2x),
    # except Claude 3 Haiku's, which its page lists on their own, and the reads some Claude 5 models bill lower.
    read = read if read is not None else round(input_price * 0.1, 4)
    write = write if write is not None else round(input_price * 1.25, 4)
    return CachingRules("explicit", min_prefix, 1, input_price, read, write, output, _ANTHROPIC, date, ttl="5m",
                        max_breakpoints=4, long_ttl="1h", long_write=round(input_price * 2, 4), assumed=assumed)


_NEW_MIN = ("the minimum cacheable prefix is not in the pages read: {0:,} tokens assumed (as the model it succeeds); "
            "automatic caching (a top-level cache_control) marks the last cacheable block")


def _claude(input_price: float, output: float, min_prefix: int, read: float | None = None,
            assumed: str = "") -> CachingRules:
    """A Claude model of 2026, as https://platform.claude.com/docs/en/about-claude/pricing lists it."""
    return _anthropic(input_price, output, min_prefix, read, date=_READ_NOW,
                      assumed=_NEW_MIN.format(min_prefix) + assumed)


def _gemini(input_price: float, cached: float, output: float, min_prefix: int, assumed: str = "") -> CachingRules:
    return CachingRules("automatic", min_prefix, 1, input_price, cached, input_price, output, _GEMINI, _READ,
                        ttl="implicit, not published", assumed=_GEMINI_ASSUMED + assumed)


def _gemini_3x(input_price: float, cached: float, output: float, min_prefix: int, assumed: str) -> CachingRules:
    return CachingRules("automatic", min_prefix, 1, input_price, cached, input_price, output, _GEMINI, _READ_NOW,
                        ttl=_GEMINI_TTL, assumed=_GEMINI_ASSUMED + assumed)


def _deepseek(input_price: float | None, cached: float | None, output: float | None, assumed: str,
              date: str = _READ) -> CachingRules:
    return CachingRules("automatic", 64, 64, input_price, cached, input_price, output, _DEEPSEEK, date,
                        ttl=_DEEPSEEK_TTL, assumed=assumed)


_V32 = "deepseek-chat and deepseek-reasoner serve DeepSeek-V3.2 since 2025-09-29: its prices"
_V4 = ("peak-hour prices (01:00-04:00 and 06:00-10:00 UTC on weekdays; off-peak ones are half); deepseek-flash "
       "serves DeepSeek-V4.1-Flash, deepseek-v4-pro DeepSeek-V4-Pro-0813; caching in 64-token units as for V3, assumed")
# Gemini's explicit context caching (a cachedContents resource created ahead of the requests, billed per token-hour
# of storage besides the cached reads) is not something a plan sends: a session relies on implicit hits.
_GEMINI_TTL = ("implicit, not published; explicit cachedContents (created ahead, storage billed per token-hour) are "
               "not used by plans")
_GEMINI_3X = ("; prices from the pricing page as quoted by third parties (the page itself not read); minimum prefix "
              "not listed: {0:,} assumed")

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
    "gpt-5.2": _openai_5x(1.75, 0.175, 14.00),
    "gpt-5.4": _openai_5x(2.50, 0.25, 15.00),
    "gpt-5.4-mini": _openai_5x(0.75, 0.075, 4.50),
    "gpt-5.4-nano": _openai_5x(0.20, 0.02, 1.25),
    "gpt-5.5": _openai_5x(5.00, 0.50, 30.00),
    "gpt-5.6-sol": _openai_56("gpt-5.6-sol", 4.00, 0.40, 20.00,
                              "; the promotional price the page lists (at least until 2026-11-21; before: $5/$30)"),
    "gpt-5.6-terra": _openai_56("gpt-5.6-terra", 2.00, 0.20, 12.00),
    "gpt-5.6-luna": _openai_56("gpt-5.6-luna", 0.20, 0.02, 1.20),
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
    "claude-opus-4-6": _claude(5.00, 25.00, 4096),
    "claude-sonnet-4-6": _claude(3.00, 15.00, 1024),
    "claude-opus-4-7": _claude(5.00, 25.00, 4096),
    "claude-opus-4-8": _claude(5.00, 25.00, 4096),
    "claude-opus-5": _claude(5.00, 25.00, 4096),
    "claude-sonnet-5": _claude(2.00, 10.00, 1024),
    "claude-opus-5-5": _claude(4.00, 20.00, 4096, read=0.20),
    "claude-sonnet-5-5": _claude(2.00, 10.00, 1024, read=0.10,
                                 assumed="; reads cut from $0.20 to $0.10 on 2026-10-07 (as third-party price "
                                         "trackers report it; the model page read still listed $0.20)"),
    "claude-haiku-5-5": _claude(0.10, 0.50, 4096,
                                assumed="; prompts over 100k tokens are billed at 5x every rate: not modelled"),
    "claude-fable-5": _claude(10.00, 50.00, 4096, read=1.00),
    "claude-fable-5-1": _claude(10.00, 50.00, 4096, read=0.25),
    "gemini-2.5-pro": _gemini(1.25, 0.125, 10.00, 2048),
    "gemini-2.5-flash": _gemini(0.30, 0.03, 2.50, 2048),
    "gemini-2.5-flash-lite": _gemini(0.10, 0.01, 0.40, 2048, "; its minimum prefix is not listed: 2.5 Flash's"),
    "gemini-3-pro": _gemini(2.00, 0.20, 12.00, 4096),
    "gemini-3-flash": _gemini_3x(0.50, 0.05, 3.00, 1024, _GEMINI_3X.format(1024)),
    "gemini-3.1-pro": _gemini_3x(2.00, 0.20, 12.00, 4096, _GEMINI_3X.format(4096)),
    "gemini-3.5-flash": _gemini_3x(1.50, 0.15, 9.00, 1024, _GEMINI_3X.format(1024)),
    "deepseek-v3": _deepseek(0.28, 0.028, 0.42, _V32),
    "deepseek-r1": _deepseek(0.28, 0.028, 0.42, _V32),
    "deepseek-v3.1": _deepseek(0.28, 0.028, 0.42, _V32 + " (V3.1 is served as V3.2)"),
    "deepseek-v3.2": _deepseek(0.28, 0.028, 0.42, _V32),
    "deepseek-v4-flash": _deepseek(0.30, 0.006, 1.20, _V4, _READ_NOW),
    "deepseek-v4-pro": _deepseek(1.32, 0.044, 3.96, _V4, _READ_NOW),
}
