"""The cache-stable PlanSession (the default): between cuts a request is the previous one, byte for byte, plus what
was appended; a cut comes only when the next request would not fit and goes down to the low-water mark; every
request fits (recounted with the real tokenizer), keeps its tool pairs whole and the last user message; the plan
reports what it shares with the previous request and its cost; ``observe`` follows the provider's counts."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxwin.counters import get_counter, get_model
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.messages import convert_to_openai_messages as to_openai
from ctxwin.planner import DEFAULT_LOW_WATER, Plan, Planner, PlanSession
from ctxwin.recall import is_recalled
from ctxwin.strategies._pairs import find_broken_pairs
from ctxwin.strategies._summarize import extractive_summarizer

from .test_plan_properties import COUNTER, TOOLS, random_conversation
from .test_planner import conversation

EXACT = get_counter(COUNTER)


def request_points(messages: list[BaseMessage]) -> list[int]:
    """A request after each user message and each run of tool results (written here, not taken from the bench)."""
    points = []
    for i, message in enumerate(messages):
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        if isinstance(message, HumanMessage) or (isinstance(message, ToolMessage) and not isinstance(nxt, ToolMessage)):
            points.append(i + 1)
    return points


def replay(session: PlanSession, messages: list[BaseMessage]) -> list[tuple[Plan, list[BaseMessage]]]:
    """Each request's plan and the history it was made for."""
    plans, done = [], 0
    for end in request_points(messages):
        session.add_messages(messages[done:end])
        done = end
        plans.append((session.plan(), messages[:end]))
    return plans


def as_json(messages: list[Any]) -> list[str]:
    return [json.dumps(m, sort_keys=True, ensure_ascii=False) for m in to_openai(messages)]


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 100_000),
    window=st.integers(2_500, 9_000),
    low_water=st.floats(0.3, 1.0),
    summarize=st.booleans(),
    tools=st.booleans(),
)
# A cut whose last summary left too little room beside the last turn, where a fresh plan of the history fits.
@example(seed=13887, window=2500, low_water=1.0, summarize=True, tools=False)
def test_session_invariants(seed: int, window: int, low_water: float, summarize: bool, tools: bool) -> None:
    messages, _ = random_conversation(seed)
    messages += conversation(seed, turns=12, tool_every=2, big_tool=900)[1:]  # longer, so that it is cut
    wanted = TOOLS if tools else None
    planner = Planner(counter=COUNTER, context_window=window, reserve_output=0, tools=wanted,
                      summarizer=extractive_summarizer if summarize else None)
    session = planner.session(low_water=low_water)
    previous: list[BaseMessage] | None = None
    for plan, history in replay(session, messages):
        sent = list(plan.messages)
        exact = EXACT.count_messages(sent, tools=wanted)
        assert plan.cache is not None
        if not plan.fits:  # only when what must stay does not fit: Planner.plan cannot fit it either
            assert not planner.plan(history).fits
            previous = None
            continue
        assert exact <= planner.budget.max_input_tokens  # every request fits
        assert not find_broken_pairs(sent)  # tool pairs whole
        last_user = next(m for m in reversed(history) if isinstance(m, HumanMessage))
        assert any(m is last_user for m in sent)  # the last user message, verbatim
        if previous is not None and not plan.cache.cut:  # between cuts: the previous base, byte for byte
            assert sent[: len(previous)] == previous and as_json(sent[: len(previous)]) == as_json(previous)
            appended = iter(m.id for m in history)  # then history's new messages, in order (some repaired)
            assert all(m.id in appended for m in sent[len(previous):] if not is_recalled(m))
            priming = EXACT.count_messages(previous[:1]) - EXACT.count_message(previous[0])
            assert plan.cache.shared_tokens == EXACT.count_messages(previous, tools=wanted) - priming
        if plan.cache.cut or all(step.name != "repair_tool_pairs" for step in plan.steps):
            previous = sent  # the next request's base (a request that repaired what it appended is none)


@pytest.mark.parametrize(("seed", "window", "low_water", "summarize", "tools"),
                         [(13887, 2500, 1.0, True, False), (5, 6_000, 0.6, False, True)])
def test_session_invariants_on_two_runs(seed: int, window: int, low_water: float, summarize: bool, tools: bool) -> None:
    """The property on its regression example and one more run (the fast tier's; the slow tier draws 40)."""
    test_session_invariants.hypothesis.inner_test(seed, window, low_water, summarize, tools)  # type: ignore[attr-defined]


def test_results_that_come_after_an_interruption_are_sent_with_their_call() -> None:
    call = {"name": "search", "args": {"q": "x"}, "id": "c1"}
    session = Planner(counter=COUNTER, context_window=4_000, reserve_output=0).session(chat(3))
    session.plan()
    session.add_messages([AIMessage("", tool_calls=[call], id="ask"), HumanMessage("wait, also this", id="wait")])
    interrupted = session.plan()
    assert not find_broken_pairs(interrupted.messages)  # the unanswered call was repaired for this request
    session.add_messages([ToolMessage("found it", tool_call_id="c1", id="res"), HumanMessage("so?", id="so")])
    plan = session.plan()
    sent = {m.id: m for m in plan.messages}
    assert "res" in sent and isinstance(sent["ask"], AIMessage) and sent["ask"].tool_calls
    assert not find_broken_pairs(plan.messages)


