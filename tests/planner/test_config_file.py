"""``FitConfig`` checked when it is made (names, the window against the model's, a misspelt option), and saved to
and loaded from TOML and JSON files: what a file holds loads back equal, what it cannot hold is refused by name."""

from __future__ import annotations

import json
import pickle
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxwin
from ctxwin import FitConfig, fit
from ctxwin.counters import ApproximateCounter
from ctxwin.messages import HumanMessage, SystemMessage
from ctxwin.planner._config import CACHE_TTLS
from ctxwin.planner._option_error import OptionError
from ctxwin.strategies._trim import TrimToBudget
from ctxwin.strategies._truncate import TruncateToolOutput

CHAT = [SystemMessage("Be brief."), HumanMessage("hi")]
TOOL = {"type": "function", "function": {"name": "grep", "description": "search the logs for a pattern",
                                         "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"model": "gpt4o"}, ValueError, r"unknown model 'gpt4o'; did you mean: gpt-4o"),
        ({"counter": "tiktokn"}, ValueError, r"unknown counter or model 'tiktokn'; did you mean: tiktoken"),
        ({"strategies": ["trim", "shred"]}, ValueError, r"strategies\[1\]: unknown strategy 'shred'"),
        ({"strategies": "trimm"}, ValueError, r"unknown strategy 'trimm'"),
        ({"reserve": 1}, TypeError, r"unknown option 'reserve' \(did you mean 'reserve_output'\?\)"),
        ({"model": "gpt-4o", "context_window": 1_000_000}, ValueError,
         r"context_window 1,000,000 is more than gpt-4o's context window of 128,000"),
        ({"model": "gpt-4o", "reserve_output": 128_000}, ValueError, r"reserve_output \(128000\) must be smaller"),
    ],
)
def test_a_config_is_checked_when_it_is_made(options: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        FitConfig(**options)
    with pytest.raises(error, match=match):  # the same check, whichever way the options come
        fit(CHAT, **{"model": None, "counter": "approximate", "context_window": 4_000, **options})


def test_a_window_above_the_models_is_refused_naming_the_option() -> None:
    """The CLI names a refused option's flag from ``OptionError.option``; fit_many's workers send errors back
    pickled. A window within the model's, or without a model, is taken."""
    with pytest.raises(OptionError) as caught:
        FitConfig(model="gpt-4o", context_window=1_000_000)
    assert caught.value.option == "context_window"
    again = pickle.loads(pickle.dumps(caught.value))
    assert (again.option, str(again)) == ("context_window", str(caught.value))
    assert FitConfig(model="gpt-4o", context_window=128_000).context_window == 128_000
    assert fit(CHAT, None, counter="approximate", context_window=1_000_000).budget.context_window == 1_000_000


# Options as a file holds them (and FitConfig takes them): model-less, so that any window is valid.
_shares = st.one_of(st.none(), st.floats(min_value=0.01, max_value=1.0))
_options = st.fixed_dictionaries(
    {"counter": st.just("approximate"), "context_window": st.integers(2_000, 400_000)},
    optional={
        "reserve_output": st.integers(0, 1_999),
        "safety_margin": st.integers(0, 10_000),
        "tools": st.just([TOOL]),
        "tool_choice": st.sampled_from(["auto", "required", {"type": "function", "function": {"name": "grep"}}]),
        "strategies": st.one_of(st.just("trim"), st.lists(st.sampled_from(["filter", "truncate_tool_output",
                                                                          "summarize", "trim"]), min_size=1)),
        "summarizer": st.just(ctxwin.extractive_summarizer),
        "keep_last": st.integers(0, 50),
        "strict": st.booleans(),
        "broken_tool_pairs": st.sampled_from(["drop", "keep"]),
        "cache_stable": st.booleans(),
        "low_water": _shares,
        "tool_output_cap": _shares,
        "keep_first": _shares,
        "expected_gap": st.one_of(st.none(), st.floats(min_value=0.5, max_value=86_400.0)),
        "cache_ttl": st.sampled_from([None, *CACHE_TTLS]),
        "cache_key": st.text(st.characters(exclude_categories=("Cs",)), min_size=1).filter(str.strip),
        "recall_share": st.floats(min_value=0.0, max_value=0.99),
        "ledger_share": st.floats(min_value=0.0, max_value=0.99),
    },
)


def _round_trips(options: dict[str, Any], suffix: str) -> None:
    config = FitConfig(**options)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"config{suffix}"
        config.save(path)
        assert FitConfig.load(path) == config


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(_options, st.sampled_from([".toml", ".json"]))
def test_a_saved_config_loads_back_equal(options: dict[str, Any], suffix: str) -> None:
    _round_trips(options, suffix)


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_a_saved_config_loads_back_equal_on_a_few_examples(suffix: str) -> None:
    _round_trips({"counter": "approximate", "context_window": 8_000}, suffix)
    _round_trips({"counter": "approximate", "context_window": 8_000, "keep_first": None, "tools": [TOOL],
                  "strategies": ["summarize", "trim"], "summarizer": ctxwin.extractive_summarizer,
                  "cache_key": 'tenant "7"\n\u00e9\U0001f600', "recall_share": 0.0, "cache_stable": False}, suffix)


def test_a_file_holds_only_what_differs_from_the_defaults_and_names_strategies(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    FitConfig(model="gpt-4o-mini", reserve_output=1_000, keep_first=None, strategies=[TrimToBudget()]).save(path)
    assert path.read_text(encoding="utf-8") == (
        'model = "gpt-4o-mini"\nreserve_output = 1000\nstrategies = ["trim"]\nkeep_first = false\n'
    )


def _unwritable(option: str) -> dict[str, Any]:
    return {
        "summarizer": {"summarizer": lambda messages: "summary"},
        "counter": {"counter": ApproximateCounter(), "context_window": 4_000},
        "strategies": {"strategies": ["trim", TruncateToolOutput(max_tokens=10)]},
    }[option]


@pytest.mark.parametrize(
    ("option", "match"),
    [
        ("summarizer", "summarizer .* cannot be written to a file"),
        ("counter", "counter .* cannot be written"),
        ("strategies", r"strategies\[1\] .* cannot be written"),
    ],
)
@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_what_a_file_cannot_hold_is_refused_naming_the_option(
    tmp_path: Path, option: str, match: str, suffix: str
) -> None:
    path = tmp_path / f"config{suffix}"
    with pytest.raises(OptionError, match=match) as caught:
        FitConfig(**_unwritable(option)).save(path)
    assert caught.value.option == option and not path.exists()


def test_a_null_is_refused_in_toml_and_kept_in_json(tmp_path: Path) -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "default": None}}}
    config = FitConfig(model="gpt-4o", tools=[tool])
    with pytest.raises(OptionError, match=r"tools\[0\]\.function\.parameters\.default is null") as caught:
        config.save(tmp_path / "config.toml")
    assert caught.value.option == "tools"
    config.save(tmp_path / "config.json")
    assert FitConfig.load(tmp_path / "config.json") == config


