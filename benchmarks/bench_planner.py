"""The planner end to end, against trimming alone and against langchain_core's trim_messages, on the bench corpus.

For each kind of the bench corpus (agent, multilingual, code), its 10,000-message conversation (1.2-1.9M o200k
tokens) is fitted cold (a fresh counter every round, so nothing is cached; one round first as a warm-up, which
takes the process's one-off costs) to four budgets: ``8k`` and ``32k`` (small models' windows), ``112k`` (gpt-4o's
128k window less 16k of output, what a chat product sends) and ``half`` (half the conversation's tokens):

- ``trim``: ctxwin's ``trim_messages`` with ``TiktokenCounter("o200k_base")``;
- ``plan``: ``Planner(counter=..., context_window=budget, reserve_output=0).plan(...)``, the default chain
  (filter, truncate_tool_output, trim);
- ``plan+report``: the same, then every figure of its report read (``summary()`` and each step's ``as_dict()``),
  which tokenizes the messages the plan dropped unread;
- ``langchain``: langchain_core's ``trim_messages`` with the o200k per-message callable, its closest equivalent
  (it has no planner; half budget only, it takes seconds a round).

The issue's target: planning costs at most twice trimming. Run: ``pytest benchmarks/bench_planner.py
--benchmark-only`` (needs the ``bench`` and ``corpus`` extras).
"""

from __future__ import annotations

from typing import Any

import langchain_core.messages as lc_messages
import pytest
from conversations import KINDS
from side_by_side import o200k_callable, o200k_total, ours, theirs

from ctxwin.counters.tiktoken_counter import TiktokenCounter
from ctxwin.planner import Planner
from ctxwin.trim import trim_messages

SIZE = 10_000
ROUNDS = {"trim": 5, "plan": 5, "plan+report": 3, "langchain": 1}  # langchain_core takes seconds a round here
BUDGETS = {
    "8k": lambda kind: 8_000,
    "32k": lambda kind: 32_000,
    "112k": lambda kind: 112_000,
    "half": lambda kind: o200k_total(kind, SIZE) // 2,
}


def _fresh() -> tuple[tuple[Any, ...], dict[str, Any]]:
    return (TiktokenCounter("o200k_base"),), {}


@pytest.mark.parametrize("budget_name", list(BUDGETS))
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("run", list(ROUNDS))
def test_fit(benchmark: Any, run: str, kind: str, budget_name: str) -> None:
    if run == "langchain" and budget_name != "half":
        pytest.skip("langchain_core is measured at one budget (seconds a round)")
    benchmark.group = f"planner-{kind}-{SIZE}-{budget_name}"
    budget = BUDGETS[budget_name](kind)
    messages = ours(kind, SIZE)

    def trim(counter: TiktokenCounter) -> list[Any]:
        return trim_messages(messages, max_tokens=budget, token_counter=counter, include_system=True)

    def plan(counter: TiktokenCounter) -> list[Any]:
        result = Planner(counter=counter, context_window=budget, reserve_output=0).plan(messages)
        assert result.fits
        if run == "plan+report":
            result.summary()
            [step.as_dict() for step in result.steps]
        return result.messages

    def langchain() -> list[Any]:
        return list(lc_messages.trim_messages(
            theirs(kind, SIZE), max_tokens=budget, token_counter=o200k_callable, include_system=True
        ))

    if run == "langchain":
        kept = benchmark.pedantic(langchain, rounds=ROUNDS[run], iterations=1)
    else:
        kept = benchmark.pedantic(  # the warm-up round takes the process's one-off costs (imports, plugin loading)
            trim if run == "trim" else plan, setup=_fresh, rounds=ROUNDS[run], iterations=1, warmup_rounds=1
        )
    benchmark.extra_info.update(kept=len(kept), total=len(messages), max_tokens=budget)
