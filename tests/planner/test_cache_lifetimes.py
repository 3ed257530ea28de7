"""Sessions mark each provider's prompt cache as it bills: OpenAI's ``prompt_cache_breakpoint`` marks and
``prompt_cache_key`` from GPT-5.6, Anthropic's lifetimes chosen from the gap between requests, estimated costs that
price writes as billed; ``observe`` reads writes and their lifetimes and ignores usage that cannot be this
request's; a session refuses a ``RemoveMessage``."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxwin.planner._cache_policy as cache_policy_module
from ctxwin.counters import get_model
from ctxwin.messages import HumanMessage, RemoveMessage, SystemMessage
from ctxwin.planner import Plan, Planner
from ctxwin.planner._cache_marks import choose_ttl, payback_turns

from .test_cache_session import replay
from .test_planner import conversation

SOL = "gpt-5.6"


def marked(request: dict[str, Any]) -> list[int]:
    """The indexes of the messages (or Responses items) whose blocks carry a prompt_cache_breakpoint."""
    listed = request.get("messages", request.get("input"))
    return [i for i, item in enumerate(listed)
            if '"prompt_cache_breakpoint"' in json.dumps(item.get("content", item.get("output")))]


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), output=st.sampled_from(["openai", "responses"]),
       window=st.integers(4_000, 12_000))
def test_openai_sessions_mark_at_most_four_and_read_what_they_marked(seed: int, output: str, window: int) -> None:
    """Every request of a GPT-5.6 session carries the session's key, explicit mode and 1-4 marks, the last on the
    last message that takes one; a request that appends marks the previous request's last message, so the prefix
    it wrote is the one it reads."""
    planner = Planner(SOL, context_window=window + 1_000, reserve_output=1_000, output=output)  # type: ignore[call-overload]
    session = planner.session()
    plans = [plan for plan, _ in replay(session, conversation(seed, turns=25, tool_every=2, big_tool=500))]
    keys = {plan.request["prompt_cache_key"] for plan in plans}
    assert len(keys) == 1 and keys.pop().startswith("ctxwin-")
    previous: Plan | None = None
    for plan in plans:
        request = plan.request
        marks = marked(request)
        assert request["prompt_cache_options"] == {"mode": "explicit"} and 1 <= len(marks) <= 4
        assert plan.cache is not None
        if previous is not None and not plan.cache.cut:
            before = marked(previous.request)[-1]
            assert before in marks  # what the previous request wrote last is read (and marked) here
        previous = plan
    other = Planner(SOL, output=output).session([HumanMessage("hi")])  # type: ignore[call-overload]
    assert other.plan().request["prompt_cache_key"] != plans[0].request["prompt_cache_key"]  # one key per session


def test_older_openai_models_get_a_key_and_no_marks() -> None:
    plan = Planner("gpt-5.5", context_window=8_000, output="openai").session(
        [SystemMessage("s"), HumanMessage("hi")]).plan()
    assert plan.request["prompt_cache_key"].startswith("ctxwin-") and "prompt_cache_options" not in plan.request
    assert "prompt_cache_key" not in Planner("gpt-4o", output="openai").session([HumanMessage("hi")]).plan().request
    given_key = Planner(SOL, output="openai").session([HumanMessage("hi")], cache_key="tenant-7").plan()
    assert given_key.request["prompt_cache_key"] == "tenant-7"


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Planner("gpt-5.5", output="openai", cache_control=True), "GPT-5.6"),
        (lambda: Planner("gpt-4o", output="openai").session(cache_control=True), "GPT-5.6"),
        (lambda: Planner("gpt-4o", cache_control=True), "output="),
        (lambda: Planner(SOL, output="openai").session(cache_ttl="1h"), "'30m', '12h'"),
        (lambda: Planner("claude-opus-4-7", output="anthropic").session(cache_ttl="30m"), "'5m', '1h'"),
        (lambda: Planner(SOL, output="openai").session(expected_gap=0), "expected_gap"),
        (lambda: Planner(SOL, output="openai").session(expected_gap=math.inf), "expected_gap"),
        (lambda: Planner(SOL, output="openai").session(cache_key=" "), "cache_key"),
    ],
)
def test_bad_cache_options_are_refused(make: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make()


def test_a_one_off_plan_asks_for_the_marks() -> None:
    messages = [SystemMessage("You answer tersely. " * 100), HumanMessage("What is a prefix cache?")]
    for output in ("openai", "responses"):
        plan = Planner(SOL, output=output, cache_control=True).plan(messages)  # type: ignore[call-overload]
        assert marked(plan.request) == [1] and plan.request["prompt_cache_options"] == {"mode": "explicit"}
    assert "prompt_cache_options" not in Planner(SOL, output="openai").plan(messages).request


@pytest.mark.parametrize(
    ("gap", "ttl", "writes"),
    [(None, "5m", True), (30.0, "5m", True), (239.0, "5m", True), (400.0, "1h", True), (2_800.0, "1h", True),
     (3_000.0, "5m", False), (86_400.0, "5m", False)],
)
def test_anthropic_sessions_choose_the_lifetime_from_the_expected_gap(gap: float | None, ttl: str,
                                                                      writes: bool) -> None:
    planner = Planner("claude-sonnet-4-5", context_window=12_000, reserve_output=1_000, output="anthropic")
    session = planner.session(expected_gap=gap)
    plans = [plan for plan, _ in replay(session, conversation(3, turns=12))]
    assert (session.ttl.ttl, session.ttl.writes) == (ttl, writes)
    for plan in plans:
        text = json.dumps(plan.request)
        if not writes:  # no lifetime outlasts the gap: nothing is marked, nothing written
            assert '"cache_control"' not in text and plan.cache is not None and plan.cache.written_tokens == 0
        elif ttl == "1h":
            assert text.count('"ttl": "1h"') == text.count('"cache_control"') > 0
        else:
            assert '"ttl"' not in text and '"cache_control"' in text


def test_the_measured_gap_chooses_the_lifetime(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an expected gap, the median of the gaps between plans: requests ten minutes apart write for an
    hour, at the one-hour price in the estimate."""
    clock = iter(range(0, 100_000, 600))
    monkeypatch.setattr(cache_policy_module.time, "monotonic", lambda: float(next(clock)))
    planner = Planner("claude-opus-4-7", context_window=20_000, reserve_output=1_000, output="anthropic")
    session = planner.session([SystemMessage("You review code. " * 1_200)])
    rules = get_model("claude-opus-4-7").caching
    assert rules is not None and rules.long_write is not None
    for turn in range(4):
        session.add_messages([HumanMessage(f"Review part {turn}: " + "def f(x): return x * 2\n" * 40)])
        plan = session.plan()
    assert session.ttl.long and '"ttl": "1h"' in json.dumps(plan.request)
    assert plan.cache is not None and plan.cache.written_tokens > 0 and plan.cache.cost is not None
    plain = rules.cost(plan.tokens_after, plan.cache.cached_tokens, plan.cache.written_tokens)
    assert plain is not None and plan.cache.cost > plain  # the hour's writes cost 2x, not 1.25x


