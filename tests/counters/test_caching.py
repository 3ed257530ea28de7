"""Provider caching rules and prices as registry data: validation, what the cache reads, what a request costs, the
built-in providers, and a plugin's model carrying its own rules."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxwin._plugins import register_plugin, unregister_plugin
from ctxwin.counters import get_model, list_models
from ctxwin.counters._caching import CachingRules
from ctxwin.counters._models import ModelSpec
from ctxwin.hookspecs import hookimpl

RULES: dict[str, Any] = dict(mode="automatic", min_prefix=1024, granularity=128, input=2.0, cached_input=0.2,
                             cache_write=2.0, output=8.0, source="https://example.test/pricing", date="2026-11-26")


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"mode": "sometimes"}, "mode"),
        ({"min_prefix": -1}, "min_prefix"),
        ({"granularity": 0}, "granularity"),
        ({"input": -0.5}, "input"),
        ({"cached_input": "cheap"}, "cached_input"),
        ({"source": " "}, "source"),
        ({"date": "26/11/2026"}, "YYYY-MM-DD"),
        ({"mode": "explicit"}, "max_breakpoints"),
    ],
)
def test_invalid_rules_are_refused(change: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        CachingRules(**{**RULES, **change})


def test_a_model_spec_refuses_caching_that_is_not_rules() -> None:
    with pytest.raises(TypeError, match="CachingRules"):
        ModelSpec("m", 1000, 100, "approximate", caching={"input": 1.0})  # type: ignore[arg-type]


@given(shared=st.integers(0, 200_000))
def test_the_cache_reads_from_the_minimum_in_steps(shared: int) -> None:
    rules = CachingRules(**RULES)
    cached = rules.cached_tokens(shared)
    if shared < 1024:
        assert cached == 0
    else:
        assert cached % 128 == 0 and shared - 128 < cached <= shared


def test_cost_of_a_request() -> None:
    rules = CachingRules(**RULES)
    # 10,000 input tokens, 8,192 read from the cache, 500 output: 1,808 x $2 + 8,192 x $0.2 + 500 x $8 per million
    assert rules.cost(10_000, 8_192, 0, 500) == pytest.approx((1_808 * 2 + 8_192 * 0.2 + 500 * 8) / 1e6)
    assert rules.read_ratio == pytest.approx(0.1) and rules.write_ratio == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at most"):
        rules.cost(100, 90, 20)
    unpriced = CachingRules(**{**RULES, "input": None})
    assert unpriced.cost(100) is None and not unpriced.priced and unpriced.read_ratio is None


def test_builtin_providers_have_rules_with_sources() -> None:
    openai, claude, gemini, deepseek = (get_model(name).caching for name in
                                        ("gpt-4o", "claude-sonnet-4-5", "gemini-2.5-flash", "deepseek-chat"))
    assert openai is not None and openai.mode == "automatic" and (openai.min_prefix, openai.granularity) == (1024, 128)
    assert claude is not None and claude.mode == "explicit" and claude.max_breakpoints == 4
    assert claude.write_ratio == pytest.approx(1.25) and claude.read_ratio == pytest.approx(0.1)
    assert gemini is not None and gemini.mode == "automatic" and "granularity" in gemini.assumed
    assert deepseek is not None and deepseek.granularity == 64
    v4 = get_model("deepseek-v4-pro").caching
    assert v4 is not None and v4.priced and "peak" in v4.assumed
    for spec in list_models():
        if spec.caching is not None:
            assert spec.caching.source.startswith("https://") and spec.caching.date
    assert get_model("gpt-3.5-turbo").caching is None  # no prompt caching there


def test_a_plugin_registers_rules_for_its_models() -> None:
    rules = CachingRules(**{**RULES, "input": 0.4, "cached_input": 0.04, "cache_write": 0.4})

    def register_models(register: Callable[[ModelSpec], None]) -> None:
        register(ModelSpec("house-model-1", 32_000, 4_000, "tiktoken:o200k_base", caching=rules))

    name = register_plugin(types.SimpleNamespace(register_models=hookimpl(register_models)), name="house")
    try:
        assert get_model("house-model-1").caching == rules
    finally:
        unregister_plugin(name)


def test_ctxwin_models_json_lists_the_rules() -> None:
    code = "import sys\nfrom ctxwin.cli import main\nsys.exit(main(sys.argv[1:]))"
    result = subprocess.run([sys.executable, "-c", code, "models", "--json"], capture_output=True, text=True,
                            timeout=120, env={"CTXWIN_LOAD_PLUGINS": "", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)["models"]}
    assert rows["gpt-4o"]["caching"]["min_prefix"] == 1024 and rows["gpt-4o"]["caching"]["cached_input"] == 1.25
    assert rows["gpt-3.5-turbo"]["caching"] is None
    assert rows["claude-opus-4-7"]["tokenizer"] == "claude-4.7"
    assert rows["gpt-5.6-sol"]["caching"]["cache_write"] == pytest.approx(5.0)


def test_gpt_56_bills_writes_and_takes_breakpoints_and_a_key() -> None:
    sol, terra, older = (get_model(name).caching for name in ("gpt-5.6", "gpt-5.6-terra", "gpt-5.5"))
    assert get_model("gpt-5.6").name == "gpt-5.6-sol"  # the alias, as OpenAI routes it
    for rules in (sol, terra):
        assert rules is not None and rules.mode == "automatic" and rules.bills_writes
        assert rules.write_ratio == pytest.approx(1.25) and rules.max_breakpoints == 4 and rules.cache_key
        assert (rules.ttl, rules.long_ttl) == ("30m", "12h") and "12h write" in rules.assumed
    # before 5.6: a key routes requests, a write costs what input costs, no markers
    assert older is not None and older.cache_key and not older.bills_writes and older.max_breakpoints == 0
    assert get_model("gpt-5.6").context_window == 1_050_000


def test_anthropic_prices_both_lifetimes() -> None:
    for name in ("claude-sonnet-4-5", "claude-opus-4-7", "claude-sonnet-5", "claude-haiku-4-5"):
        rules = get_model(name).caching
        assert rules is not None and (rules.ttl, rules.long_ttl) == ("5m", "1h")
        assert rules.write_ratio == pytest.approx(1.25) and rules.long_write_ratio == pytest.approx(2.0)
    rules = get_model("claude-opus-4-7").caching
    assert rules is not None
    # 10,000 tokens: 2,000 read, 8,000 written of which 5,000 for an hour
    expected = (2_000 * 0.5 + 3_000 * 6.25 + 5_000 * 10.0) / 1e6
    assert rules.cost(10_000, 2_000, 8_000, written_long=5_000) == pytest.approx(expected)
    with pytest.raises(ValueError, match="long lifetime"):
        rules.cost(10_000, 0, 100, written_long=200)


def test_claude_tokenizer_generations_are_kept_apart() -> None:
    generations = {name: get_model(name).tokenizer for name in
                   ("claude-3-5-sonnet", "claude-opus-4-6", "claude-opus-4-7", "claude-opus-4-8", "claude-sonnet-5")}
    assert generations == {"claude-3-5-sonnet": "claude-3", "claude-opus-4-6": "claude-3",
                           "claude-opus-4-7": "claude-4.7", "claude-opus-4-8": "claude-4.7",
                           "claude-sonnet-5": "claude-5"}
    assert "1.0-1.35x" in get_model("claude-opus-4-7").note


@pytest.mark.parametrize("name", ["gemini-3.1-pro", "gemini-3.5-flash", "deepseek-flash", "gpt-5.4", "gpt-5.2"])
def test_todays_models_resolve_with_sourced_prices(name: str) -> None:
    rules = get_model(name).caching
    assert rules is not None and rules.priced and rules.date == "2026-11-28" and rules.source.startswith("https://")


def test_long_write_needs_a_lifetime() -> None:
    with pytest.raises(ValueError, match="long_ttl"):
        CachingRules(**{**RULES, "long_write": 4.0})
