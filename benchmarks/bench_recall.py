"""Recall (docs/recall.md) on a 100,000-token history of the bench corpus (the agent kind: tool outputs, code, CJK
snippets; about 100,000 o200k tokens from its start):

- ``index build (cold)``: ``RecallStore().add(history)``, every message into a fresh in-memory store (what a
  session pays once per message, over its cuts);
- ``query (warm)``: ``store.search(question)`` on that store, a question about something said once early on;
- ``fit``: the history and the question fitted cold into 8,000 tokens by the default chain, with recall
  (``recall_share`` 0.1, the default) and without (0): the one-off plan's own index of what it left out included;
- ``fit, nothing dropped``: the same into 200,000 tokens, where nothing is left out (recall's cost is one check).

Run: ``pytest benchmarks/bench_recall.py --benchmark-only``.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from side_by_side import ours

from ctxwin.counters.families.tiktoken_counter import TiktokenCounter
from ctxwin.messages import BaseMessage, HumanMessage
from ctxwin.planner import Planner
from ctxwin.recall import RecallStore

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
