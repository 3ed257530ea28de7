"""Recall on text dense with identifiers: facts inside long tool outputs (config keys, JSON fields, log lines) of an
agent run built from the standard library's own source (text these tests did not write), excerpt boundaries, and
questions whose words are a frame the conversation repeats (they must not pull in the other questions)."""

from __future__ import annotations

import email._header_value_parser
import http.cookiejar
import inspect
import random
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import Planner, fit
from ctxwin.planner._planning import SessionTurn
from ctxwin.recall import RecallStore, is_recalled
from ctxwin.recall._store import EXCERPT_CHARS, pieces
from ctxwin.strategies._meter import Meter
from ctxwin.strategies._pairs import find_broken_pairs

COUNTER = "tiktoken:o200k_base"
SUBJECTS = ("Lyon warehouse lease", "Porto billing job", "Oslo staging cluster", "Kyoto vendor contract",
            "Gdansk payroll export", "Leeds backup bucket")
# How a fact sits in a tool output: a dotted config key, a JSON field, a log line (the subject as a snake_case key
# in the first two).
LINES = ("{key}.reference_number = {value}", '    "{key}_reference_number": "{value}",',
         "2026-03-02T10:14:07Z INFO {subject}: reference number resolved to {value}")


def _source_chunks() -> list[str]:
    text = inspect.getsource(http.cookiejar) + inspect.getsource(email._header_value_parser)
    return [text[i : i + 3_000] for i in range(0, len(text) - 3_000, 3_000)]


