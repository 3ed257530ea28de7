"""Faster tokenizer engines: a tokenizer counts with one only where engines.json records the installed version as
exact (the differential of benchmarks/engine_differential.py, re-run here on the same corpora and adversarial
texts), and the counts are the reference's token for token."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters._families.deepseek import DeepSeekV4Counter
from ctxwin.counters._families.fast_engines import (
    choose_engine,
    engine_record,
    family_engine,
    installed_engines,
)
from ctxwin.counters._families.hf_counter import HFCounter
from ctxwin.counters._families.hf_sources import deepseek_v3_tokenizer, deepseek_v4_json
from ctxwin.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from engine_differential import adversarial_texts, hf_engines

FAMILIES = {"deepseek-v3": lambda: deepseek_v3_tokenizer().read_bytes(),
            "deepseek-v4": lambda: deepseek_v4_json()[0].encode()}
REFERENCE = f"tokenizers {tokenizers.__version__}"


def _verified(family: str) -> list[tuple[str, str]]:
    """The (engine, version) pairs engines.json says count ``family`` exactly and faster, that are installed."""
    installed = installed_engines()
    return [(engine, version) for engine, versions in engine_record()["families"][family]["engines"].items()
            for version, verdict in versions.items()
            if installed.get(engine) == version and verdict["differing"] == 0 and verdict["speedup"] > 1]


def _engines_to_check() -> list[tuple[str, str]]:
    return [(family, engine) for family in FAMILIES for engine, _ in _verified(family)]


# The adversarial runs longer than this are read in the slow tier only (they take most of the reference's time).
LONG_RUN = 5_000


def _adversarial(data: bytes) -> list[str]:
    """The differential's texts without its multi-megabyte one (the slow tests read the corpora)."""
    return adversarial_texts([token["content"] for token in json.loads(data)["added_tokens"]], ["a b"])


def test_the_record_names_each_shipped_tokenizer_by_its_sha256() -> None:
    import hashlib

    families = engine_record()["families"]
    for family, data in FAMILIES.items():
        assert families[family]["sha256"] == hashlib.sha256(data()).hexdigest()


def test_an_unverified_engine_version_counts_with_the_reference() -> None:
    data = FAMILIES["deepseek-v3"]()
    choice = choose_engine(data, REFERENCE, installed={"kitoken": "0.0.1-unverified"})
    assert choice.engine == REFERENCE and choice.encode is None
    assert "kitoken 0.0.1-unverified is not a verified version" in choice.reason
    absent = choose_engine(data, REFERENCE, installed={})
    assert absent.engine == REFERENCE and "kitoken is not installed" in absent.reason
    # tokie was measured and is recorded as not exact: it is never chosen, and the reason says where it differs.
    assert "tokie" in absent.reason and "documents" in absent.reason


def test_unknown_files_and_explicit_reference_count_with_the_reference() -> None:
    data = FAMILIES["deepseek-v3"]()
    unknown = choose_engine(data + b" ", REFERENCE)
    assert unknown.engine == REFERENCE and "no faster engine was verified" in unknown.reason
    assert choose_engine(data, REFERENCE, mode="reference").engine == REFERENCE
    assert choose_engine(None, REFERENCE).engine == REFERENCE
    with pytest.raises(ValueError, match="engine must be one of 'auto', 'reference', got 'fastest'"):
        choose_engine(data, REFERENCE, mode="fastest")


def test_family_engine_says_which_engine_and_why() -> None:
    line = family_engine("deepseek-v3", REFERENCE)
    used = _verified("deepseek-v3")
    assert line.startswith(f"deepseek-v3: {used[0][0]} {used[0][1]}, exact" if used else f"deepseek-v3: {REFERENCE}")
    assert "tiktoken" in family_engine("tiktoken:o200k_base", "tiktoken") and "never" not in line
    assert family_engine("no-such-family", "ref") == "no-such-family: ref (no faster engine was tried)"


@pytest.mark.parametrize(("family", "engine"), _engines_to_check())
def test_verified_engine_reads_adversarial_text_as_the_reference(family: str, engine: str) -> None:
    data = FAMILIES[family]()
    reference = tokenizers.Tokenizer.from_str(data.decode())
    fast = hf_engines(data, [engine])[engine]
    texts = [text for text in _adversarial(data) if len(text) <= LONG_RUN]
    assert [list(fast(t)) for t in texts] == [reference.encode(t, add_special_tokens=False).ids for t in texts]


@pytest.mark.slow
@pytest.mark.parametrize(("family", "engine"), _engines_to_check())
def test_verified_engine_reads_every_corpus_document_as_the_reference(family: str, engine: str) -> None:
    """The corpora, and the adversarial runs too long for the fast test above."""
    from corpus_more import evaluation_docs

    data = FAMILIES[family]()
    reference = tokenizers.Tokenizer.from_str(data.decode())
    fast = hf_engines(data, [engine])[engine]
    documents = [doc.text for doc in evaluation_docs()] + [t for t in _adversarial(data) if len(t) > LONG_RUN]
    differing = [i for i, text in enumerate(documents)
                 if list(fast(text)) != reference.encode(text, add_special_tokens=False).ids]
    assert differing == []


@pytest.fixture(scope="module", params=list(FAMILIES))
def counters(request: pytest.FixtureRequest) -> dict[str, tuple[HFCounter, HFCounter]]:
    """A family's counter with its chosen engine and with the reference (one family a test: each takes a while)."""
    if request.param == "deepseek-v3":
        return {"deepseek-v3": (HFCounter("deepseek-v3"), HFCounter("deepseek-v3", engine="reference"))}
    return {"deepseek-v4": (DeepSeekV4Counter(), DeepSeekV4Counter(engine="reference"))}


def test_counters_name_their_engine(counters: dict[str, tuple[HFCounter, HFCounter]]) -> None:
    for family, (auto, reference) in counters.items():
        assert reference.engine.engine == REFERENCE
        verified = _verified(family)
        assert auto.engine.engine == (f"{verified[0][0]} {verified[0][1]}" if verified else REFERENCE)


CONVERSATION: list[Any] = [
    SystemMessage("You are terse.  \n\n"), HumanMessage("Weather in 東京?   ②"),
    AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "東京"}, "id": "call_1"}]),
    ToolMessage('{"temp": 21,      "unit": "c"}\n\n\n', tool_call_id="call_1"),
    AIMessage("It is 21 °C.<｜end▁of▁sentence｜>"), HumanMessage("x\ud800y 谢谢"),
]


def test_message_paths_count_as_the_reference(counters: dict[str, tuple[HFCounter, HFCounter]]) -> None:
    for auto, reference in counters.values():
        assert auto.count_messages(CONVERSATION) == reference.count_messages(CONVERSATION)
        assert auto.count_message_batch(CONVERSATION) == reference.count_message_batch(CONVERSATION)
        assert [auto.count_message(m) for m in CONVERSATION] == [reference.count_message(m) for m in CONVERSATION]


# Any characters, and lone surrogates (from JSON "\ud800" escapes), which the engines refuse.
WITH_SURROGATES = st.characters() | st.sampled_from("\ud800\udfff\ud83d ")


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.text(alphabet=WITH_SURROGATES, max_size=200), max_size=5))
def test_text_counts_equal_the_reference(counters: dict[str, tuple[HFCounter, HFCounter]], texts: list[str]) -> None:
    for auto, reference in counters.values():
        expected = [reference.count_text(t) for t in texts]
        assert [auto.count_text(t) for t in texts] == expected
        assert auto.count_texts(texts) == expected
