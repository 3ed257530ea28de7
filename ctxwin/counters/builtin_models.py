"""The models ctxwin knows out of the box (context windows and output limits as the providers publish them).

OpenAI models count exactly with tiktoken (images as each model is charged: ``,images=<pricing>``); DeepSeek-V3/R1
with DeepSeek's tokenizer and chat template; gpt-oss with o200k_harmony and harmony framing. Anthropic and Google
publish no offline tokenizer, so Claude and Gemini use the approximate counter in safe mode, with images charged
as Anthropic and Google charge them; their notes say what that count is worth (``CLAUDE_NOTE``, ``GEMINI_NOTE``).
Their exact counts are online and opt-in: ``anthropic-api:<model>``, ``gemini-api:<model>``.
"""

from __future__ import annotations

from ctxwin.counters.models import ModelSpec

O200K, CL100K, DEEPSEEK, SAFE = "tiktoken:o200k_base", "tiktoken:cl100k_base", "hf:deepseek-v3", "approximate:safe"
# What the safe count is worth for a provider whose tokenizer is not public. Safe mode is an upper bound on o200k
# counts, with the over-count docs/approximate.md measures (about a fifth at the median); how Claude's or Gemini's
# own counts compare has not been measured (no offline tokenizer to measure with), nor does either provider
# publish a ratio, so the margin over their counts is unknown.
_UNMEASURED = ("no public tokenizer: approximate:safe is an upper bound on o200k counts (median +~20%, "
               "docs/approximate.md), not on {provider}'s (its ratio to o200k: not measurable offline, not "
               "published); exact, online: {api}:<model>")
CLAUDE_NOTE = _UNMEASURED.format(provider="Claude", api="anthropic-api")
GEMINI_NOTE = _UNMEASURED.format(provider="Gemini", api="gemini-api")


def _openai() -> list[ModelSpec]:
    return [
        ModelSpec("gpt-4o", 128_000, 16_384, O200K, ("gpt-4o-2024-08-06", "gpt-4o-2024-11-20", "chatgpt-4o-latest")),
        ModelSpec("gpt-4o-2024-05-13", 128_000, 4_096, O200K),
        ModelSpec("gpt-4o-mini", 128_000, 16_384, f"{O200K},images=gpt-4o-mini", ("gpt-4o-mini-2024-07-18",)),
        ModelSpec("gpt-4.1", 1_047_576, 32_768, O200K, ("gpt-4.1-2025-04-14",)),
        ModelSpec("gpt-4.1-mini", 1_047_576, 32_768, f"{O200K},images=gpt-4.1-mini", ("gpt-4.1-mini-2025-04-14",)),
        ModelSpec("gpt-4.1-nano", 1_047_576, 32_768, f"{O200K},images=gpt-4.1-nano", ("gpt-4.1-nano-2025-04-14",)),
        ModelSpec("gpt-5", 400_000, 128_000, O200K, ("gpt-5-2025-08-07",)),
        ModelSpec("gpt-5-mini", 400_000, 128_000, O200K, ("gpt-5-mini-2025-08-07",)),
        ModelSpec("gpt-5-nano", 400_000, 128_000, O200K, ("gpt-5-nano-2025-08-07",)),
        ModelSpec("gpt-5.1", 400_000, 128_000, O200K, ("gpt-5.1-2025-11-13",)),
        ModelSpec("o1", 200_000, 100_000, f"{O200K},images=o1", ("o1-2024-12-17",)),
        ModelSpec("o1-mini", 128_000, 65_536, O200K, ("o1-mini-2024-09-12",)),
        ModelSpec("o1-preview", 128_000, 32_768, O200K, ("o1-preview-2024-09-12",)),
        ModelSpec("o3", 200_000, 100_000, f"{O200K},images=o1", ("o3-2025-04-16",)),
        ModelSpec("o3-mini", 200_000, 100_000, O200K, ("o3-mini-2025-01-31",)),
        ModelSpec("o4-mini", 200_000, 100_000, f"{O200K},images=o4-mini", ("o4-mini-2025-04-16",)),
        ModelSpec("gpt-4-turbo", 128_000, 4_096, CL100K,
                  ("gpt-4-turbo-2024-04-09", "gpt-4-turbo-preview", "gpt-4-0125-preview", "gpt-4-1106-preview")),
        ModelSpec("gpt-4", 8_192, 8_192, CL100K, ("gpt-4-0613", "gpt-4-0314")),
        ModelSpec("gpt-4-32k", 32_768, 32_768, CL100K, ("gpt-4-32k-0613",)),
        ModelSpec("gpt-3.5-turbo", 16_385, 4_096, CL100K, ("gpt-3.5-turbo-0125", "gpt-3.5-turbo-1106")),
        ModelSpec("gpt-3.5-turbo-16k", 16_385, 4_096, CL100K, ("gpt-3.5-turbo-16k-0613",)),
    ]


