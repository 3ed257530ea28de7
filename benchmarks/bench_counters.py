"""Counter throughput: batch counting against a plain loop, by text kind, and whole conversations side by side.

- ``test_count_texts_throughput``: the exact counters' batch counting (``TiktokenCounter.count_texts``, threaded;
  ``HFCounter``'s ``encode_batch``) against a plain ``count_text`` loop, on chat-sized pieces (300 characters) of
  the standard library's source and Python's reference documentation (``pydoc_data.topics``), about 1.5 MB.
  Every variant is checked to give the loop's counts first.
- ``test_text_kind_throughput``: o200k (``count_texts``), ``approximate``, ``approximate:safe`` and chars/4
  (langchain_core's estimate) on each text kind of the approximate counter's held-out corpus (``corpus.py``).
- ``test_engine_cold``: each text of a third of the differential corpus (``corpus_more.evaluation_docs()``, every
  third document: prose, code, JSON, logs, UI and CLDR text in 30 scripts) counted once, cold, in one run: ctxwin's
  counter (``count_text`` in a loop, ``count_texts``; with its chosen engine and with ``engine="reference"``)
  against the engine it wraps called directly (tokenizers' ``encode`` / ``encode_batch``, tiktoken's
  ``encode_ordinary`` / ``encode_ordinary_batch``) and the faster engines (kitoken, tokie's ``count_tokens``).
  Every row's counts are checked against the reference's; tokie's are not equal on DeepSeek (engines.json), so its
  row reports how many differ instead of failing.
- ``test_count_conversation``: counting a 1,000-message bench conversation of each kind (``conversations.py``):
  ctxwin's ``count_messages`` against langchain_core's equivalent (``count_tokens_approximately``, or the o200k
  per-message callable summed, which is what its ``trim_messages`` does with it).

``pytest benchmarks/bench_counters.py --benchmark-only`` times them with pytest-benchmark (the last two need the
``corpus`` and ``bench`` extras); ``python benchmarks/bench_counters.py`` prints MB/s (best of five) and the
speed-up over the loop for the first.
"""

from __future__ import annotations

import math
import sys
import sysconfig
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from pydoc_data.topics import topics

import pytest
from conversations import KINDS
from corpus import TARGET_KINDS, build
from langchain_core.messages.utils import count_tokens_approximately
from pytest_benchmark.fixture import BenchmarkFixture
from side_by_side import o200k_callable, ours, theirs

from ctxwin.counters import get_counter
from ctxwin.counters._approximate.counter import ApproximateCounter
from ctxwin.counters._base import BaseTokenCounter
from ctxwin.counters._families.deepseek import DeepSeekV4Counter
from ctxwin.counters._families.hf_counter import HFCounter
from ctxwin.counters._families.tiktoken_counter import TiktokenCounter

PIECE = 300


def corpus(limit: int = 1_500_000) -> list[str]:
    files = sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))
    text = "".join(topics.values()) + "".join(f.read_text(encoding="utf-8", errors="replace") for f in files)
    text = text[:limit]
    return [text[i:i + PIECE] for i in range(0, len(text), PIECE)]


def plain_loop(counter: BaseTokenCounter) -> Callable[[Sequence[str]], list[int]]:
    return lambda texts: [counter.count_text(t) for t in texts]


def variants() -> dict[str, Callable[[Sequence[str]], list[int]]]:
    o200k = TiktokenCounter("o200k_base")
    deepseek = HFCounter("deepseek-v3")
    return {
        "tiktoken o200k loop": plain_loop(o200k),
        "tiktoken o200k count_texts": o200k.count_texts,
        "hf deepseek-v3 loop": plain_loop(deepseek),
        "hf deepseek-v3 count_texts": deepseek.count_texts,
    }


TEXTS = corpus()
VARIANTS = variants()


