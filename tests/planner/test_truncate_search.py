"""The searches that cut tool outputs and summaries to a token limit: always within it, and as long as possible."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters._families.tiktoken_counter import TiktokenCounter
from ctxwin.messages import ToolMessage
from ctxwin.strategies._fitting import longest_fitting
from ctxwin.strategies._meter import Meter
from ctxwin.strategies._truncate import MARKER, content_tokens, head_and_tail, heads_and_tails

COUNTER = TiktokenCounter("o200k_base")
LINE = st.text(st.sampled_from(list("abc xyz 数据模型 {}[]:,\"\n0123456789é")), min_size=1, max_size=80)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=3000), st.integers(0, 4000), st.integers(1, 5000))
def test_longest_fitting_finds_the_largest_fitting_length_of_a_growing_count(
    steps: list[int], limit: int, guess: int
) -> None:
    totals = [0]
    for step in steps:
        totals.append(totals[-1] + step)  # a count that never shrinks as the piece grows
    probes: list[int] = []

    def count(k: int) -> int:
        probes.append(k)
        return totals[k]

    k, tokens = longest_fitting(len(steps), guess, count, limit)
    assert tokens == totals[k] <= limit
    assert k == len(steps) or totals[k + 1] > limit
    assert len(probes) <= 2 * math.log2(len(steps) + 2) + 8
    slack = limit // 10
    k, tokens = longest_fitting(len(steps), guess, count, limit, slack)
    assert tokens == totals[k] <= limit
    assert k == len(steps) or totals[k + 1] > limit or tokens >= limit - slack


@settings(max_examples=60, deadline=None)
@given(st.lists(LINE, min_size=1, max_size=400), st.integers(1, 300))
def test_longest_fitting_on_real_text_never_exceeds_the_limit(lines: list[str], limit: int) -> None:
    text = "\n".join(lines)
    k, tokens = longest_fitting(len(text), limit * 2, lambda n: COUNTER.count_text(text[:n]), limit)
    assert tokens == COUNTER.count_text(text[:k]) <= limit


@settings(max_examples=40, deadline=None)
@given(st.lists(LINE, min_size=20, max_size=400), st.integers(5, 200))
def test_head_and_tail_stays_within_the_limit_and_reports_the_cut(lines: list[str], limit: int) -> None:
    text = "\n".join(lines)
    meter = Meter(COUNTER)
    total = content_tokens(meter, ToolMessage(text, tool_call_id="c"))
    assert total == COUNTER.count_text(text)  # the content's tokens, from the cached message counts
    short, cut = head_and_tail(text, total, limit, meter)
    if total <= limit:
        assert (short, cut) == (text, 0)
        return
    head, tail = short.split(MARKER.format(cut=cut))
    assert text.startswith(head) and text.endswith(tail)
    assert COUNTER.count_text(head) + COUNTER.count_text(tail) <= limit
    assert cut == total - COUNTER.count_text(head) - COUNTER.count_text(tail)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(LINE, min_size=1, max_size=200), min_size=1, max_size=6), st.integers(5, 200))
def test_cutting_many_outputs_together_cuts_each_as_alone(outputs: list[list[str]], limit: int) -> None:
    texts = ["\n".join(lines) for lines in outputs]
    meter = Meter(COUNTER)
    items = [(text, COUNTER.count_text(text)) for text in texts]
    assert heads_and_tails(items, limit, meter) == [head_and_tail(text, total, limit, meter) for text, total in items]