@pytest.mark.parametrize(
    ("name", "text", "error", "match"),
    [
        ("c.toml", "reserve = 1000\n", TypeError, r"c\.toml: unknown option 'reserve' \(did you mean 'reserve_output'"),
        ("c.json", '{"context_window": -1}', ValueError, r"c\.json: context_window must be a non-negative int"),
        ("c.toml", 'model = "gpt4o"\n', ValueError, r"c\.toml: unknown model 'gpt4o'; did you mean: gpt-4o"),
        ("c.toml", 'summarizer = "gpt"\n', ValueError, r"c\.toml: summarizer names the built-in summarizer"),
        ("c.toml", "model = \n", ValueError, r"c\.toml: not valid TOML"),
        ("c.json", "[1, 2]", ValueError, r"c\.json: expected an object of options"),
        ("c.yaml", "model: gpt-4o\n", ValueError, r"c\.yaml: a configuration file is TOML \(\.toml\) or JSON"),
    ],
)
def test_a_bad_file_is_refused_naming_it(tmp_path: Path, name: str, text: str, error: type, match: str) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(error, match=match) as caught:
        FitConfig.load(tmp_path / name)
    assert str(caught.value).count(name) == 1
    with pytest.raises(ValueError, match=r"cannot read it"):
        FitConfig.load(tmp_path / "missing.toml")


def test_a_loaded_config_plans_as_the_same_options(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"counter": "approximate", "context_window": 300, "reserve_output": 0,
                                "summarizer": "extractive", "keep_last": 2}), encoding="utf-8")
    messages = [SystemMessage("Be brief."), *(HumanMessage(f"question {i} about host db-{i}") for i in range(40))]
    loaded = fit(messages, config=FitConfig.load(path))
    direct = fit(messages, None, counter="approximate", context_window=300, reserve_output=0,
                 summarizer=ctxwin.extractive_summarizer, keep_last=2)
    assert loaded.messages == direct.messages and any(step.name == "summarize" for step in loaded.steps)
