"""The built-in models' prompt caching rules, as the providers publish them, and the rules assumed for a maker's
models that ctxwin's table does not list (``NEWEST``). Each entry names its source and the date it was read.
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
                   "no write fee and no storage fee")
_DEEPSEEK_TTL = "on disk, hours to days; no write fee"
_OPENAI_56_ASSUMED = ("minimum prefix 1,024 tokens as for earlier OpenAI models (not restated for GPT-5.6); explicit "
                      "breakpoints are not rounded to a token block; the price of a 12h write is not published: the "
                      "30m write price assumed")


def _openai() -> CachingRules:
    return CachingRules("automatic", 1024, 128, None, None, None, None, _OPENAI, _READ, ttl=_OPENAI_TTL)


def _openai_5x() -> CachingRules:
    """GPT-5.2 to 5.5: automatic caching, no write fee; ``prompt_cache_key`` routes requests."""
    return CachingRules("automatic", 1024, 128, None, None, None, None, _OPENAI_56.format(name="gpt-5.5"), _READ_NOW,
                        ttl="in-memory or 24h (prompt_cache_retention)", cache_key=True)


def _openai_56(name: str) -> CachingRules:
    """GPT-5.6: a cache write billed on its own (reported as ``cache_write_tokens``); up to four explicit
    ``prompt_cache_breakpoint`` markers a request; ``prompt_cache_options.ttl`` 30m by default, 12h per
    breakpoint."""
    return CachingRules("automatic", 1024, 1, None, None, None, None, _OPENAI_56.format(name=name), _READ_NOW,
                        ttl="30m", max_breakpoints=4, long_ttl="12h", cache_key=True, assumed=_OPENAI_56_ASSUMED)


def _anthropic(min_prefix: int, *, date: str = _READ, assumed: str = "") -> CachingRules:
    return CachingRules("explicit", min_prefix, 1, None, None, None, None, _ANTHROPIC, date, ttl="5m",
                        max_breakpoints=4, long_ttl="1h", assumed=assumed)


_NEW_MIN = ("the minimum cacheable prefix is not in the pages read: {0:,} tokens assumed (as the model it succeeds); "
            "automatic caching (a top-level cache_control) marks the last cacheable block")


def _claude(min_prefix: int) -> CachingRules:
    """A Claude model of 2026, as https://platform.claude.com/docs/en/about-claude/pricing lists it."""
    return _anthropic(min_prefix, date=_READ_NOW, assumed=_NEW_MIN.format(min_prefix))


def _gemini(min_prefix: int, assumed: str = "") -> CachingRules:
    return CachingRules("automatic", min_prefix, 1, None, None, None, None, _GEMINI, _READ,
                        ttl="implicit, not published", assumed=_GEMINI_ASSUMED + assumed)


def _gemini_3x(min_prefix: int, input_price: float | None = None, cached: float | None = None,
               output: float | None = None) -> CachingRules:
    """Gemini 3 and later; the prices of the models genai-prices does not list, from the pricing page as quoted by
    third parties (the page itself not read)."""
    quoted = "; prices from the pricing page as quoted by third parties (the page not read)" if input_price else ""
    return CachingRules("automatic", min_prefix, 1, input_price, cached, input_price, output, _GEMINI, _READ_NOW,
                        ttl=_GEMINI_TTL, assumed=_GEMINI_ASSUMED + f"; minimum prefix not listed: {min_prefix:,} "
                        "assumed" + quoted)


def _deepseek(input_price: float | None = None, cached: float | None = None, output: float | None = None,
              assumed: str = "", date: str = _READ) -> CachingRules:
    return CachingRules("automatic", 64, 64, input_price, cached, input_price, output, _DEEPSEEK, date,
                        ttl=_DEEPSEEK_TTL, assumed="caching in 64-token units" + assumed)


_V32 = "; deepseek-chat and deepseek-reasoner serve DeepSeek-V3.2 since 2025-09-29: its prices (genai-prices has none)"
# Gemini's explicit context caching (a cachedContents resource created ahead of the requests, billed per token-hour
# of storage besides the cached reads) is not something a plan sends: a session relies on implicit hits.
_GEMINI_TTL = ("implicit, not published; explicit cachedContents (created ahead, storage billed per token-hour) are "
               "not used by plans")

BUILTIN_CACHING: dict[str, CachingRules] = {
    **dict.fromkeys(("gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-5", "gpt-5-mini",
                     "gpt-5-nano", "gpt-5.1", "o1", "o1-mini", "o3", "o3-mini", "o4-mini"), _openai()),
    **dict.fromkeys(("gpt-5.2", "gpt-5.4", "gpt-5.4-mini", "gpt-5.4-nano", "gpt-5.5"), _openai_5x()),
    **{name: _openai_56(name) for name in ("gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna")},
    "claude-3-haiku": _anthropic(2048),
    "claude-3-5-haiku": _anthropic(2048),
    **dict.fromkeys(("claude-3-opus", "claude-3-5-sonnet", "claude-3-7-sonnet", "claude-sonnet-4",
                     "claude-sonnet-4-5", "claude-opus-4", "claude-opus-4-1"), _anthropic(1024)),
    **dict.fromkeys(("claude-haiku-4-5", "claude-opus-4-5"), _anthropic(4096)),
    **{name: _claude(4096) for name in ("claude-opus-4-6", "claude-opus-4-7", "claude-opus-4-8", "claude-opus-5",
                                        "claude-opus-5-5", "claude-haiku-5-5", "claude-fable-5", "claude-fable-5-1")},
    **{name: _claude(1024) for name in ("claude-sonnet-4-6", "claude-sonnet-5", "claude-sonnet-5-5")},
    "gemini-2.5-pro": _gemini(2048),
    "gemini-2.5-flash": _gemini(2048),
    "gemini-2.5-flash-lite": _gemini(2048, "; its minimum prefix is not listed: 2.5 Flash's"),
    "gemini-3-pro": _gemini_3x(4096, 2.00, 0.20, 12.00),
    "gemini-3-flash": _gemini_3x(1024, 0.50, 0.05, 3.00),
    "gemini-3.1-pro": _gemini_3x(4096, 2.00, 0.20, 12.00),
    "gemini-3.5-flash": _gemini_3x(1024),
    "deepseek-v3": _deepseek(0.28, 0.028, 0.42, _V32),
    "deepseek-r1": _deepseek(),
    "deepseek-v3.1": _deepseek(0.28, 0.028, 0.42, _V32 + " (V3.1 is served as V3.2)"),
    "deepseek-v3.2": _deepseek(cached=0.028, assumed="; the cache-read price DeepSeek lists for V3.2 (genai-prices "
                                                      "lists none)"),
    **dict.fromkeys(("deepseek-v4-flash", "deepseek-v4-pro"), _deepseek(date=_READ_NOW)),
}

# The rules a model ctxwin's table does not list is assumed to follow, by maker: its newest generation's (a Claude
# model's minimum prefix is the larger of Claude's, so a cache read is never promised too early).
NEWEST: dict[str, CachingRules] = {
    "openai": _openai_56("gpt-5.6-sol"),
    "anthropic": _claude(4096),
    "google": _gemini_3x(4096),
    "deepseek": _deepseek(date=_READ_NOW),
}