def test_a_write_pays_for_itself_at_each_price() -> None:
    sol, claude = get_model(SOL).caching, get_model("claude-sonnet-4-5").caching
    assert payback_turns(sol, choose_ttl(sol, None)) == 1  # 0.25 more, 0.9 saved by the next read
    assert payback_turns(claude, choose_ttl(claude, 600.0)) == 2  # an hour's write: 1.0 more
    assert payback_turns(claude, choose_ttl(claude, 7_200.0)) == 1  # nothing written


@pytest.mark.slow  # imports the SDKs' usage types
def test_observe_reads_writes_and_their_lifetimes() -> None:
    from anthropic.types import CacheCreation
    from anthropic.types import Usage as AnthropicUsage
    from openai.types import CompletionUsage
    from openai.types.completion_usage import PromptTokensDetails
    from openai.types.responses.response_usage import (
        InputTokensDetails,
        InputTokensDetailsCacheWriteTokensDetails,
        OutputTokensDetails,
        ResponseUsage,
    )

    from ctxwin.planner._usage import read_usage

    chat = CompletionUsage(prompt_tokens=5_000, completion_tokens=1, total_tokens=5_001,
                           prompt_tokens_details=PromptTokensDetails(cached_tokens=3_000, cache_write_tokens=2_000))
    assert (read_usage(chat).cached_tokens, read_usage(chat).cache_write_tokens) == (3_000, 2_000)
    details = InputTokensDetails(cached_tokens=1_000, cache_write_tokens=800, cache_write_tokens_details=(
        InputTokensDetailsCacheWriteTokensDetails(ttl_12h_tokens=500, ttl_30m_tokens=300)))
    responses = ResponseUsage(input_tokens=2_000, input_tokens_details=details, output_tokens=1,
                              output_tokens_details=OutputTokensDetails(reasoning_tokens=0), total_tokens=2_001)
    measured = read_usage(responses)
    assert (measured.cached_tokens, measured.cache_write_tokens, measured.cache_write_long_tokens) == (1_000, 800, 500)
    anthropic = AnthropicUsage(input_tokens=10, output_tokens=1, cache_read_input_tokens=4_000,
                               cache_creation_input_tokens=900, cache_creation=CacheCreation(
                                   ephemeral_5m_input_tokens=300, ephemeral_1h_input_tokens=600))
    measured = read_usage(anthropic)
    assert (measured.input_tokens, measured.cache_write_tokens, measured.cache_write_long_tokens) == (4_910, 900, 600)

    session = Planner("claude-opus-4-7", context_window=20_000, output="anthropic").session(
        [SystemMessage("Rules. " * 800), HumanMessage("go")])
    plan = session.plan()
    usage = {"input_tokens": 10, "cache_read_input_tokens": plan.tokens_after - 910, "cache_creation_input_tokens": 900,
             "cache_creation": {"ephemeral_5m_input_tokens": 300, "ephemeral_1h_input_tokens": 600}}
    session.observe(usage)
    rules = get_model("claude-opus-4-7").caching
    assert rules is not None and plan.cache is not None and plan.cache.measured
    billed = (10 * 5.0 + (plan.tokens_after - 910) * 0.5 + 300 * 6.25 + 600 * 10.0) / 1e6
    assert plan.cache.cost == pytest.approx(billed)


