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

from ctxwin.counters import get_model, list_models
from ctxwin.counters.caching import CachingRules
from ctxwin.counters.models import ModelSpec
from ctxwin.hookspecs import hookimpl
from ctxwin.plugins import register_plugin, unregister_plugin

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
    unpriced = get_model("deepseek-v4-pro").caching
    assert unpriced is not None and not unpriced.priced and "not in the sources" in unpriced.assumed
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