def agent_run(seed: int) -> tuple[list[BaseMessage], dict[str, str]]:
    """An agent reading source files for many rounds, with one fact per subject planted in the middle of an early
    tool output; the values by subject."""
    rng = random.Random(seed)
    chunks = _source_chunks()
    rng.shuffle(chunks)
    messages: list[BaseMessage] = [SystemMessage("You are a coding agent; read files before you answer.")]
    values: dict[str, str] = {}
    outputs: list[int] = []
    for n, chunk in enumerate(chunks[:40]):
        if n % 3 == 0:
            messages.append(HumanMessage(f"What does round {n // 3} of the parser handle?"))
        call = f"call_{seed}_{n}"
        messages += [AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": f"src/part_{n}.py"},
                                                "id": call}]),
                     ToolMessage(chunk, tool_call_id=call, name="read_file")]
        outputs.append(len(messages) - 1)
        if n % 3 == 2:
            messages.append(AIMessage("It parses headers and cookies as shown."))
    for k, subject in enumerate(SUBJECTS):
        value = "".join(rng.choice(string.ascii_uppercase) for _ in range(3)) + f"-{rng.randrange(10_000, 99_999)}"
        at = outputs[2 + 2 * k]  # early: the fitted request no longer holds it
        lines = str(messages[at].text).split("\n")
        line = LINES[(seed + k) % len(LINES)].format(key=subject.lower().replace(" ", "_"), subject=subject,
                                                     value=value)
        lines.insert(len(lines) // 2, line)
        original = messages[at]
        assert isinstance(original, ToolMessage)
        messages[at] = ToolMessage("\n".join(lines), tool_call_id=original.tool_call_id, name="read_file")
        values[subject] = value
    return messages, values


@pytest.mark.slow
@pytest.mark.parametrize("chain", [None, ["filter", "truncate_tool_output", "summarize", "trim"]])
def test_a_late_question_finds_a_fact_that_sits_only_in_a_tool_output(chain: list[str] | None) -> None:
    found = asked = 0
    for seed in range(3):
        messages, values = agent_run(seed)
        for subject, value in values.items():
            question = f"Earlier you read the {subject} settings. Which reference number did it have?"
            plan = fit([*messages, HumanMessage(question)], counter=COUNTER, model=None, context_window=4_000,
                       reserve_output=0, strategies=chain)
            assert plan.fits and plan.messages[-1].text == question and not find_broken_pairs(plan.messages)
            assert get_counter(COUNTER).count_messages(plan.messages) <= 4_000
            asked += 1
            found += any(value in str(m.text) for m in plan.messages)
    assert found >= 0.9 * asked, f"{found}/{asked}"


def test_a_word_of_a_snake_case_key_finds_the_line() -> None:
    store = RecallStore()
    output = "\n".join([*(f"opt_{i}.timeout = {i}" for i in range(30)), "quito_support_escalation.version = v1.29.1",
                        *(f"opt_{i}.retries = {i}" for i in range(30))])
    store.add([HumanMessage("Read the config."), ToolMessage(output, tool_call_id="c1", name="read_file")])
    found = store.search("Earlier: the Quito support escalation, which version?", min_score=0.5)
    assert found and "v1.29.1" in found[0].text and found[0].tool == "read_file"


@settings(max_examples=40)
@given(st.lists(st.text(alphabet=string.ascii_letters + ".,", min_size=1, max_size=EXCERPT_CHARS // 3),
                min_size=1, max_size=60))
def test_prose_is_cut_between_words(words: list[str]) -> None:
    text = " ".join(words)
    parts = pieces(text)
    assert "".join(parts) == text
    assert all(len(p) <= EXCERPT_CHARS for p in parts)
    assert all(p.endswith(" ") for p in parts[:-1])


def test_a_sentence_is_not_split_when_a_sentence_end_is_near() -> None:
    fact = "I looked it up: the Graz tax filing has account id acct_bctv918837."
    text = "Return True if it is a directory. " * 8 + fact
    part = next(p for p in pieces(text) if "Graz" in p)
    assert fact in part


def test_a_question_does_not_recall_the_other_questions_that_share_its_frame() -> None:
    messages: list[BaseMessage] = []
    for n, chunk in enumerate(_source_chunks()[:40]):
        if n % 4 == 0:
            messages.append(HumanMessage(f"How does `handler_{n}` interact with the surrounding logic?"))
        messages.append(ToolMessage(chunk, tool_call_id=f"c{n}", name="read_file"))
    store = RecallStore()
    store.add(messages)
    assert store.search("How does `unregister_unpack_format` interact with the surrounding logic?",
                        min_score=0.5) == []
    found = store.search("How does `handler_8` interact with the surrounding logic?", min_score=0.5)
    assert [e.text for e in found] == ["How does `handler_8` interact with the surrounding logic?"]


@pytest.mark.slow
def test_a_session_recalls_nothing_for_a_question_about_what_was_never_said() -> None:
    never = "Going back to the Madrid office lease: what was its reference number?"
    messages, _values = agent_run(5)
    session = Planner(counter=COUNTER, context_window=4_000, reserve_output=0).session()
    for message in messages:
        session.add_messages([message])
        if isinstance(message, HumanMessage):
            session.plan()
    session.add_messages([HumanMessage(never)])
    plan = session.plan()
    assert plan.fits and plan.messages[-1].text == never
    assert get_counter(COUNTER).count_messages(plan.messages) <= 4_000
    assert not [m for m in plan.messages if is_recalled(m) and never in str(m.text)]


@pytest.mark.slow
@pytest.mark.parametrize("chain", [None, ["filter", "truncate_tool_output", "summarize", "trim"]])
def test_a_session_brings_back_a_fact_that_sits_only_in_a_tool_output(chain: list[str] | None) -> None:
    found = asked = 0
    for seed in range(2):
        messages, values = agent_run(seed)
        for subject, value in values.items():
            question = f"Earlier you read the {subject} settings. Which reference number did it have?"
            session = Planner(counter=COUNTER, context_window=4_000, reserve_output=0, strategies=chain).session()
            for message in messages:
                session.add_messages([message])
                if isinstance(message, HumanMessage):
                    session.plan()
            session.add_messages([HumanMessage(question)])
            plan = session.plan()
            assert plan.fits and plan.messages[-1].text == question and not find_broken_pairs(plan.messages)
            assert get_counter(COUNTER).count_messages(plan.messages) <= 4_000
            asked += 1
            found += any(value in str(m.text) for m in plan.messages)
    assert found >= 0.9 * asked, f"{found}/{asked}"


def test_a_cut_whose_kept_part_fills_its_target_recalls_within_the_budget() -> None:
    """A session's cut aims below its budget (``target``); when what must stay (here a long system prompt and the
    question) fills that target, recall uses the room left under the budget."""
    text = inspect.getsource(http.cookiejar)
    counter = get_counter(COUNTER)
    messages: list[BaseMessage] = [SystemMessage("Answer questions about this code:\n" + text[40_000:43_500]),
                                   HumanMessage("Remember: the Lyon warehouse lease reference is LY-2231-X."),
                                   AIMessage("Noted.")]
    for i in range(10):
        messages += [HumanMessage("Read this:\n" + text[i * 2_000 : (i + 1) * 2_000]), AIMessage("It parses cookies.")]
    messages.append(HumanMessage("Going back to the Lyon warehouse lease: what was its reference number?"))
    target = counter.count_messages([messages[0], messages[-1]]) + 10
    planner = Planner(counter=counter, context_window=2_000, reserve_output=0)
    plan = planner.plan_run(messages, Meter(counter), turn=SessionTurn(target=target)).plan
    assert plan.recalled is not None and any("LY-2231-X" in str(m.text) for m in plan.messages)
    assert plan.fits and target < counter.count_messages(plan.messages) <= 2_000
    assert plan.messages[-1] is messages[-1] and plan.messages[0] is messages[0]


@pytest.mark.slow
def test_in_an_agent_round_the_question_is_searched_apart_from_the_newest_tool_call() -> None:
    """The agent answers the late question with a tool call whose path and pattern were never said: they must not
    outweigh the question's subject (and what the call itself relates to still comes back)."""
    found = asked = 0
    for seed in range(2):
        messages, values = agent_run(seed)
        for n, (subject, value) in enumerate(values.items()):
            question = f"Earlier you read the {subject} settings. Which reference number did it have?"
            call = f"round_{n}"
            grep = {"name": "grep", "args": {"pattern": "def main", "path": "src/cli.py"}, "id": call}
            plan = fit([*messages, HumanMessage(question), AIMessage("", tool_calls=[grep]),
                        ToolMessage("src/cli.py:12: def main(argv=None):", tool_call_id=call, name="grep")],
                       counter=COUNTER, model=None, context_window=4_000, reserve_output=0)
            assert plan.fits and not find_broken_pairs(plan.messages)
            assert plan.recalled is not None and "grep" in plan.recalled.query
            asked += 1
            found += any(value in str(m.text) for m in plan.messages)
    assert found >= 0.9 * asked, f"{found}/{asked}"