@pytest.mark.parametrize("usage", [{"prompt_tokens": 10**400}, {"prompt_tokens": 10**12 + 1},
                                   {"input_tokens": 5, "cache_read_input_tokens": 2**70}])
def test_observe_refuses_counts_no_request_has(usage: dict[str, int]) -> None:
    session = Planner("gpt-4o", context_window=6_000).session([HumanMessage("hi")])
    session.plan()
    with pytest.raises(ValueError, match="not a provider's count"):
        session.observe(usage)


@pytest.mark.parametrize("provider", [1, 10**12, 3])
def test_an_implausible_observation_leaves_the_budget(provider: int) -> None:
    """One usage of 1 token, or of 10^12, for a request of thousands: a warning, and the budget (and every later
    plan) as before."""
    session = Planner("claude-sonnet-4-5", context_window=20_000, reserve_output=1_000).session(
        conversation(5, turns=20))
    plan = session.plan()
    budget = session.max_input_tokens
    with pytest.warns(RuntimeWarning, match="another request"):
        session.observe({"input_tokens": provider, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0})
    assert session.max_input_tokens == budget
    session.add_messages([HumanMessage("and then?")])
    assert session.plan().fits
    session.observe({"input_tokens": math.ceil(plan.tokens_after * 1.2), "cache_read_input_tokens": 0,
                     "cache_creation_input_tokens": 0})
    assert session.max_input_tokens < budget  # a plausible under-count still takes room


@pytest.mark.parametrize("output", ["messages", "openai", "anthropic"])
def test_a_session_refuses_a_remove_message(output: str) -> None:
    session = Planner("gpt-4o", context_window=8_000, output=output).session(  # type: ignore[call-overload]
        [HumanMessage("hi", id="u1")])
    from langchain_core.messages import RemoveMessage as LangChainRemoveMessage

    for removal in (RemoveMessage(id="u1"), LangChainRemoveMessage(id="u1")):
        with pytest.raises(ValueError, match=r"RemoveMessage\(id='u1'\).*only appends"):
            session.add_messages([HumanMessage("next"), removal])
    assert len(session) == 1 and session.plan().fits  # the session is as it was


def test_a_session_without_a_model_still_marks_its_requests() -> None:
    planner = Planner(counter="approximate", context_window=6_000, reserve_output=500, output="anthropic")
    plans = [plan for plan, _ in replay(planner.session(), conversation(9, turns=10))]
    appended = [plan for plan in plans[1:] if plan.cache is not None and not plan.cache.cut]
    assert appended and all(len(plan.cache_breakpoints or ()) == 2 for plan in appended)  # the previous, the last


@pytest.mark.parametrize(("options", "match"), [
    ({"cache_ttl": "2h"}, "cache_ttl"), ({"expected_gap": -1}, "expected_gap"), ({"cache_key": ""}, "cache_key"),
    ({"cache_control": True}, "output='anthropic'"),
])
def test_the_cache_options_are_checked_in_the_config(options: dict[str, Any], match: str) -> None:
    from ctxwin.planner import FitConfig

    with pytest.raises(ValueError, match=match):
        FitConfig(**options)


def test_a_planner_config_sets_its_sessions_cache_options() -> None:
    from ctxwin.planner import FitConfig

    config = FitConfig(model="claude-sonnet-4-5", output="anthropic", expected_gap=900.0)
    session = Planner(config=config).session()
    assert session.ttl.ttl == "1h" and session.ttl.long
    assert Planner(config=config).session(expected_gap=10.0).ttl.ttl == "5m"
    keyed = Planner(config=FitConfig(model=SOL, output="openai", cache_key="team-a")).session([HumanMessage("hi")])
    assert keyed.plan().request["prompt_cache_key"] == "team-a"
