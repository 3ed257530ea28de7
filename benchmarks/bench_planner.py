"""Planner cost against trimming alone, on a 10,000-message mixed conversation with the o200k tokenizer.

The issue's target: planning costs at most twice trimming. Both runs start cold (a fresh counter, so no cached
counts) and fit the same budget; the plan runs the default chain (filter, truncate_tool_output, trim).

    pytest benchmarks/bench_planner.py --benchmark-only
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from ctxwin.counters.tiktoken_counter import TiktokenCounter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import Planner
from ctxwin.trim import trim_messages

WORDS = [
    "the",
    "model",
    "reads",
    "context",
    "window",
    "tokens",
    "budget",
    "数据",
    "模型",
    "上下文",
    "窗口",
    '{"k":',
    "[1,",
    "2]}",
    "def",
    "f(x):",
    "return",
    "x",
]


def conversation(n: int, seed: int = 0) -> list[BaseMessage]:
    rng = random.Random(seed)
    out: list[BaseMessage] = [SystemMessage("You are a careful assistant.")]
    turn = 0
    while len(out) < n:
        out.append(HumanMessage(" ".join(rng.choices(WORDS, k=rng.randint(5, 60)))))
        if turn % 4 == 0:
            call = f"call{turn}"
            out.append(AIMessage("", tool_calls=[{"name": "search", "args": {"q": "x"}, "id": call}]))
            out.append(ToolMessage(" ".join(rng.choices(WORDS, k=rng.randint(20, 200))), tool_call_id=call))
        out.append(AIMessage(" ".join(rng.choices(WORDS, k=rng.randint(5, 80)))))
        turn += 1
    return out[:n] if not isinstance(out[n - 1], AIMessage) or not out[n - 1].tool_calls else out[: n - 1]


MESSAGES = conversation(10_000)
BUDGET = 390_000  # about half of the conversation (772,791 tokens)


def _fresh() -> tuple[tuple[Any, ...], dict[str, Any]]:
    return (TiktokenCounter("o200k_base"),), {}


@pytest.mark.benchmark(group="planner-10k")
def test_trim_cold(benchmark: Any) -> None:
    benchmark.pedantic(
        lambda counter: trim_messages(MESSAGES, max_tokens=BUDGET, token_counter=counter, include_system=True),
        setup=_fresh,
        rounds=5,
    )


@pytest.mark.benchmark(group="planner-10k")
def test_plan_cold(benchmark: Any) -> None:
    def plan(counter: TiktokenCounter) -> None:
        result = Planner(counter=counter, context_window=BUDGET, reserve_output=0).plan(MESSAGES)
        assert result.fits

    benchmark.pedantic(plan, setup=_fresh, rounds=5)
