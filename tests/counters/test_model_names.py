"""Model names as users copy them from providers and gateways (issue 17, item 4)."""

from __future__ import annotations

import pytest

from ctxwin.counters import TokenizerDataError, get_counter, get_model
from ctxwin.counters._builtin_models import BUILTIN_MODELS
from ctxwin.counters._models import name_candidates


@pytest.mark.parametrize(("name", "model"), [
    ("openai/gpt-4o", "gpt-4o"), ("openai:gpt-4o-mini", "gpt-4o-mini"), ("azure/gpt-4o-mini", "gpt-4o-mini"),
    ("gpt-35-turbo", "gpt-3.5-turbo"), ("azure/gpt-35-turbo-0125", "gpt-3.5-turbo"),
    ("gpt-35-turbo-16k", "gpt-3.5-turbo-16k"),
    ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"), ("anthropic/claude-3-5-sonnet-latest", "claude-3-5-sonnet"),
    ("bedrock/us.anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-3-5-sonnet"),
    ("anthropic.claude-3-haiku-20240307-v1:0", "claude-3-haiku"),
    ("eu.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4"),
    ("global.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
    ("vertex_ai/claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet"), ("vertex_ai/gemini-2.5-pro", "gemini-2.5-pro"),
    ("gemini-2.0-flash-001", "gemini-2.0-flash"), ("gemini/gemini-1.5-pro-latest", "gemini-1.5-pro"),
    ("models/gemini-1.5-pro-002", "gemini-1.5-pro"), ("gemini-2.5-flash-preview-05-20", "gemini-2.5-flash"),
    ("openrouter/anthropic/claude-3.7-sonnet:thinking", "claude-3-7-sonnet"),
    ("openrouter/openai/gpt-4o", "gpt-4o"), ("OpenAI/GPT-4o-2024-08-06", "gpt-4o"),
    ("deepseek/deepseek-chat", "deepseek-v3"), ("ft:gpt-4o-mini-2024-07-18:acme::x1", "gpt-4o-mini"),
])
def test_provider_spellings_resolve(name: str, model: str) -> None:
    assert get_model(name).name == model
    assert get_counter(name) is get_counter(model)  # a model name is a counter spec too, colons and all


@pytest.mark.parametrize(("repo", "model"), [
    ("deepseek-ai/DeepSeek-V3", "deepseek-v3"), ("deepseek-ai/DeepSeek-R1", "deepseek-r1"),
    ("deepseek-ai/DeepSeek-V3.1-Terminus", "deepseek-v3.1"), ("Qwen/Qwen3-8B", "qwen3-8b"),
])
def test_hub_repo_ids_resolve_as_the_models_name(repo: str, model: str) -> None:
    assert get_model(repo).name == model


def test_every_model_resolves_under_an_owner() -> None:
    """``owner/name`` is how the Hub, vLLM and TGI name a model: the registry's names need no alias for it."""
    for spec in BUILTIN_MODELS:
        assert get_model(f"some-lab/{spec.name.upper()}").name == spec.name


def test_a_registered_snapshot_wins_over_its_family() -> None:
    assert get_model("openai/gpt-4o-2024-05-13").name == "gpt-4o-2024-05-13"
    assert get_model("deepseek-v3").name == "deepseek-v3"  # '-v3' is not stripped before the name itself is tried


@pytest.mark.parametrize(("name", "suggested"), [
    ("bedrock/us.anthropic.claude-sonet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
    ("openai/gpt-4o-mnii", "gpt-4o-mini"),
    ("gemini-2.5-flsh", "gemini-2.5-flash"),
])
def test_unknown_names_get_at_most_three_suggestions(name: str, suggested: str) -> None:
    with pytest.raises(ValueError, match=r"unknown model .*did you mean: ") as error:
        get_model(name)
    suggestions = str(error.value).split("did you mean: ", 1)[1].split("?", 1)[0].split(", ")
    assert suggested in suggestions and len(suggestions) <= 3


@pytest.mark.slow
def test_every_model_has_limits_and_a_counter_that_builds() -> None:
    for model in BUILTIN_MODELS:
        assert 0 < model.max_output_tokens <= model.context_window
        if model.counter == "mistral:unshipped":  # no offline tokenizer: refuses, saying how to count it
            with pytest.raises(TokenizerDataError, match="not available offline"):
                get_counter(model.name)
            continue
        assert get_counter(model.name).count_text("hello") > 0


@pytest.mark.slow
def test_suffix_stripping_is_bounded() -> None:
    # A name of 100,000 stacked suffixes: a loop stripping them one by one over the whole string would be quadratic.
    name = "gpt-4o" + "-latest" * 100_000
    assert len(name_candidates(name)) <= 8
    with pytest.raises(ValueError, match="unknown model"):
        get_model(name)
