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

The issue's target: planning costs at most twice trimming.

A chat loop plans the same history again after each turn. ``test_chat_turn`` measures that at 10,000 messages and
the 112k budget, after one message is appended to a history already planned once with the same counter (a fresh
counter per round, so what a round reuses is what the previous plan of that history left), beside a cold plan and a
cold trim of the same list:

- ``re-plan after appending one message``: ``planner.plan(history + [new])`` (stateless, as ``fit`` is used);
- ``session turn``: ``session.add_messages([new]); session.plan()`` with a ``PlanSession`` (``planner.session()``)
  that planned the history before; it holds the history's counts and pin indexes (the meter's identity memo, the
  cache this row justifies), so it tokenizes only the new message.

The planner's own caches, each beside what it saves (``test_planner_caches``, 10,000 messages):

- ``re-count a planned history: the plan's meter`` against ``...: the counter's shared cache``: every step of a
  plan totals the list again; the meter answers by identity from what the plan counted, where the counter's shared
  (content-keyed) cache would check each message's content again;
- ``planner for a dataset row's tools: seen before`` against ``...: first seen``: ``Planner.with_tools`` remembers
  a planner per tool set, so a dataset whose rows carry the same tools counts them once.

Tracing (``test_tracing``, issue 20): the cold plan of the agent kind at the 112k budget with no tracer provider
(``tracing off``: ctxwin's spans reduce to one ``sys.modules`` lookup per plan and step) and with the OpenTelemetry
SDK's ``TracerProvider`` exporting to its ``InMemorySpanExporter`` (``SDK provider, in-memory exporter``).

The engine side by side (``test_fit_engine``): the cold trim and the cold plan of each kind at the 32k budget with
DeepSeek-V3's counter (a fresh one a round), with the engine ctxwin chooses (kitoken where engines.json verified
it) and with the reference (``tokenizers``), in one run.

