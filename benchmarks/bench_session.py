"""Chat-loop policies replayed turn by turn (a request after each user message and each batch of tool results), at a
20,000-token input budget with gpt-4o's counter: the time of a whole replay per policy, and per request in
``extra_info`` (``ms_per_request``). ``langchain`` is langchain_core's ``trim_messages(strategy="last",
include_system=True, start_on="human")`` on LangChain messages, given a per-message counter; ``sliding`` the same
trim by ctxwin; ``refit`` ``Planner.plan`` of the whole history per request; ``session`` the cache-stable
``PlanSession``. What the policies bill is ``ctxwin bench --session``'s to measure (docs/sessions.md)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from conversations import generate

from ctxwin.cli._bench.replay import make_policy, request_points
from ctxwin.counters import get_counter
from ctxwin.messages import BaseMessage, convert_to_messages
from ctxwin.planner import Planner

MESSAGES = 400
POLICIES = ["langchain", "sliding", "refit", "session"]


def conversation(kind: str) -> list[BaseMessage]:
    return convert_to_messages(generate(kind, MESSAGES, 7))


@pytest.mark.parametrize("kind", ["agent", "multilingual"])
@pytest.mark.parametrize("policy", POLICIES)
def test_replay(benchmark: Any, policy: str, kind: str) -> None:
    benchmark.group = f"session-replay-{kind}-{MESSAGES}-20k"
    messages = conversation(kind)
    points = request_points(messages)
    counter = get_counter("gpt-4o")

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        planner = Planner("gpt-4o", context_window=24_000, reserve_output=4_000, counter=copy.copy(counter))
        return (make_policy(policy, planner),), {}

    def replay(chosen: Any) -> int:
        done = 0
        for end in points:
            chosen.add(messages[done:end])
            done = end
            chosen.request()
        return len(points)

    requests = benchmark.pedantic(replay, setup=setup, rounds=1 if policy == "langchain" else 3, iterations=1)
    benchmark.extra_info["requests"] = requests
    benchmark.extra_info["ms_per_request"] = 1000 * benchmark.stats.stats.min / requests
