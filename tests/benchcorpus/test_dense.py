"""The fact-dense bench (benchmarks/dense.py, planted.py --dense) on its standard-library sources: facts planted
where it says, late questions whose fact is in a request count and whose fact is not do not, and questions about
things never said name nothing the conversation holds."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from ctxwin.cli._bench.retention import probes_kept
from ctxwin.counters import get_counter
from ctxwin.messages import HumanMessage, SystemMessage, ToolMessage, convert_to_messages

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"


def _load(name: str) -> ModuleType:
    """``benchmarks/`` is not a package: the module is imported from its path (its siblings from sys.path)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def dense() -> ModuleType:
    return _load("dense")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["chat", "agent"])
def test_facts_are_planted_once_in_the_first_70_percent_and_questions_name_them(dense: ModuleType, kind: str) -> None:
    conversation = dense.dense("stdlib-code", kind, 6_000, 1, facts=12, questions=6, never_said=2)
    texts = [str(m.get("content") or "") for m in conversation.messages]
    before = [sum(len(t) for t in texts[:i]) for i in range(len(texts))]
    assert {f.placement for f in conversation.facts} >= ({"keep", "user", "tool"} if kind == "agent" else {"keep"})
    for fact in conversation.facts:
        where = [i for i, t in enumerate(texts) if fact.value in t]
        assert len(where) == 1 and before[where[0]] < 0.75 * before[-1]
        role = conversation.messages[where[0]]["role"]
        assert role == {"keep": "user", "user": "user", "assistant": "assistant", "tool": "tool"}[fact.placement]
    asked = [q for q in conversation.questions if q["needs"]]
    never = [q for q in conversation.questions if not q["needs"]]
    assert len(asked) == 6 and len(never) == 2
    values = {f.value: f.subject for f in conversation.facts}
    for question in asked:
        assert values[question["needs"][0]] in question["question"]
    whole = "\n".join(texts)
    for question in never:
        subject = question["question"].split("the ", 1)[1].split(":")[0].split(".")[0].split(" —")[0]
        assert subject not in whole


def test_a_probe_counts_when_its_fact_is_in_the_request_and_not_when_it_is_gone(dense: ModuleType) -> None:
    conversation = dense.dense("pydoc-topics", "chat", 4_000, 2, facts=6, questions=6, never_said=0)
    question = conversation.questions[0]
    messages = convert_to_messages(conversation.ending(question["question"]))
    holder = next(i for i, m in enumerate(messages) if question["needs"][0] in m.text)
    assert probes_kept([question], messages) == [True]
    assert probes_kept([question], messages[:holder] + messages[holder + 1:]) == [False]


@pytest.mark.slow
def test_what_recall_adds_is_counted_and_nothing_else(dense: ModuleType) -> None:
    counter = get_counter("tiktoken:o200k_base")
    conversation = dense.dense("stdlib-code", "agent", 4_000, 3, facts=4, questions=0, never_said=1)
    original = convert_to_messages(conversation.ending(conversation.questions[0]["question"]))
    tool = next(m for m in original if isinstance(m, ToolMessage))
    shortened = tool.model_copy(update={"content": tool.text[:100] + "…"})
    assert dense.added_tokens([*original[:3], shortened, original[-1]], original, counter) == 0
    recalled = SystemMessage("Recalled from message 4: the Lyon warehouse lease has reference LWL-48213.")
    assert dense.added_tokens([*original[:3], recalled, original[-1]], original, counter) == \
        counter.count_message(recalled)
    assert isinstance(original[-1], HumanMessage)
