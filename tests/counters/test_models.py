"""ModelSpec validation, lenient name resolution and the built-in catalogue."""

from __future__ import annotations

from typing import Any

import pytest

from ctxwin.counters import get_counter, get_model
from ctxwin.counters._builtin_models import BUILTIN_MODELS
from ctxwin.counters._models import ModelSpec, name_candidates


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"name": ""}, "name must be a non-empty string"),
    ({"context_window": 0}, "context_window must be a positive int"),
    ({"max_output_tokens": True}, "max_output_tokens must be a positive int"),
    ({"max_output_tokens": 9_000}, "exceeds context_window"),
    ({"counter": ""}, "counter must be a counter spec"),
    ({"aliases": "gpt"}, "aliases must be a tuple"),
])
def test_invalid_specs(kwargs: dict[str, Any], match: str) -> None:
    fields: dict[str, Any] = {
        "name": "m", "context_window": 8_192, "max_output_tokens": 1_024, "counter": "approximate",
    }
    with pytest.raises(ValueError, match=match):
        ModelSpec(**(fields | kwargs))


def test_name_candidates() -> None:
    assert name_candidates("GPT-4o-2024-08-06") == ["GPT-4o-2024-08-06", "gpt-4o-2024-08-06", "gpt-4o"]
    assert name_candidates("ft:gpt-4o-mini-2024-07-18:acme::x1")[-1] == "gpt-4o-mini"
    assert name_candidates("claude-3-5-sonnet@20240620")[-1] == "claude-3-5-sonnet"


@pytest.mark.parametrize(("name", "model"), [
    ("gpt-4o-2024-08-06", "gpt-4o"), ("gpt-4o-2024-05-13", "gpt-4o-2024-05-13"), ("gpt-4-0613", "gpt-4"),
    ("gpt-3.5-turbo-0125", "gpt-3.5-turbo"), ("o3-mini-2025-01-31", "o3-mini"), ("deepseek-chat", "deepseek-v3"),
    ("deepseek-reasoner", "deepseek-r1"), ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet"),
    ("claude-3-5-sonnet-latest", "claude-3-5-sonnet"), ("Gemini-2.5-Pro", "gemini-2.5-pro"),
    ("ft:gpt-4o-mini-2024-07-18:acme::x1", "gpt-4o-mini"),
])
def test_aliases_and_snapshots_resolve(name: str, model: str) -> None:
    assert get_model(name).name == model


def test_unknown_model_lists_close_matches() -> None:
    with pytest.raises(ValueError, match=r"did you mean: .*gpt-4o-mini"):
        get_model("gpt-4o-mni")


def test_catalogue_counters() -> None:
    names = [m.name for m in BUILTIN_MODELS]
    assert len(names) == len(set(names))
    by_name = {m.name: m for m in BUILTIN_MODELS}
    assert by_name["gpt-4o"].counter == "tiktoken:o200k_base"
    assert by_name["gpt-4"].counter == "tiktoken:cl100k_base"
    assert by_name["deepseek-v3"].counter == "hf:deepseek-v3"
    for model in BUILTIN_MODELS:
        if model.name.startswith(("claude", "gemini")):
            pricing = "anthropic" if model.name.startswith("claude") else "gemini"
            assert model.counter == f"approximate:safe,images={pricing}" and model.approximate
            assert "not on Claude's" in model.note or "not on Gemini's" in model.note
        else:
            assert not model.approximate
    assert get_counter("claude-sonnet-4").name == "approximate:safe,images=anthropic"