def chat(turns: int, words: int = 120) -> list[BaseMessage]:
    """A chat: a system prompt, then questions and long answers."""
    out: list[BaseMessage] = [SystemMessage("You are a helpful assistant who answers at length.", id="sys")]
    for t in range(turns):
        out.append(HumanMessage(f"Question {t}: " + "tell me more about the topic " * 3, id=f"u{t}"))
        out.append(AIMessage(f"Answer {t}: " + " ".join(f"word{(t * 7 + k) % 97}" for k in range(words)),
                             id=f"a{t}"))
    return out


def test_a_cut_goes_to_the_low_water_mark_and_the_next_is_several_turns_away() -> None:
    planner = Planner("gpt-4o", context_window=6_000, reserve_output=0)
    plans = [plan for plan, _ in replay(planner.session(), chat(120))]
    cuts = [i for i, plan in enumerate(plans) if plan.cache is not None and plan.cache.cut]
    assert cuts[0] == 0 and len(cuts) > 3
    budget = planner.budget.max_input_tokens
    for i in cuts[1:]:
        assert plans[i - 1].tokens_after <= budget  # the request before the cut still fit...
        assert plans[i].tokens_after <= DEFAULT_LOW_WATER * budget  # ...and the cut went down to the mark
    assert min(b - a for a, b in itertools.pairwise(cuts[1:])) >= 5
    hits = sum(plan.cache.cached_tokens > 0 for plan in plans[1:] if plan.cache)
    assert hits >= 0.8 * (len(plans) - 1)


def test_refit_moves_the_cut_every_turn_and_the_session_does_not() -> None:
    """The difference the session makes, measured the way a provider bills: the prefix shared from 1,024 tokens."""
    planner = Planner("gpt-4o", context_window=6_000, reserve_output=0)
    stable = replay(planner.session(), chat(80))
    refit = replay(planner.session(cache_stable=False), chat(80))

    def hits(plans: list[tuple[Plan, list[BaseMessage]]]) -> int:
        return sum(1 for plan, _ in plans if plan.cache is not None and plan.cache.cached_tokens > 0)

    assert hits(stable) > 2 * hits(refit)


def test_the_cost_follows_the_models_prices() -> None:
    planner = Planner("gpt-4o", context_window=6_000, reserve_output=0)
    rules = get_model("gpt-4o").caching
    assert rules is not None and rules.input is not None and rules.cached_input is not None
    for plan, _ in replay(planner.session(), chat(40)):
        report = plan.cache
        assert report is not None and report.cost is not None
        cached = report.shared_tokens // 128 * 128 if report.shared_tokens >= 1024 else 0
        assert report.cached_tokens == cached and report.written_tokens == 0
        expected = ((plan.tokens_after - cached) * rules.input + cached * rules.cached_input) / 1e6
        assert report.cost == pytest.approx(expected)


def test_a_model_without_rules_reports_the_shared_prefix_only() -> None:
    session = Planner(counter=COUNTER, context_window=4_000, reserve_output=0).session(chat(3))
    session.plan()
    session.add_messages([HumanMessage("and then?")])
    report = session.plan().cache
    assert report is not None and report.shared_tokens > 0 and report.cost is None and not report.cut


