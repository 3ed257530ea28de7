"""A model's max output is a cap on the reply, not what the planner reserves by default (``default_reserve``), and
a request's own reply limit is the reserve its plan uses unless one is given."""

from __future__ import annotations

import importlib.util

import pytest

import ctxwin
from ctxwin.counters import get_counter, get_model, list_models
from ctxwin.messages import AIMessage, HumanMessage
from ctxwin.planner._planner import default_reserve


@pytest.mark.skipif(importlib.util.find_spec("llama_models") is None, reason="needs the llama extra")
def test_a_model_whose_max_output_is_its_window_keeps_most_of_it_for_the_input() -> None:
    """The issue's case: a 65k-token conversation for llama-3.1-8b-instruct (131,072-token window and max output)
    used to be trimmed to half the window; it fits."""
    messages = []
    for i in range(130):
        messages += [HumanMessage(f"question {i}: " + "tell me more about the harbour " * 40),
                     AIMessage(f"answer {i}: " + "the harbour was busy that year " * 40)]
    counter = get_counter("llama:3")
    assert 60_000 < counter.count_messages(messages) < 70_000
    plan = ctxwin.fit(messages, "llama-3.1-8b-instruct")
    assert plan.budget.reserve_output == 16_384 and plan.fits and plan.steps == []
    assert plan.messages == messages


@pytest.mark.parametrize(("model", "reserve"), [("gpt-4o", 16_000), ("gpt-4", 4_096), ("claude-sonnet-4", 25_000),
                                                ("gpt-oss-120b", 16_384)])
def test_the_default_reserve_of_some_models(model: str, reserve: int) -> None:
    assert ctxwin.Planner(model).budget.reserve_output == reserve


def test_every_models_default_reserve_is_within_its_caps() -> None:
    for spec in list_models():
        reserve = default_reserve(spec.max_output_tokens, spec.context_window)
        assert reserve <= spec.max_output_tokens and reserve <= spec.context_window // 2
        assert reserve >= min(spec.max_output_tokens, spec.context_window // 8), spec.name


def test_a_requests_reply_limit_is_the_reserve_unless_one_is_given() -> None:
    """A reserve given is the written reply limit (issue 53); a proxy forwarding a client's body keeps the body's
    own limit and reserves at least it (``limit_floor``, issue 52: a reply the window has no room for otherwise)."""
    request = {"model": "claude-sonnet-4", "max_tokens": 64_000, "messages": [{"role": "user", "content": "hi"}]}
    plan = ctxwin.fit(request, "claude-sonnet-4", output="anthropic")
    assert plan.budget.reserve_output == 64_000 and plan.request["max_tokens"] == 64_000
    given = ctxwin.fit(request, "claude-sonnet-4", reserve_output=1_000, output="anthropic")
    assert given.budget.reserve_output == 1_000 and given.request["max_tokens"] == 1_000
    chat = {"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 4_000}
    planner = ctxwin.Planner(model="gpt-4o", context_window=16_000, reserve_output=1_000)
    assert planner.for_request(chat).budget.reserve_output == 1_000
    assert planner.for_request(chat, limit_floor=True).budget.reserve_output == 4_000
    assert ctxwin.Planner(model="gpt-4o", context_window=16_000, reserve_output=5_000).for_request(
        chat, limit_floor=True).budget.reserve_output == 5_000
    window = get_model("gpt-4").context_window
    with pytest.raises(ValueError, match=r"^the request's reply limit \(8192: its max_tokens, max_completion_tokens "
                                         r"or max_output_tokens\) must be smaller than the context"):
        ctxwin.fit({**request, "max_tokens": window}, "gpt-4")
    with pytest.raises(ValueError, match=r"^the request's 'max_tokens' must be a positive int, got 'many'"):
        ctxwin.fit({**request, "max_tokens": "many"}, "gpt-4")
