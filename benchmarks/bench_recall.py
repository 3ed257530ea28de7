"""Recall (docs/recall.md) on a 100,000-token history of the bench corpus (the agent kind: tool outputs, code, CJK
snippets; about 100,000 o200k tokens from its start):

- ``index build (cold)``: ``RecallStore().add(history)``, every message into a fresh in-memory store (what a
  session pays once per message, over its cuts);
- ``query (warm)``: ``store.search(question)`` on that store, a question about something said once early on;
- ``fit``: the history and the question fitted cold into 8,000 tokens by the default chain, with recall
  (``recall_share`` 0.1, the default) and without (0): the one-off plan's own index of what it left out included;
- ``fit, nothing dropped``: the same into 200,000 tokens, where nothing is left out (recall's cost is one check);
- ``bm25s``: the engine the issue named beside FTS5, on the same excerpts (``message_excerpts``): its index build
  (tokenizing included) and a warm query (when ``bm25s`` is installed: the ``bench`` extra).

Run: ``pytest benchmarks/bench_recall.py --benchmark-only``. ``python benchmarks/bench_recall.py`` compares the two
engines' retrieval on the dense bench's late questions (``dense.py``, held-out sources): whether the excerpt holding
the answer ranks in the first 3 (recall brings back a few excerpts) and the median query time.
"""

from __future__ import annotations

import functools
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from side_by_side import ours

from ctxwin.counters._families.tiktoken_counter import TiktokenCounter
from ctxwin.messages import BaseMessage, HumanMessage
from ctxwin.planner import Planner
from ctxwin.recall import Excerpt, RecallStore
from ctxwin.recall._store import message_excerpts

TOKENS = 100_000
FACT = "For the record: the Lyon warehouse lease reference is LY-2231-X."
QUESTION = "Going back to the Lyon warehouse lease: what was its reference number?"


@functools.cache
def history() -> list[BaseMessage]:
    """The agent conversation's first 100,000 tokens, with one fact said in its second message."""
    counter = TiktokenCounter("o200k_base")
    out: list[BaseMessage] = []
    total = 0
    for message in ours("agent", 2_000):
        total += counter.count_message(message)
        if total > TOKENS:
            break
        out.append(message)
    out.insert(2, HumanMessage(FACT))
    return out


def test_index_build(benchmark: Any) -> None:
    benchmark.group = "recall-100k"
    messages = history()
    store = benchmark.pedantic(lambda: _built(messages), rounds=5, iterations=1, warmup_rounds=1)
    benchmark.extra_info.update(messages=len(messages), stored=len(store))


def _built(messages: list[BaseMessage]) -> RecallStore:
    store = RecallStore()
    store.add(messages)
    return store


def test_query_warm(benchmark: Any) -> None:
    benchmark.group = "recall-100k"
    store = _built(history())
    found = benchmark(store.search, QUESTION, min_score=0.5)
    assert "LY-2231-X" in found[0].text


def _fresh() -> tuple[tuple[Any, ...], dict[str, Any]]:
    return (TiktokenCounter("o200k_base"),), {}


@pytest.mark.parametrize("budget", [8_000, 200_000], ids=["8k", "nothing dropped"])
@pytest.mark.parametrize("share", [0.1, 0.0], ids=["recall", "no recall"])
def test_fit(benchmark: Any, budget: int, share: float) -> None:
    benchmark.group = f"recall-100k-fit-{budget}"
    messages = [*history(), HumanMessage(QUESTION)]

    def plan(counter: TiktokenCounter) -> Any:
        return Planner(counter=counter, context_window=budget, reserve_output=0, recall_share=share).plan(messages)

    result = benchmark.pedantic(plan, setup=_fresh, rounds=5, iterations=1, warmup_rounds=1)
    assert result.fits
    if share and budget == 8_000:
        assert any("LY-2231-X" in str(m.text) for m in result.messages)
    benchmark.extra_info.update(recalled=result.recalled.labels if result.recalled else [])


needs_bm25s = pytest.mark.skipif(importlib.util.find_spec("bm25s") is None, reason="bm25s (the bench extra)")


def _excerpts(messages: list[BaseMessage]) -> list[Excerpt]:
    return [e for i, m in enumerate(messages) for e in message_excerpts(m, i)]


def _bm25s_index(texts: list[str]) -> Any:
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    return retriever


def _bm25s_search(retriever: Any, query: str, k: int) -> list[int]:
    import bm25s

    tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
    if not tokens.vocab:
        return []
    found, scores = retriever.retrieve(tokens, k=k, show_progress=False)
    return [int(i) for i, score in zip(found[0], scores[0], strict=True) if score > 0]


@needs_bm25s
def test_bm25s_index_build(benchmark: Any) -> None:
    benchmark.group = "recall-100k"
    texts = [e.text for e in _excerpts(history())]
    benchmark.pedantic(lambda: _bm25s_index(texts), rounds=5, iterations=1, warmup_rounds=1)
    benchmark.extra_info.update(excerpts=len(texts))


@needs_bm25s
def test_bm25s_query_warm(benchmark: Any) -> None:
    benchmark.group = "recall-100k"
    excerpts = _excerpts(history())
    retriever = _bm25s_index([e.text for e in excerpts])
    found = benchmark(_bm25s_search, retriever, QUESTION, 8)
    assert "LY-2231-X" in excerpts[found[0]].text


def compare(seeds: range = range(6, 8), top: int = 3) -> None:
    """FTS5 (``RecallStore.search``, ranked by relevance, no threshold) against bm25s on the dense bench's late
    questions over held-out sources: each conversation's messages as excerpts, one index per conversation."""
    from dense import HELDOUT, available_sources, dense

    from ctxwin.messages import convert_to_messages

    rows: dict[str, list[bool]] = {"fts5": [], "bm25s": []}
    times: dict[str, list[float]] = {"fts5": [], "bm25s": []}
    for source in available_sources(HELDOUT):
        for kind, tokens in (("chat", 25_000), ("agent", 57_000)):
            for seed in seeds:
                conversation = dense(source, kind, tokens, seed)
                messages = convert_to_messages(conversation.messages)
                excerpts = _excerpts(messages)
                store = RecallStore()
                store.add_excerpts(excerpts)
                retriever = _bm25s_index([e.text for e in excerpts])
                for question in conversation.questions:
                    if not question["needs"]:
                        continue
                    value = question["needs"][0]
                    started = time.perf_counter()
                    found = store.search(question["question"], limit=top)
                    times["fts5"].append(time.perf_counter() - started)
                    rows["fts5"].append(any(value in e.text for e in found))
                    started = time.perf_counter()
                    ranked = _bm25s_search(retriever, question["question"], top)
                    times["bm25s"].append(time.perf_counter() - started)
                    rows["bm25s"].append(any(value in excerpts[i].text for i in ranked))
    for engine, hits in rows.items():
        print(f"{engine:<6} answer in the first {top}: {sum(hits)}/{len(hits)} ({sum(hits) / len(hits):.0%}), "
              f"median query {statistics.median(times[engine]) * 1000:.2f} ms")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    compare()
