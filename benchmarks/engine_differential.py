"""The differential run behind ``ctxwin/counters/_families/data/engines.json``: faster tokenizer engines against the
reference engine, token id for token id, on every document of the corpora and on adversarial text.

For each tokenizer ctxwin ships (DeepSeek-V3, DeepSeek-V4: ``tokenizers`` is the reference; o200k_base and
cl100k_base: tiktoken is) and each faster engine installed (kitoken, tokie), it compares the ids of

- every document of ``corpus_more.evaluation_docs()`` (the approximate counter's corpora: prose, code, JSON, logs,
  CLDR and UI text in about a hundred languages and 30 scripts, random characters of every script), and
- ``adversarial_texts``: empty text, long runs of one character (spaces, newlines, tabs, digits, letters, CJK,
  emoji, ideographic spaces) at lengths around the engines' chunk sizes, whitespace before a newline or a digit,
  every added or special token of the tokenizer written in text (alone, joined, between letters), text whose lone
  surrogates the counters replace (``scalar_text``), and one input of several megabytes;

and times each engine against the reference on the documents, each counted once (cold), in the same run.
A tokenizer's engine is used by ctxwin only where no text differs and the engine was faster (``fast_engines``).

``python benchmarks/engine_differential.py`` prints the table; ``--write`` also rewrites engines.json (the result
for each engine version seen in this run replaces that version's entry; others are kept).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.metadata
import json
import sys
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import tiktoken
import tokenizers
from corpus_more import evaluation_docs

from ctxwin.counters._base import scalar_text
from ctxwin.counters._families.hf_sources import deepseek_v3_tokenizer, deepseek_v4_json
from ctxwin.counters._families.tiktoken_encodings import load_encoding

RECORD = Path(__file__).parents[1] / "ctxwin" / "counters" / "_families" / "data" / "engines.json"
RUN_CHARACTERS = (" ", "\n", "\t", "\r\n", " \n", "a", "Z", "1", "0", ".", "-", "=", "中", "한", "😀", "\u3000", "é")
RUN_LENGTHS = (1, 2, 3, 4, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 4096, 100_000)
Ids = Callable[[str], Sequence[int]]


def adversarial_texts(added_tokens: Sequence[str], corpus: Sequence[str]) -> list[str]:
    """The texts the differential adds to the corpus (see the module docstring); surrogates already replaced."""
    texts = ["", " ", "\n", "a", "1"]
    texts += [character * length for character in RUN_CHARACTERS for length in RUN_LENGTHS]
    texts += [f"x{space * n}{tail}" for space in (" ", "\t", "\u3000", "\u00a0") for n in (1, 2, 3, 17)
              for tail in ("\n", "\n\n  y", "1", "②", "中", "!", "")]
    texts += ["1" * n + " " + "2" * n for n in range(1, 12)] + ["3.14159265358979", "1,234,567.89", "٣٤٥ ௫௬ ⅷ ②③"]
    texts += list(added_tokens)
    texts += ["".join(added_tokens), "x".join(added_tokens), " ".join(added_tokens), "\n".join(added_tokens)]
    texts += [f"hello{token}world {token} {token}{token}\n" for token in added_tokens[:64]]
    texts += ["<|endoftext|>", "<|im_start|>user\nhi<|im_end|>", "<|begin_of_text|><|eot_id|>"]
    texts += [scalar_text(text) for text in ("x\ud800y", "\udfff", "\ud83d\ude00 \ud83d", "a\udc80b" * 100)]
    texts.append("".join(corpus)[:4_000_000])
    return texts


def _tokenizer_jsons() -> dict[str, bytes]:
    return {"deepseek-v3": deepseek_v3_tokenizer().read_bytes(), "deepseek-v4": deepseek_v4_json()[0].encode()}


def _ranks_file(encoding: tiktoken.Encoding) -> bytes:
    return b"".join(base64.b64encode(token) + b" %d\n" % rank for token, rank in encoding._mergeable_ranks.items())


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def hf_engines(data: bytes, names: Collection[str] = ("kitoken", "tokie")) -> dict[str, Ids]:
    """The installed faster engines' id readers for a tokenizer.json (added tokens in text read as tokens), of the
    engines ``names`` (each takes a while to build)."""
    engines: dict[str, Ids] = {}
    if "kitoken" in names and _version("kitoken"):
        import kitoken

        k = kitoken.Kitoken.from_tokenizers(data)
        engines["kitoken"] = lambda text: k.encode(text, encode_specials=True)
    if "tokie" in names and _version("tokie"):
        import tempfile

        import tokie

        with tempfile.NamedTemporaryFile(suffix=".json") as file:  # tokie reads tokenizer.json from a path only
            file.write(data)
            file.flush()
            t = tokie.Tokenizer.from_json(file.name)
        engines["tokie"] = lambda text: t.encode(text, add_special_tokens=False).ids
    return engines


def tiktoken_engines(encoding: tiktoken.Encoding) -> dict[str, Ids]:
    """Faster engines reading tiktoken ranks with the encoding's own pattern (tokie reads no rank files)."""
    engines: dict[str, Ids] = {}
    if _version("kitoken"):
        import kitoken

        k = kitoken.Kitoken.from_tiktoken(_ranks_file(encoding))
        config = k.config()
        config["split"][0]["Pattern"]["pattern"]["Regex"] = encoding._pat_str
        k.set_config(config)
        engines["kitoken"] = lambda text: k.encode(text, encode_specials=False)
    return engines