Run: ``pytest benchmarks/bench_planner.py --benchmark-only`` (needs the ``bench`` and ``corpus`` extras).
"""

from __future__ import annotations

from typing import Any

import langchain_core.messages as lc_messages
import pytest
from conversations import KINDS
from side_by_side import o200k_callable, o200k_total, ours, theirs

from ctxwin import _tracing as tracing
from ctxwin.counters._families.tiktoken_counter import TiktokenCounter
from ctxwin.messages import HumanMessage
from ctxwin.planner import Planner
from ctxwin.strategies._meter import Meter
from ctxwin.trim import trim_messages
from ctxwin.trim._measure import AdditiveMeasure, make_measure

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


@pytest.mark.parametrize("engine", ["auto", "reference"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("run", ["trim", "plan"])
def test_fit_engine(benchmark: Any, run: str, kind: str, engine: str) -> None:
    from ctxwin.counters._families.hf_counter import HFCounter

    benchmark.group = f"planner-engine-deepseek-v3-{kind}-{SIZE}-32k"
    messages, budget = ours(kind, SIZE), 32_000

    def fresh() -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (HFCounter("deepseek-v3", engine=engine),), {}

    def go(counter: HFCounter) -> list[Any]:
        if run == "trim":
            return trim_messages(messages, max_tokens=budget, token_counter=counter, include_system=True)
        result = Planner(counter=counter, context_window=budget, reserve_output=0).plan(messages)
        assert result.fits
        return result.messages

    kept = benchmark.pedantic(go, setup=fresh, rounds=3, iterations=1)
    benchmark.extra_info.update(engine=fresh()[0][0].engine.engine, kept=len(kept), total=len(messages))


TURN_ROWS = ("cold trim", "cold plan", "re-plan after appending one message", "session turn")
TURN_BUDGET = "112k"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("run", TURN_ROWS)
def test_chat_turn(benchmark: Any, run: str, kind: str) -> None:
    benchmark.group = f"planner-turn-{kind}-{SIZE}-{TURN_BUDGET}"
    budget = BUDGETS[TURN_BUDGET](kind)
    history = ours(kind, SIZE)
    turns = iter(range(10**6))

    def planner() -> Planner:
        return Planner(counter=TiktokenCounter("o200k_base"), context_window=budget, reserve_output=0)

    def new() -> HumanMessage:
        return HumanMessage(f"and one more question, number {next(turns)}: what changed since?")

    def stateless() -> tuple[tuple[Any, ...], dict[str, Any]]:
        warm = planner()
        warm.plan(history)
        return (warm, [*history, new()]), {}

    def replan(warm: Planner, messages: list[Any]) -> list[Any]:
        return warm.plan(messages).messages

    def session() -> tuple[tuple[Any, ...], dict[str, Any]]:
        held = planner().session(history)
        held.plan()
        return (held, new()), {}

    def turn(held: Any, message: HumanMessage) -> list[Any]:
        held.add_messages([message])
        return list(held.plan().messages)

    def cold() -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (planner(), history), {}

    def trim(cold_planner: Planner, messages: list[Any]) -> list[Any]:
        return trim_messages(messages, max_tokens=budget, token_counter=cold_planner.counter, include_system=True)

    measured, setup = {
        "cold trim": (trim, cold),
        "cold plan": (replan, cold),
        "re-plan after appending one message": (replan, stateless),
        "session turn": (turn, session),
    }[run]
    kept = benchmark.pedantic(measured, setup=setup, rounds=5, iterations=1, warmup_rounds=1)
    benchmark.extra_info.update(kept=len(kept), total=SIZE + (run in TURN_ROWS[2:]), max_tokens=budget)


CACHE_ROWS = (
    "re-count a planned history: the plan's meter",
    "re-count a planned history: the counter's shared cache",
    "planner for a dataset row's tools: seen before",
    "planner for a dataset row's tools: first seen",
)
TOOLS = [
    {"type": "function", "function": {"name": f"tool_{k}", "description": "Look something up. " * 8,
                                      "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}
    for k in range(8)
]


@pytest.mark.parametrize("run", CACHE_ROWS)
def test_planner_caches(benchmark: Any, run: str) -> None:
    benchmark.group = f"planner-caches-{SIZE}"
    history = ours("agent", SIZE)
    counter = TiktokenCounter("o200k_base")
    meter = Meter(counter)
    meter.each(history)  # what a plan's first total leaves
    measure = make_measure(counter, history[0])
    assert isinstance(measure, AdditiveMeasure)
    planner = Planner(counter=counter, context_window=128_000)
    planner.with_tools(TOOLS)
    fresh = iter(range(10**6))

    def first_seen() -> Planner:
        return planner.with_tools([*TOOLS, {"type": "function", "function": {"name": f"new_{next(fresh)}"}}])

    measured = {
        CACHE_ROWS[0]: lambda: meter.each(history),
        CACHE_ROWS[1]: lambda: measure.counts(history),
        CACHE_ROWS[2]: lambda: planner.with_tools(TOOLS),
        CACHE_ROWS[3]: first_seen,
    }[run]
    benchmark.pedantic(measured, rounds=20, iterations=1, warmup_rounds=1)


TRACE_ROWS = ("tracing off", "SDK provider, in-memory exporter")


@pytest.mark.parametrize("run", TRACE_ROWS)
def test_tracing(benchmark: Any, run: str) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    benchmark.group = f"planner-tracing-agent-{SIZE}-{TURN_BUDGET}"
    budget = BUDGETS[TURN_BUDGET]("agent")
    messages = ours("agent", SIZE)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def plan(counter: TiktokenCounter) -> list[Any]:
        exporter.clear()
        return Planner(counter=counter, context_window=budget, reserve_output=0).plan(messages).messages

    with tracing.use_provider(provider if run == TRACE_ROWS[1] else None):
        kept = benchmark.pedantic(plan, setup=_fresh, rounds=7, iterations=1, warmup_rounds=1)
    assert bool(exporter.get_finished_spans()) == (run == TRACE_ROWS[1])
    benchmark.extra_info.update(kept=len(kept), total=len(messages), max_tokens=budget)