def test_anthropic_sessions_mark_cache_breakpoints() -> None:
    planner = Planner("claude-sonnet-4-5", context_window=8_000, reserve_output=0, output="anthropic")
    session = planner.session(chat(4))
    first = session.plan().request
    assert first["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert first["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    sent = len(first["messages"])
    session.add_messages([AIMessage("An answer."), HumanMessage("One more question.")])
    plan = session.plan()
    assert plan.cache is not None and not plan.cache.cut
    second = plan.request
    assert "cache_control" in second["messages"][sent - 1]["content"][-1]  # what this request reads
    assert json.dumps(second).count('"cache_control"') == 3
    report = plan.cache
    assert report.written_tokens == plan.tokens_after - report.cached_tokens > 0  # the rest is written


def test_with_tools_the_four_breakpoints_are_tools_system_previous_and_last() -> None:
    planner = Planner("claude-sonnet-4-5", context_window=8_000, reserve_output=1_000, output="anthropic",
                      tools=TOOLS)
    session = planner.session(chat(4))
    sent = len(session.plan().request["messages"])
    session.add_messages([AIMessage("An answer."), HumanMessage("One more question.")])
    request = session.plan().request
    assert request["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" in request["system"][-1] and "cache_control" in request["messages"][sent - 1]["content"][-1]
    assert json.dumps(request).count('"cache_control"') == 4


def test_one_off_plans_mark_breakpoints_only_when_asked() -> None:
    history = chat(4)
    plain = Planner("claude-sonnet-4-5", context_window=8_000, reserve_output=0, output="anthropic").plan(history)
    assert '"cache_control"' not in json.dumps(plain.request) and plain.cache is None
    marked = Planner("claude-sonnet-4-5", context_window=8_000, reserve_output=0, output="anthropic",
                     cache_control=True).plan(history)
    assert json.dumps(marked.request).count('"cache_control"') == 2  # the system prompt and the last message
    unmarked = Planner("claude-sonnet-4-5", context_window=8_000, output="anthropic").session(
        history, cache_control=False)
    assert '"cache_control"' not in json.dumps(unmarked.plan().request)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Planner("gpt-4o", cache_control=True), "output='anthropic'"),
        (lambda: Planner("gpt-4o").session(cache_control=True), "output='anthropic'"),
        (lambda: Planner("gpt-4o").session(low_water=0), "low_water"),
        (lambda: Planner("gpt-4o").session(low_water=1.5), "low_water"),
        (lambda: Planner("gpt-4o").session(cache_stable="yes"), "cache_stable"),  # type: ignore[arg-type]
        (lambda: Planner("gpt-4o").session().observe({"prompt_tokens": 10}), "call plan"),
    ],
)
def test_bad_options_are_refused(make: Any, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_observe_takes_the_measured_figures() -> None:
    session = Planner("gpt-4o", context_window=6_000, reserve_output=0).session(chat(12))
    plan = session.plan()
    budget = session.max_input_tokens
    usage = session.observe({"prompt_tokens": plan.tokens_after, "completion_tokens": 12,
                             "prompt_tokens_details": {"cached_tokens": 1024}})
    assert usage.cached_tokens == 1024 and usage.input_tokens == plan.tokens_after
    assert plan.cache is not None and plan.cache.measured and plan.cache.cached_tokens == 1024
    assert session.max_input_tokens == budget  # an exact count that agrees changes nothing
    with pytest.raises(ValueError, match="no input token count"):
        session.observe({"completion_tokens": 3})
    with pytest.raises(ValueError, match="non-negative"):
        session.observe({"prompt_tokens": -4})
    with pytest.raises(ValueError, match="more than"):
        session.observe({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 1024}})


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(ratio=st.floats(0.6, 1.6), jitter=st.lists(st.floats(0.0, 1.0), min_size=30, max_size=30),
       seed=st.integers(0, 1000))
def test_observed_ratios_never_let_a_later_request_go_over(ratio: float, jitter: list[float], seed: int) -> None:
    """A provider whose tokens are ``ratio`` times the approximate counter's (within the observe margin): after the
    first observed request, no request counts over the real budget at the provider."""
    from ctxwin.planner._cache_policy import OBSERVE_MARGIN

    planner = Planner("claude-sonnet-4-5", context_window=9_000, reserve_output=1_000)
    real_limit = 8_000
    session = planner.session()
    messages = conversation(seed, turns=40, tool_every=3, big_tool=600)
    done = 0
    for n, end in enumerate(request_points(messages)):
        session.add_messages(messages[done:end])
        done = end
        plan = session.plan()
        provider = math.ceil(plan.tokens_after * ratio * (1 + OBSERVE_MARGIN * jitter[n % len(jitter)]))
        if n > 0:
            assert plan.fits and provider <= real_limit
        session.observe({"input_tokens": provider, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0})
    assert session.max_input_tokens <= real_limit / ratio


@pytest.mark.parametrize("ratio", [0.6, 1.6])
def test_observed_ratios_at_the_ends_never_let_a_later_request_go_over(ratio: float) -> None:
    """The property at the ratios' two ends (the fast tier's; the slow tier draws 25)."""
    jitter = [(k * 7 % 30) / 29 for k in range(30)]
    test_observed_ratios_never_let_a_later_request_go_over.hypothesis.inner_test(  # type: ignore[attr-defined]
        ratio, jitter, 3)


def test_read_usage_reads_the_sdks_own_objects() -> None:
    from anthropic.types import Usage as AnthropicUsage
    from openai.types import CompletionUsage
    from openai.types.completion_usage import PromptTokensDetails

    from ctxwin.planner._usage import read_usage

    openai_usage = CompletionUsage(prompt_tokens=2000, completion_tokens=10, total_tokens=2010,
                                   prompt_tokens_details=PromptTokensDetails(cached_tokens=1792))
    assert read_usage(openai_usage).cached_tokens == 1792
    anthropic_usage = AnthropicUsage(input_tokens=50, output_tokens=5, cache_read_input_tokens=3000,
                                     cache_creation_input_tokens=400)
    measured = read_usage(anthropic_usage)
    assert (measured.input_tokens, measured.cached_tokens, measured.cache_write_tokens) == (3450, 3000, 400)
    langchain = {"input_tokens": 900, "output_tokens": 3, "total_tokens": 903,
                 "input_token_details": {"cache_read": 512, "cache_creation": 0}}
    assert read_usage(langchain).cached_tokens == 512
    assert read_usage({"prompt_token_count": 5000, "cached_content_token_count": 4096}).cached_tokens == 4096
    with pytest.raises(ValueError, match="usage"):
        read_usage("1000 tokens")