@pytest.mark.parametrize("name", list(VARIANTS))
def test_count_texts_throughput(benchmark: BenchmarkFixture, name: str) -> None:
    count = VARIANTS[name]
    reference = VARIANTS[name.replace("count_texts", "loop")](TEXTS)
    result = benchmark(count, TEXTS)
    assert result == reference
    benchmark.extra_info["MB"] = sum(len(t.encode()) for t in TEXTS) / 1e6


def engine_corpus() -> list[str]:
    from corpus_more import evaluation_docs

    return [doc.text for doc in evaluation_docs()[::3]]


def _hf_rows(auto: HFCounter, reference: HFCounter, data: bytes) -> dict[str, Callable[[list[str]], list[int]]]:
    from engine_differential import hf_engines

    tokenizer = reference.tokenizer
    rows: dict[str, Callable[[list[str]], list[int]]] = {
        f"ctxwin count_text ({auto.engine.engine})": plain_loop(auto),
        f"ctxwin count_texts ({auto.engine.engine})": auto.count_texts,
        "ctxwin count_text (reference)": plain_loop(reference),
        "ctxwin count_texts (reference)": reference.count_texts,
        "tokenizers encode": lambda texts: [len(tokenizer.encode(t, add_special_tokens=False)) for t in texts],
        "tokenizers encode_batch": lambda texts: [len(e) for e in tokenizer.encode_batch(texts,
                                                                                         add_special_tokens=False)],
    }
    for name, ids in hf_engines(data).items():
        rows[f"{name} encode"] = lambda texts, ids=ids: [len(ids(t)) for t in texts]
    if "tokie encode" in rows:
        import tempfile

        import tokie

        with tempfile.NamedTemporaryFile(suffix=".json") as file:
            file.write(data)
            file.flush()
            fast = tokie.Tokenizer.from_json(file.name)
        rows["tokie count_tokens"] = lambda texts: [fast.count_tokens(t) for t in texts]
        rows["tokie count_tokens_batch"] = fast.count_tokens_batch
    return rows


def _tiktoken_rows(name: str) -> dict[str, Callable[[list[str]], list[int]]]:
    from engine_differential import tiktoken_engines

    counter = TiktokenCounter(name)
    encoding = counter.encoding
    rows: dict[str, Callable[[list[str]], list[int]]] = {
        "ctxwin count_text (tiktoken)": plain_loop(counter),
        "ctxwin count_texts (tiktoken)": counter.count_texts,
        "tiktoken encode_ordinary": lambda texts: [len(encoding.encode_ordinary(t)) for t in texts],
        "tiktoken encode_ordinary_batch": lambda texts: [len(ids) for ids in encoding.encode_ordinary_batch(texts)],
    }
    for engine, ids in tiktoken_engines(encoding).items():
        rows[f"{engine} encode"] = lambda texts, ids=ids: [len(ids(t)) for t in texts]
    return rows


def engine_rows() -> dict[str, dict[str, Callable[[list[str]], list[int]]]]:
    from ctxwin.counters._families.hf_sources import deepseek_v3_tokenizer, deepseek_v4_json

    v4 = deepseek_v4_json()[0].encode()
    return {
        "deepseek-v3": _hf_rows(HFCounter("deepseek-v3"), HFCounter("deepseek-v3", engine="reference"),
                                deepseek_v3_tokenizer().read_bytes()),
        "deepseek-v4": _hf_rows(DeepSeekV4Counter(), DeepSeekV4Counter(engine="reference"), v4),
        "o200k_base": _tiktoken_rows("o200k_base"),
        "cl100k_base": _tiktoken_rows("cl100k_base"),
    }


ENGINE_TEXTS = engine_corpus()
ENGINE_ROWS = engine_rows()
_REFERENCE_ROW = {"deepseek-v3": "tokenizers encode", "deepseek-v4": "tokenizers encode",
                  "o200k_base": "tiktoken encode_ordinary", "cl100k_base": "tiktoken encode_ordinary"}