def _seconds(ids: Ids, texts: Sequence[str]) -> float:
    start = time.perf_counter()
    for text in texts:
        ids(text)
    return time.perf_counter() - start


def compare(reference: Ids, engine: Ids, documents: Sequence[str], adversarial: Sequence[str]) -> dict[str, Any]:
    """How many texts of each set the engine reads differently, and its speed against the reference's (documents,
    each read once, the two interleaved so both see the same machine)."""
    differing = [i for i, text in enumerate(documents) if list(engine(text)) != list(reference(text))]
    bad = [i for i, text in enumerate(adversarial) if list(engine(text)) != list(reference(text))]
    half = len(documents) // 2
    ref_time = _seconds(reference, documents[:half]) + _seconds(reference, documents[half:])
    engine_time = _seconds(engine, documents[:half]) + _seconds(engine, documents[half:])
    return {"documents": len(documents), "differing": len(differing), "adversarial": len(adversarial),
            "adversarial_differing": len(bad), "speedup": round(ref_time / engine_time, 2),
            "first_differing_documents": differing[:5], "first_differing_adversarial": bad[:5]}


def run() -> dict[str, dict[str, Any]]:
    documents = [doc.text for doc in evaluation_docs()]
    results: dict[str, dict[str, Any]] = {}
    for family, data in _tokenizer_jsons().items():
        reference = tokenizers.Tokenizer.from_str(data.decode())
        added = [token["content"] for token in json.loads(data)["added_tokens"]]
        adversarial = adversarial_texts(added, documents)

        def ids(text: str, tokenizer: tokenizers.Tokenizer = reference) -> Sequence[int]:
            return tokenizer.encode(text, add_special_tokens=False).ids

        results[family] = {"sha256": hashlib.sha256(data).hexdigest(),
                           "reference": f"tokenizers {tokenizers.__version__}",
                           "engines": {name: {_version(name): compare(ids, engine, documents, adversarial)}
                                       for name, engine in hf_engines(data).items()}}
    for name in ("o200k_base", "cl100k_base"):
        encoding = load_encoding(name)
        adversarial = adversarial_texts(list(encoding.special_tokens_set), documents)
        results[f"tiktoken:{name}"] = {
            "sha256": hashlib.sha256(_ranks_file(encoding)).hexdigest(),
            "reference": f"tiktoken {tiktoken.__version__}",
            "engines": {engine: {_version(engine): compare(encoding.encode_ordinary, ids, documents, adversarial)}
                        for engine, ids in tiktoken_engines(encoding).items()}}
    return results


def merged(record: dict[str, Any], results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    families = record.setdefault("families", {})
    for family, result in results.items():
        entry = families.setdefault(family, {"engines": {}})
        entry["sha256"], entry["reference"] = result["sha256"], result["reference"]
        for engine, versions in result["engines"].items():
            entry["engines"].setdefault(engine, {}).update(versions)
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite ctxwin/counters/_families/data/engines.json")
    args = parser.parse_args()
    results = run()
    for family, result in results.items():
        for engine, versions in result["engines"].items():
            for version, verdict in versions.items():
                print(f"{family:<22} {engine} {version:<8} differing {verdict['differing']}/{verdict['documents']} "
                      f"documents, {verdict['adversarial_differing']}/{verdict['adversarial']} adversarial, "
                      f"{verdict['speedup']}x {result['reference']}")
    if args.write:
        record = merged(json.loads(RECORD.read_text(encoding="utf-8")), results)
        RECORD.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
