"""Text holding surrogates (a JSON "\\ud800" escape decodes to one) is counted by every built-in counter, as
tiktoken counts it: surrogate pairs as their character, lone surrogates as U+FFFD."""

from __future__ import annotations

import json

import pytest

from ctxwin.counters import get_counter
from ctxwin.counters._base import scalar_text
from ctxwin.messages import convert_to_messages

SPECS = ["approximate", "approximate:safe", "approximate:cl100k_base", "tiktoken:o200k_base", "hf:deepseek-v3"]
LONE = json.loads('"before \\ud800 after \\udfff"')  # what a JSON file can hold


def test_scalar_text_is_what_tiktoken_encodes() -> None:
    assert scalar_text(LONE) == "before \ufffd after \ufffd"
    assert scalar_text("\ud83d\ude00") == "😀"  # a pair written as two escapes is one character
    assert scalar_text("plain ü") == "plain ü"


@pytest.mark.parametrize("spec", SPECS)
def test_every_counter_counts_surrogates_as_tiktoken_reads_them(spec: str) -> None:
    counter = get_counter(spec)
    assert counter.count_text(LONE) == counter.count_text(scalar_text(LONE)) > 0
    assert counter.count_text("\ud83d\ude00") == counter.count_text("😀")
    assert counter.count_texts([LONE, "ok"]) == [counter.count_text(LONE), counter.count_text("ok")]
    messages = convert_to_messages([{"role": "user", "content": LONE, "name": "ann"}])
    assert counter.count_messages(messages) == counter.count_messages(
        convert_to_messages([{"role": "user", "content": scalar_text(LONE), "name": "ann"}])
    )


def test_safe_approximation_stays_above_tiktoken_with_surrogates() -> None:
    text = LONE * 50
    assert get_counter("approximate:safe").count_text(text) >= get_counter("tiktoken:o200k_base").count_text(text)
