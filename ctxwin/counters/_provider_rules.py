"""One rule per maker for the models genai-prices knows and ctxwin's own table does not: the counter, tokenizer
generation, output limit and caching rules assumed, and the genai-prices provider ctxwin's own models take figures from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ctxwin.counters._builtin_caching import NEWEST
from ctxwin.counters._caching import CachingRules

SAFE = "approximate:safe"
# What the safe count is worth for a provider whose tokenizer is not public. Safe mode is an upper bound on o200k
# and cl100k counts, with the over-count docs/approximate.md measures (about a quarter over o200k at the median);
# how the provider's own counts compare has not been measured (no offline tokenizer to measure with).
_UNMEASURED = ("no public tokenizer: approximate:safe is an upper bound on o200k and cl100k counts (median +~27% "
               "over o200k, docs/approximate.md), not on {provider}'s (its ratio to o200k: not measurable offline, "
               "not published)")
CLAUDE_NOTE = _UNMEASURED.format(provider="Claude") + "; exact, online: anthropic-api:<model>"
GEMINI_NOTE = _UNMEASURED.format(provider="Gemini") + "; exact, online: gemini-api:<model>"
_ESTIMATE = ("not in ctxwin's table: counted with {tokenizer}, {why}, reported as an estimate with the approximate "
             "counter's margin (its 95th-percentile error, ~10%)")
_UNLISTED = "not in ctxwin's table ({maker}): "
_ASSUMED_RULES = ("{maker}'s prompt caching is not in ctxwin's table: automatic caching from 1,024 tokens assumed, a "
                  "cache read billed as genai-prices lists it (as plain input where it lists none)")


@dataclass(frozen=True)
class Maker:
    """A maker's models: ``pattern`` matches their names (else ``providers``, genai-prices' ids for the maker, match
    the provider a name was found under); ``counter``, ``tokenizer`` and ``note`` for one ctxwin's table lacks;
    ``max_output`` the output limit assumed (genai-prices has none; the smallest of the maker's current models, so the
    reply limit a plan writes is one the provider takes); ``caching``: the caching rules assumed; ``provider``: where
    ctxwin's own models of this maker take their window and prices (None: they keep ctxwin's)."""

    name: str
    pattern: re.Pattern[str]
    providers: tuple[str, ...]
    counter: str
    note: str
    max_output: int
    caching: CachingRules
    tokenizer: str = ""

    @property
    def provider(self) -> str | None:
        return self.providers[0] if self.providers else None


def _rules(maker: str) -> CachingRules:
    return CachingRules("automatic", 1024, 1, None, None, None, None, "genai-prices (prices); ctxwin assumes the rest",
                        "2026-12-07", ttl="not published", assumed=_ASSUMED_RULES.format(maker=maker))


MAKERS: tuple[Maker, ...] = (
    Maker("gpt-oss", re.compile(r"^gpt-oss"), (), "estimate:harmony",
          _ESTIMATE.format(tokenizer="o200k_harmony and harmony framing", why="gpt-oss's own"), 32_768,
          _rules("gpt-oss")),
    Maker("OpenAI", re.compile(r"^(?:gpt-|o\d|chatgpt-|codex-|computer-use)"), ("openai", "azure"),
          "estimate:tiktoken:o200k_base",
          _ESTIMATE.format(tokenizer="o200k_base", why="the encoding of every OpenAI model since GPT-4o"), 128_000,
          NEWEST["openai"]),
    Maker("Anthropic", re.compile(r"^claude"), ("anthropic",), f"{SAFE},images=anthropic",
          _UNLISTED.format(maker="Anthropic") + CLAUDE_NOTE + "; tokenizer generation assumed: the newest (claude-5)",
          64_000, NEWEST["anthropic"], tokenizer="claude-5"),
    Maker("Google", re.compile(r"^(?:gemini|gemma)"), ("google",), f"{SAFE},images=gemini",
          _UNLISTED.format(maker="Google") + GEMINI_NOTE, 65_536, NEWEST["google"]),
    Maker("Mistral", re.compile(r"^(?:labs-)?(?:(?:mi|code|dev|magi|mini)stral|mixtral|pixtral|voxtral|open-m)"),
          ("mistral",), SAFE, _UNLISTED.format(maker="Mistral") + _UNMEASURED.format(provider="this model"), 8_192,
          _rules("Mistral")),
    Maker("Zhipu", re.compile(r"^(?:glm|chatglm|codegeex)"), ("zhipuai", "zai"), SAFE,
          _UNLISTED.format(maker="Zhipu") + _UNMEASURED.format(provider="GLM"), 32_768, _rules("Zhipu")),
    Maker("Moonshot", re.compile(r"^(?:kimi|moonshot)"), ("moonshotai",), SAFE,
          _UNLISTED.format(maker="Moonshot") + _UNMEASURED.format(provider="Kimi"), 32_768, _rules("Moonshot")),
    Maker("DeepSeek", re.compile(r"^deepseek"), ("deepseek",), "estimate:deepseek:v4",
          _ESTIMATE.format(tokenizer="DeepSeek-V4's tokenizer", why="DeepSeek's newest shipped"), 32_768,
          NEWEST["deepseek"]),
    Maker("Qwen", re.compile(r"^(?:qwen|qwq)"), (), "estimate:qwen:3.5",
          _ESTIMATE.format(tokenizer="Qwen 3.5's tokenizer", why="Qwen's newest shipped"), 32_768, _rules("Qwen")),
    Maker("Llama", re.compile(r"^(?:llama|meta-llama)"), (), "estimate:llama:4",
          _ESTIMATE.format(tokenizer="Llama 4's tokenizer", why="Llama's newest shipped"), 8_192, _rules("Llama")),
)
OTHER = Maker("other", re.compile(r"$^"), (), SAFE, "not in ctxwin's table, and no tokenizer known for its maker: " +
              _UNMEASURED.format(provider="its provider"), 8_192, _rules("Its maker"))


def maker_of(name: str, provider: str | None = None) -> Maker:
    """The maker of the model ``name`` (genai-prices' id or a user's name without prefixes), else of ``provider``
    (the genai-prices provider it was found under), else ``OTHER``."""
    lowered = name.lower().rsplit("/", 1)[-1]
    for maker in MAKERS:
        if maker.pattern.match(lowered):
            return maker
    return next((maker for maker in MAKERS if provider in maker.providers), OTHER)