def _deepseek() -> list[ModelSpec]:
    return [
        ModelSpec("deepseek-v3", 128_000, 8_192, DEEPSEEK, ("deepseek-chat", "deepseek-v3-0324")),
        ModelSpec("deepseek-r1", 128_000, 32_768, DEEPSEEK, ("deepseek-reasoner", "deepseek-r1-0528"),
                  note="counted with DeepSeek-V3's tokenizer and chat template (R1 shares them)"),
    ]


def _gpt_oss() -> list[ModelSpec]:
    note = "o200k_harmony with harmony framing, as openai-harmony renders it"
    return [ModelSpec(name, 131_072, 131_072, "harmony", note=note)
            for name in ("gpt-oss-20b", "gpt-oss-120b")]


def _claude() -> list[ModelSpec]:
    families = [
        ("claude-3-haiku", 4_096, ("claude-3-haiku-20240307",)),
        ("claude-3-opus", 4_096, ("claude-3-opus-20240229",)),
        ("claude-3-5-haiku", 8_192, ("claude-3-5-haiku-20241022",)),
        ("claude-3-5-sonnet", 8_192, ("claude-3-5-sonnet-20240620", "claude-3-5-sonnet-20241022")),
        ("claude-3-7-sonnet", 64_000, ("claude-3-7-sonnet-20250219",)),
        ("claude-sonnet-4", 64_000, ("claude-sonnet-4-20250514", "claude-sonnet-4-0")),
        ("claude-opus-4", 32_000, ("claude-opus-4-20250514", "claude-opus-4-0")),
        ("claude-opus-4-1", 32_000, ("claude-opus-4-1-20250805",)),
        ("claude-sonnet-4-5", 64_000, ("claude-sonnet-4-5-20250929",)),
        ("claude-haiku-4-5", 64_000, ("claude-haiku-4-5-20251001",)),
        ("claude-opus-4-5", 64_000, ("claude-opus-4-5-20251101",)),
    ]
    return [ModelSpec(name, 200_000, out, f"{SAFE},images=anthropic", aliases, CLAUDE_NOTE)
            for name, out, aliases in families]


def _gemini() -> list[ModelSpec]:
    families = [
        ("gemini-1.5-flash", 1_048_576, 8_192),
        ("gemini-1.5-pro", 2_097_152, 8_192),
        ("gemini-2.0-flash", 1_048_576, 8_192),
        ("gemini-2.0-flash-lite", 1_048_576, 8_192),
        ("gemini-2.5-flash", 1_048_576, 65_536),
        ("gemini-2.5-flash-lite", 1_048_576, 65_536),
        ("gemini-2.5-pro", 1_048_576, 65_536),
        ("gemini-3-pro", 1_048_576, 65_536),
    ]
    return [ModelSpec(name, window, out, f"{SAFE},images=gemini", note=GEMINI_NOTE) for name, window, out in families]


BUILTIN_MODELS: tuple[ModelSpec, ...] = (*_openai(), *_gpt_oss(), *_deepseek(), *_claude(), *_gemini())
