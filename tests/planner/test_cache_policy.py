"""The cache policy on its own: whether requests carry marks and which key, the lifetime from the gaps between
plans, when a write pays, the marks and estimated bill of a request after another, and the provider's usage
correcting the bill and the budget (``observe``)."""

from __future__ import annotations

import math
from typing import Any

import pytest

import ctxwin.planner._cache_policy as cache_policy_module
from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from ctxwin.planner import Planner
from ctxwin.planner._cache_marks import payback_turns
from ctxwin.planner._cache_policy import OBSERVE_MARGIN, CachePolicy
from ctxwin.strategies._meter import Meter

GPT4O = get_counter("gpt-4o")


def make(model: str | None, planner_options: dict[str, Any] | None = None, **options: Any) -> CachePolicy:
    planner: Planner[Any] = Planner(model, context_window=20_000, reserve_output=1_000,
                                    **{"counter": GPT4O, **(planner_options or {})})
    return CachePolicy(planner, planner.config.replace(**options), Meter(planner.counter))


def test_marks_follow_the_output_the_model_and_the_option() -> None:
    assert make("claude-sonnet-4-5", {"output": "anthropic"}).marks
    assert not make("claude-sonnet-4-5", {"output": "anthropic"}, cache_control=False).marks
    assert make("gpt-5.6", {"output": "openai"}).marks  # a model that takes OpenAI's marks
    assert not make("gpt-4o", {"output": "openai"}).marks and not make("gpt-4o").marks
    with pytest.raises(ValueError, match="prompt_cache_breakpoint"):
        make("gpt-4o", {"output": "openai"}, cache_control=True)


def test_the_key_is_the_options_or_one_made_for_models_that_route_by_it() -> None:
    made = [make("gpt-5.6", {"output": "openai"}).key for _ in range(2)]
    assert all(key and key.startswith("ctxwin-") for key in made) and made[0] != made[1]
    assert make("gpt-5.6", {"output": "openai"}, cache_key="tenant-7").key == "tenant-7"
    assert make("gpt-5.6").key is None and make("claude-sonnet-4-5", {"output": "anthropic"}).key is None


def test_the_lifetime_follows_the_gaps_between_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter(range(0, 100_000, 600))  # a plan every ten minutes
    monkeypatch.setattr(cache_policy_module.time, "monotonic", lambda: float(next(clock)))
    policy = make("claude-opus-4-7", {"output": "anthropic"})
    policy.note_plan()
    assert (policy.ttl.ttl, policy.ttl.writes) == ("5m", True)  # no gap measured yet
    policy.note_plan()
    assert policy.ttl.long and policy.ttl.sent == "1h"
    assert policy.payback() == payback_turns(policy.rules, policy.ttl) > 1  # the hour's write costs 2x
    told = make("claude-opus-4-7", {"output": "anthropic"}, expected_gap=4 * 3_600.0)
    told.note_plan()
    told.note_plan()
    assert not told.ttl.writes and not told.writes and told.payback() == 1  # nothing outlasts the gap
    forced = make("claude-opus-4-7", {"output": "anthropic"}, cache_ttl="1h", expected_gap=10.0)
    forced.note_plan()
    assert forced.ttl.sent == "1h"


def test_writes_cost_more_only_where_the_provider_bills_them() -> None:
    assert not make("gpt-4o").writes and make("gpt-4o").payback() == 1  # automatic caching, writes free
    anthropic = make("claude-sonnet-4-5", {"output": "anthropic"})
    assert anthropic.writes and anthropic.payback() == payback_turns(anthropic.rules, anthropic.ttl)


def chat(turns: int) -> list[BaseMessage]:
    out: list[BaseMessage] = [SystemMessage("You review code. " * 400)]
    for t in range(turns):
        out += [HumanMessage(f"Question {t}: " + "what about this part " * 40), AIMessage(f"Answer {t}. " * 60)]
    return out


def test_a_request_after_another_reads_its_prefix_and_marks_it() -> None:
    planner: Planner[Any] = Planner("claude-sonnet-4-5", context_window=20_000, reserve_output=1_000,
                                    output="anthropic", counter=GPT4O)
    meter = Meter(GPT4O)
    policy = CachePolicy(planner, planner.config, meter)
    rules = policy.rules
    assert rules is not None
    first = planner.plan_run(chat(4), meter)
    fields = policy.plan_fields(first.plan, first.sent, None, 0, (), cut=True)
    report = fields["cache"]
    assert (report.shared_tokens, report.cached_tokens, report.cut) == (0, 0, True)
    assert report.written_tokens == first.plan.tokens_after  # the first request writes all of it
    assert policy.prefixes == (1, len(first.sent)) and fields["cache_breakpoints"] == (-1,)  # system apart
    later = planner.plan_run([*first.sent, AIMessage("Yes."), HumanMessage("And the tests?")], meter)
    fields = policy.plan_fields(later.plan, later.sent, first.sent, len(first.plan.messages), (), cut=False)
    report = fields["cache"]
    shared = sum(GPT4O.count_message(m) for m in first.sent)
    assert report.shared_tokens == shared and report.cached_tokens == rules.cached_tokens(shared)
    assert report.written_tokens == later.plan.tokens_after - report.cached_tokens
    assert policy.prefixes == (1, len(first.sent), len(later.sent))
    assert fields["cache_breakpoints"] == (len(first.plan.messages) - 1, -1)  # what it reads, what the next reads
    assert fields["cache_ttl"] is None and fields["cache_key"] is None  # the short lifetime is not sent


def test_observe_puts_the_bill_on_the_plan_and_corrects_the_budget() -> None:
    planner: Planner[Any] = Planner("claude-sonnet-4-5", context_window=20_000, reserve_output=1_000, counter=GPT4O)
    meter = Meter(planner.counter)
    policy = CachePolicy(planner, planner.config, meter)
    with pytest.raises(ValueError, match="call plan"):
        policy.observe({"input_tokens": 10}, None)
    plan = planner.plan_run(chat(3), meter).plan
    budget = policy.budget
    provider = math.ceil(plan.tokens_after * 1.2)  # the provider counts more than the counter: room goes
    measured = policy.observe({"input_tokens": provider, "cache_read_input_tokens": 0,
                               "cache_creation_input_tokens": 0}, plan)
    assert measured.input_tokens == provider and plan.cache is not None and plan.cache.measured
    ratio = provider / plan.tokens_after
    real = budget.context_window - budget.reserve_output
    assert policy.budget.max_input_tokens == math.floor(real / (ratio * (1 + OBSERVE_MARGIN))) < budget.max_input_tokens
    rules = policy.rules
    assert rules is not None and plan.cache.cost == rules.cost(provider, 0, 0)  # billed as the provider counted
    corrected = policy.budget
    with pytest.warns(RuntimeWarning, match="another request"):
        policy.observe({"input_tokens": 5 * plan.tokens_after}, plan)
    assert policy.budget == corrected