_EXPECTED: dict[str, list[int]] = {}


@pytest.mark.parametrize(("family", "row"), [(f, r) for f, rows in ENGINE_ROWS.items() for r in rows])
def test_engine_cold(benchmark: BenchmarkFixture, family: str, row: str) -> None:
    benchmark.group = f"engine-{family}"
    texts = ENGINE_TEXTS
    if family not in _EXPECTED:
        _EXPECTED[family] = ENGINE_ROWS[family][_REFERENCE_ROW[family]](texts)
    counts = benchmark.pedantic(ENGINE_ROWS[family][row], args=(texts,), rounds=3, iterations=1)
    differing = sum(a != b for a, b in zip(counts, _EXPECTED[family], strict=True))
    benchmark.extra_info.update(documents=len(texts), differing=differing,
                                MB=sum(len(t.encode("utf-8", "replace")) for t in texts) / 1e6)
    if not row.startswith("tokie"):
        assert differing == 0, f"{row} differs from {_REFERENCE_ROW[family]} on {differing} documents"


def chars_over_4(texts: Sequence[str]) -> list[int]:
    """langchain_core's estimate: a quarter of the characters, rounded up."""
    return [-(-len(t) // 4) for t in texts]


TEXT_COUNTERS: dict[str, Callable[[Sequence[str]], list[int]]] = {
    "o200k": TiktokenCounter("o200k_base").count_texts,
    "approximate": ApproximateCounter().count_texts,
    "approximate:safe": ApproximateCounter(safe=True).count_texts,
    "chars/4": chars_over_4,
}


@pytest.mark.parametrize("counter", list(TEXT_COUNTERS))
@pytest.mark.parametrize("kind", TARGET_KINDS)
def test_text_kind_throughput(benchmark: BenchmarkFixture, kind: str, counter: str) -> None:
    benchmark.group = f"text-{kind}"
    texts = [d.text for d in build("heldout") if d.kind == kind]
    benchmark(TEXT_COUNTERS[counter], texts)
    benchmark.extra_info["bytes"] = sum(len(t.encode()) for t in texts)


CONVERSATION_SIZE = 1_000


@pytest.mark.parametrize("counter", ["approximate", "o200k"])
@pytest.mark.parametrize("library", ["ctxwin", "langchain"])
@pytest.mark.parametrize("kind", KINDS)
def test_count_conversation(benchmark: BenchmarkFixture, kind: str, library: str, counter: str) -> None:
    benchmark.group = f"count-{kind}-{CONVERSATION_SIZE}"
    if library == "ctxwin":
        messages = ours(kind, CONVERSATION_SIZE)
        count = get_counter("approximate" if counter == "approximate" else "tiktoken:o200k_base").count_messages
        benchmark(count, messages)
    else:
        messages = theirs(kind, CONVERSATION_SIZE)
        if counter == "approximate":
            benchmark(count_tokens_approximately, messages)
        else:
            benchmark(lambda: sum(map(o200k_callable, messages)))
    benchmark.extra_info["bytes"] = sum(len(str(m.content).encode()) for m in messages)


def main() -> None:
    n_bytes = sum(len(t.encode()) for t in TEXTS)
    print(f"{len(TEXTS)} texts, {n_bytes / 1e6:.2f} MB")
    speeds: dict[str, float] = {}
    for name, count in VARIANTS.items():
        assert count(TEXTS) == VARIANTS[name.replace("count_texts", "loop")](TEXTS), name
        best = math.inf
        for _ in range(5):
            start = time.perf_counter()
            count(TEXTS)
            best = min(best, time.perf_counter() - start)
        speeds[name] = n_bytes / best / 1e6
        loop = speeds.get(name.replace("count_texts", "loop"), speeds[name])
        print(f"{name:<30} {speeds[name]:7.2f} MB/s  x{speeds[name] / loop:.2f} vs loop")


if __name__ == "__main__":
    sys.exit(main())
