"""What the ledger costs (issue 50): reading 10,000 messages cold (``Ledger().read``) against planning them
(``Planner.plan`` with the ledger, which reads them, and without it), and per appended message in a session (reading
what was appended, as a session's cut does) against a session turn. The bench corpus (``conversations.py``), gpt-4o's
counter, a 20,000-token input budget."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from conversations import generate

from ctxwin.counters import get_counter
from ctxwin.messages import BaseMessage, convert_to_messages
from ctxwin.planner import Planner
from ctxwin.strategies import Ledger
from ctxwin.strategies._ledger_extract import _SAID

COLD = 10_000
KINDS = ["agent", "multilingual", "code"]


def conversation(kind: str, n: int = COLD) -> list[BaseMessage]:
    return convert_to_messages(generate(kind, n, 11))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("run", ["ledger read", "plan with the ledger", "plan without it",
                                 "plan with the ledger, its texts read before"])
def test_ledger_cold(benchmark: Any, run: str, kind: str) -> None:
    """Cold: the process has read none of the texts (``_SAID`` forgotten); "read before": a chat loop fitting its
    conversation again, every text but none of its plan's counts known."""
    benchmark.group = f"ledger-cold-{kind}-{COLD}"
    messages = conversation(kind)
    counter = get_counter("gpt-4o")
    share = 0 if run == "plan without it" else 0.15

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        planner = Planner("gpt-4o", context_window=24_000, reserve_output=4_000, counter=copy.copy(counter),
                          ledger_share=share)
        _SAID.clear()
        if run.endswith("read before"):
            Ledger().read(messages)
        return (planner,), {}

    def target(planner: Planner) -> Any:
        return Ledger().read(messages) if run == "ledger read" else planner.plan(messages)

    benchmark.pedantic(target, setup=setup, rounds=3, iterations=1)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("run", ["ledger read of one appended message", "session turn"])
def test_ledger_per_appended_message(benchmark: Any, run: str, kind: str) -> None:
    benchmark.group = f"ledger-append-{kind}"
    messages = conversation(kind, 2_000)
    head, rest = messages[:1_500], messages[1_500:]

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        _SAID.clear()
        if run == "session turn":
            session = Planner("gpt-4o", context_window=24_000, reserve_output=4_000).session(head)
            session.plan()
            return (session,), {}
        return (Ledger().read(head),), {}

    def appended(state: Any) -> None:
        for k, message in enumerate(rest[:100], start=1):
            if run == "session turn":
                state.add_messages([message])
                state.plan()
            else:
                state.read(messages[: 1_500 + k])

    benchmark.pedantic(appended, setup=setup, rounds=3, iterations=1)
    benchmark.extra_info["ms_per_message"] = 1000 * benchmark.stats.stats.min / 100
