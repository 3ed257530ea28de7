"""A cache-stable session's cut keeps a fixed head (``keep_first``): the first messages after the system prompt, as
first sent, so the request after a cut reads them from the cache; the middle is dropped instead."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import Plan, Planner, PlanSession
from ctxwin.planner._config import DEFAULT_KEEP_FIRST
from ctxwin.planner._cut_policy import AGENT_LOW_WATER, DEFAULT_LOW_WATER
from ctxwin.strategies._base import Budget, StepContext, working_set_start
from ctxwin.strategies._ledger import is_ledger
from ctxwin.strategies._meter import Meter
from ctxwin.strategies._pairs import find_broken_pairs
from ctxwin.strategies._reasoning import ClearReasoning
from ctxwin.strategies._summarize import extractive_summarizer, is_summary
from ctxwin.strategies._truncate import TruncateToolOutput

from .test_cache_session import as_json, chat, replay, request_points
from .test_plan_properties import TOOLS
from .test_planner import WORDS

GPT4O = get_counter("gpt-4o")
MIN_PREFIX = 1024  # gpt-4o's minimum cacheable prefix


def agent_run(seed: int, rounds: int = 40, user_every: int = 0) -> list[BaseMessage]:
    """An agent run: a system prompt, a task, then tool rounds (some parallel) with outputs of a few to a few
    thousand tokens, a reply now and then; with ``user_every``, a new user message every that many rounds."""
    rng = random.Random(seed)

    def text(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    out: list[BaseMessage] = [SystemMessage("You are a coding agent. " + text(30), id="sys"),
                              HumanMessage("Fix the failing test. " + text(rng.randint(5, 60)), id="task")]
    for r in range(rounds):
        if user_every and r and r % user_every == 0:
            out.append(HumanMessage("Now also " + text(rng.randint(3, 30)), id=f"u{r}"))
        ids = [f"c{r}_{k}" for k in range(rng.choice([1, 1, 2, 3]))]
        out.append(AIMessage(text(rng.randint(0, 20)), id=f"a{r}",
                             tool_calls=[{"name": "search", "args": {"q": text(2)}, "id": i} for i in ids]))
        out += [ToolMessage(text(rng.choice([20, 150, 400, 900, 1500])), tool_call_id=i, id=f"r{i}") for i in ids]
        if rng.random() < 0.2:
            out.append(AIMessage(text(rng.randint(5, 60)), id=f"b{r}"))
    return out


def turns(session: PlanSession, messages: list[BaseMessage]) -> Iterator[tuple[Plan, list[BaseMessage]]]:
    """``replay``, one request at a time: the session's state is the one after the request given."""
    done = 0
    for end in request_points(messages):
        session.add_messages(messages[done:end])
        done = end
        yield session.plan(), messages[:end]


def shared_tokens(before: list[BaseMessage], after: list[BaseMessage], tools: list | None = None) -> int:
    """The tokens of the leading messages ``after`` shares with ``before``, equal as sent (OpenAI's form)."""
    same = 0
    for x, y in zip(as_json(before), as_json(after), strict=False):
        if x != y:
            break
        same += 1
    return GPT4O.count_messages(after[:same], tools=tools) if same else 0


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 100_000),
    window=st.integers(3_000, 12_000),
    low_water=st.floats(0.3, 0.9),
    user_every=st.sampled_from([0, 0, 4, 9]),
    summarize=st.booleans(),
    tools=st.booleans(),
    keep_first=st.sampled_from([0.2, 0.5]),
)
def test_cuts_keep_the_head_and_every_request_stays_valid(
    seed: int, window: int, low_water: float, user_every: int, summarize: bool, tools: bool, keep_first: float
) -> None:
    messages = agent_run(seed, user_every=user_every)
    wanted = TOOLS if tools else None
    planner = Planner("gpt-4o", context_window=window, reserve_output=0, tools=wanted,
                      summarizer=extractive_summarizer if summarize else None)
    session = planner.session(low_water=low_water, keep_first=keep_first)
    head: list[str] | None = None  # the head as sent, once chosen
    previous: list[BaseMessage] | None = None
    for plan, history in turns(session, messages):
        sent = list(plan.messages)
        assert plan.fits and GPT4O.count_messages(sent, tools=wanted) <= planner.budget.max_input_tokens
        assert not find_broken_pairs(sent)  # tool pairs whole
        last_user = next(m for m in reversed(history) if isinstance(m, HumanMessage))
        assert any(m is last_user for m in sent)  # the last user message
        if session.head and head is None:
            head = as_json(session.head)
            assert previous is not None and as_json(previous)[1 : 1 + len(head)] == head  # as it was sent before
            assert not find_broken_pairs([sent[0], *session.head])  # it ends where no call waits for results
        if head is not None and session.head:  # the head, byte for byte, after the system prompt of every request
            assert as_json(sent)[1 : 1 + len(head)] == head
            assert not any(is_summary(m) for m in sent[1 : 1 + len(head)])  # a summary goes after it
            assert plan.cache is not None
            if plan.cache.cut:  # the cut reads the system prompt and the head from the cache
                assert shared_tokens(previous or [], sent, wanted) >= MIN_PREFIX
                assert plan.cache.cached_tokens >= MIN_PREFIX
        previous = sent


@pytest.mark.parametrize(("seed", "window", "low_water", "user_every", "summarize", "tools", "keep_first"),
                         [(1, 4_000, 0.5, 4, True, True, 0.2), (2, 9_000, 0.8, 0, False, False, 0.5)])
def test_cuts_keep_the_head_on_two_runs(
    seed: int, window: int, low_water: float, user_every: int, summarize: bool, tools: bool, keep_first: float
) -> None:
    """The property on two fixed runs (the fast tier's; the slow tier draws 30)."""
    test_cuts_keep_the_head_and_every_request_stays_valid.hypothesis.inner_test(  # type: ignore[attr-defined]
        seed, window, low_water, user_every, summarize, tools, keep_first)


def test_an_agent_cut_drops_the_middle_and_reads_the_head_from_the_cache() -> None:
    planner = Planner("gpt-4o", context_window=12_000, reserve_output=0)
    session = planner.session()
    plans = [plan for plan, _ in replay(session, agent_run(10, rounds=60))]
    cuts = [k for k, plan in enumerate(plans) if k and plan.cache is not None and plan.cache.cut]
    assert len(cuts) >= 2 and session.head
    head_ids = [m.id for m in session.head]
    assert head_ids[0] == "task"  # the task opens the head
    assert GPT4O.count_messages([plans[0].messages[0], *session.head]) >= MIN_PREFIX  # as much as the cache needs
    assert GPT4O.count_messages(session.head) <= DEFAULT_KEEP_FIRST * planner.budget.max_input_tokens  # keep_first
    drops = 0
    for k in cuts:
        ids = [m.id for m in plans[k].messages]
        assert ids[1 : 1 + len(head_ids)] == head_ids
        before = [m.id for m in plans[k - 1].messages]
        dropped = [i for i, id_ in enumerate(before) if id_ not in ids]
        assert not dropped or min(dropped) >= 1 + len(head_ids)  # from the middle: after the head
        drops += bool(dropped)
        cache = plans[k].cache
        assert cache is not None and cache.cached_tokens >= MIN_PREFIX
    assert drops >= 2


def test_without_a_head_a_cut_that_drops_from_the_start_reads_nothing_from_the_cache() -> None:
    planner = Planner("gpt-4o", context_window=12_000, reserve_output=0)
    plans = [plan for plan, _ in replay(planner.session(keep_first=None), agent_run(10, rounds=60))]
    cuts = [plan for k, plan in enumerate(plans) if k and plan.cache is not None and plan.cache.cut]
    assert any(plan.cache is not None and plan.cache.cached_tokens == 0 for plan in cuts)


def test_no_head_when_it_would_take_more_than_keep_first() -> None:
    messages = agent_run(5, rounds=40)
    messages[2:2] = [AIMessage("", tool_calls=[{"name": "search", "args": {}, "id": "big"}], id="big_call"),
                     ToolMessage(" ".join(WORDS) * 150, tool_call_id="big", id="big_result")]
    planner = Planner("gpt-4o", context_window=12_000, reserve_output=0)
    assert GPT4O.count_messages(messages[:4]) > DEFAULT_KEEP_FIRST * planner.budget.max_input_tokens
    session = planner.session()
    plans = [plan for plan, _ in replay(session, messages)]
    assert any(k and plan.cache is not None and plan.cache.cut for k, plan in enumerate(plans))
    assert session.head == []
    wider = planner.session(keep_first=0.9)
    replay(wider, messages)
    assert [m.id for m in wider.head][:3] == ["task", "big_call", "big_result"]


def test_no_head_when_the_system_prompt_alone_is_cacheable_or_the_model_caches_nothing() -> None:
    messages = agent_run(10, rounds=40)
    long_system = [SystemMessage(" ".join(WORDS) * 40, id="sys"), *messages[1:]]
    planner = Planner("gpt-4o", context_window=12_000, reserve_output=0)
    assert GPT4O.count_messages(long_system[:1]) >= MIN_PREFIX
    session, short = planner.session(head_fill=0.0), planner.session(head_fill=0.0)
    replay(session, long_system)
    replay(short, messages)
    assert session.head == [] and short.head
    uncached = Planner(counter="gpt-4o", context_window=12_000, reserve_output=0).session()  # no model: no rules
    replay(uncached, messages)
    assert uncached.head == []


def test_refit_sessions_keep_no_head() -> None:
    session = Planner("gpt-4o", context_window=6_000, reserve_output=0).session(cache_stable=False)
    plans = replay(session, agent_run(3, rounds=20))
    assert all(plan.fits for plan, _ in plans) and plans[-1][0].tokens_before > 4 * 6_000  # it did cut
    assert session.head == []


def test_a_summary_goes_after_the_head() -> None:
    planner = Planner("gpt-4o", context_window=12_000, reserve_output=0, summarizer=extractive_summarizer)
    session = planner.session()
    plans = [plan for plan, _ in replay(session, agent_run(11, rounds=60, user_every=3))]
    assert session.head
    summarized = [plan for plan in plans if any(is_summary(m) for m in plan.messages)]
    assert summarized
    for plan in summarized:
        at = next(k for k, m in enumerate(plan.messages) if is_summary(m))
        ledger = [k for k, m in enumerate(plan.messages) if is_ledger(m)]  # the ledger's block: after the head
        assert at == 1 + len(session.head) + len(ledger) and ledger in ([], [at - 1])


def test_anthropic_cuts_mark_the_heads_end_and_summaries_keep_no_head() -> None:
    planner = Planner("claude-sonnet-4-5", context_window=12_000, reserve_output=0, output="anthropic",
                      tools=TOOLS)
    session = planner.session()
    plans = [plan for plan, _ in replay(session, agent_run(10, rounds=60))]
    assert session.head
    cuts = [plan for k, plan in enumerate(plans) if k and plan.cache is not None and plan.cache.cut]
    assert cuts
    for plan in cuts:
        request = plan.request
        assert json.dumps(request).count('"cache_control"') == 4  # tools, system, the head's end, the last
        marked = [k for k, m in enumerate(request["messages"]) if "cache_control" in json.dumps(m)]
        assert marked[0] < len(request["messages"]) - 1
    summarizing = Planner("claude-sonnet-4-5", context_window=12_000, reserve_output=0, output="anthropic",
                          tools=TOOLS, summarizer=extractive_summarizer).session()
    replay(summarizing, agent_run(11, rounds=60, user_every=3))  # a summary after a head would not convert
    assert summarizing.head == []


@pytest.mark.parametrize("value", [0, -0.1, 1.5, "0.2", True])
def test_bad_keep_first_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="keep_first"):
        Planner("gpt-4o").session(keep_first=value)  # type: ignore[arg-type]


def test_aplan_keeps_the_head_as_plan_does() -> None:
    messages = agent_run(10, rounds=60)
    planner = Planner("gpt-4o", context_window=12_000, reserve_output=0)
    sync, concurrent = planner.session(), planner.session()

    async def run() -> list[Plan]:
        plans, done = [], 0
        for end in request_points(messages):
            concurrent.add_messages(messages[done:end])
            done = end
            plans.append(await concurrent.aplan())
        return plans

    expected = [plan for plan, _ in replay(sync, messages)]
    got = asyncio.run(run())
    assert concurrent.head and [m.id for m in concurrent.head] == [m.id for m in sync.head]
    assert [[m.id for m in p.messages] for p in got] == [[m.id for m in p.messages] for p in expected]


def test_head_fill_makes_a_larger_head_and_cheaper_cuts() -> None:
    messages = agent_run(10, rounds=60)
    planner = Planner("gpt-4o", context_window=12_000, reserve_output=0)
    small, large = planner.session(head_fill=0.0), planner.session(head_fill=0.25, keep_first=0.5)
    small_plans = [plan for plan, _ in replay(small, messages)]
    large_plans = [plan for plan, _ in replay(large, messages)]
    assert small.head and large.head[: len(small.head)] == small.head and len(large.head) > len(small.head)
    assert GPT4O.count_messages([large_plans[0].messages[0], *large.head]) >= 0.25 * planner.budget.max_input_tokens
    assert GPT4O.count_messages(large.head) <= 0.5 * planner.budget.max_input_tokens

    def cut_reads(plans: list[Plan]) -> list[int]:
        return [p.cache.cached_tokens for k, p in enumerate(plans) if k and p.cache is not None and p.cache.cut]

    large_reads, small_reads = cut_reads(large_plans), cut_reads(small_plans)
    assert min(large_reads) >= 0.25 * planner.budget.max_input_tokens - 128  # every cut reads the larger head
    assert sum(large_reads) / len(large_reads) > sum(small_reads) / len(small_reads)


@pytest.mark.parametrize(
    ("options", "match"),
    [({"head_fill": -0.1}, "head_fill must be a share"), ({"head_fill": 1.0}, "head_fill must be a share"),
     ({"head_fill": "0.1"}, "head_fill must be a share"), ({"head_fill": 0.3}, "needs a larger keep_first"),
     ({"head_fill": 0.1, "keep_first": None}, "needs a larger keep_first")],
)
def test_bad_head_fill_is_refused(options: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Planner("gpt-4o").session(**options)


def test_the_steps_that_shorten_leave_the_head_as_it_is() -> None:
    def thought(n: int) -> list[dict]:
        return [{"type": "thinking", "thinking": "let me think " * 200, "signature": f"sig{n}"},
                {"type": "text", "text": "calling the tool"}]

    messages: list[BaseMessage] = [SystemMessage("You are an agent.")]
    for r in range(3):
        messages += [HumanMessage(f"task {r}"),
                     AIMessage(thought(r), tool_calls=[{"name": "search", "args": {}, "id": f"c{r}"}]),
                     ToolMessage("output " * 800, tool_call_id=f"c{r}"), AIMessage("done")]
    messages.append(HumanMessage("and now?"))
    meter = Meter(GPT4O)
    meter.head = tuple(messages[1:5])  # the first turn
    context = StepContext(Budget(1_000, 0, 0, 0), meter, pinned=meter.pinned, head=meter.head)
    for step in (ClearReasoning(), TruncateToolOutput(max_tokens=100)):
        out = step.apply(messages, context).messages
        assert out[1:5] == messages[1:5] and all(a is b for a, b in zip(out[1:5], messages[1:5], strict=True))
        assert any(a is not b for a, b in zip(out[5:9], messages[5:9], strict=True))  # the same turn later: shortened
    no_head = StepContext(Budget(1_000, 0, 0, 0), Meter(GPT4O))
    assert ClearReasoning().apply(messages, no_head).messages[2] is not messages[2]


def test_a_turn_the_head_leaves_no_room_for_is_cut_without_it_and_the_head_is_gone_for_good() -> None:
    planner = Planner("gpt-4o", context_window=12_000, reserve_output=0)
    session = planner.session(keep_first=0.5, head_fill=0.3)
    replay(session, agent_run(10, rounds=60))
    head = [m.id for m in session.head]
    assert head and GPT4O.count_messages(session.head) >= 0.3 * planner.budget.max_input_tokens - 200
    # a user turn that fits the budget alone, but not beside the head
    words = " ".join(WORDS)
    turn = HumanMessage(words * (int(0.8 * planner.budget.max_input_tokens) // GPT4O.count_text(words)), id="huge")
    assert GPT4O.count_messages([turn]) > planner.budget.max_input_tokens - GPT4O.count_messages(session.head)
    session.add_messages([turn])
    plan = session.plan()
    ids = [m.id for m in plan.messages]
    assert plan.fits and plan.tokens_after <= planner.budget.max_input_tokens and ids[-1] == "huge"
    assert not set(head) <= set(ids) and session.head == []
    session.add_messages([AIMessage("Done.", id="done"), HumanMessage("Thanks, and now?", id="next")])
    assert session.plan().fits and session.head == []  # no head is chosen again


def cuts_of(plans: list[Plan]) -> list[Plan]:
    return [plan for k, plan in enumerate(plans) if k and plan.cache is not None and plan.cache.cut]


def working_set_need(plan: Plan, head: list[BaseMessage]) -> int:
    """What a cut keeps at least: the system prompt, the head, the last user message and the agent's working set."""
    start = working_set_start(plan.messages)
    assert start is not None
    users = [i for i, m in enumerate(plan.messages) if isinstance(m, HumanMessage)]
    kept = [m for i, m in enumerate(plan.messages)
            if isinstance(m, SystemMessage) or m in head or i == users[-1] or i >= start]
    return GPT4O.count_messages(kept)


def test_an_agent_run_cuts_to_the_agent_mark_and_a_chat_to_the_default_one() -> None:
    """low_water=None picks the mark at each cut: agent runs cut lower (a sliding trim keeps less of them too), but
    never below their working set (the newest tool outputs)."""
    planner = Planner("gpt-4o", context_window=12_000, reserve_output=0)
    budget = planner.budget.max_input_tokens
    agent = planner.session()
    agent_plans = [plan for plan, _ in replay(agent, agent_run(10, rounds=80))]
    assert agent.agent_run and agent.cut_low_water == AGENT_LOW_WATER
    cuts = cuts_of(agent_plans)
    assert cuts and all(p.tokens_after <= max(AGENT_LOW_WATER * budget, working_set_need(p, agent.head))
                        for p in cuts)
    assert any(p.tokens_after <= AGENT_LOW_WATER * budget for p in cuts)
    chatting = planner.session()
    chat_plans = [plan for plan, _ in replay(chatting, chat(150))]
    assert not chatting.agent_run and chatting.cut_low_water == DEFAULT_LOW_WATER
    chat_cuts = cuts_of(chat_plans)
    assert chat_cuts and all(p.tokens_after <= DEFAULT_LOW_WATER * budget for p in chat_cuts)
    assert max(p.tokens_after for p in chat_cuts) > AGENT_LOW_WATER * budget  # a chat keeps more after a cut
    fixed = planner.session(low_water=0.7)  # a mark given applies to every run
    replay(fixed, agent_run(10, rounds=80))
    assert fixed.agent_run and fixed.cut_low_water == 0.7


def test_an_agent_runs_head_fills_two_thirds_of_keep_first_unless_the_planner_summarizes() -> None:
    messages = agent_run(10, rounds=60)
    planner = Planner("gpt-4o", context_window=12_000, reserve_output=0)
    budget = planner.budget.max_input_tokens
    auto, minimal = planner.session(keep_first=0.5), planner.session(keep_first=0.5, head_fill=0.0)
    auto_plans = [plan for plan, _ in replay(auto, messages)]
    replay(minimal, messages)
    assert minimal.head and auto.head[: len(minimal.head)] == minimal.head and len(auto.head) > len(minimal.head)
    system = auto_plans[0].messages[0]
    assert GPT4O.count_messages([system, *auto.head]) >= 0.5 * 2 / 3 * budget  # the tools, system prompt and head
    assert GPT4O.count_messages(auto.head) <= 0.5 * budget
    summarizing = Planner("gpt-4o", context_window=12_000, reserve_output=0, summarizer=extractive_summarizer)
    summarized, plain = summarizing.session(keep_first=0.5), summarizing.session(keep_first=0.5, head_fill=0.0)
    replay(summarized, messages)
    replay(plain, messages)
    assert summarized.head and summarized.head == plain.head  # the summary of the middle gets the room


def test_a_head_fill_that_keep_first_cannot_hold_stops_at_the_last_whole_round_that_fits() -> None:
    """A tool round too large for keep_first ends the head before it; before, it left the session with no head."""
    messages = agent_run(10, rounds=60)
    planner = Planner("gpt-4o", context_window=12_000, reserve_output=0)
    budget = planner.budget.max_input_tokens
    session = planner.session(keep_first=0.3, head_fill=0.25)
    plans = [plan for plan, _ in replay(session, messages)]
    head = session.head
    assert head and GPT4O.count_messages([plans[0].messages[0], *head]) >= MIN_PREFIX
    assert GPT4O.count_messages([plans[0].messages[0], *head]) < 0.25 * budget  # short of the fill...
    assert not find_broken_pairs([plans[0].messages[0], *head])
    following = messages[1 + len(head) :]
    end = 1  # the next whole round: a message, and the results of the calls it makes
    while end < len(following) and isinstance(following[end], ToolMessage):
        end += 1
    # ...because the next whole round would take the head past keep_first
    assert sum(map(GPT4O.count_message, [*head, *following[:end]])) > 0.3 * budget


def test_the_mark_goes_down_as_the_user_turns_get_longer() -> None:
    """``turn_length``: the mean tokens a user message brings, against the budget, sets the mark between the two."""
    planner = Planner("gpt-4o", context_window=12_000, reserve_output=0)
    budget = planner.budget.max_input_tokens
    lengths, marks = [], []
    for words in (120, 600, 2000):
        session = planner.session()
        plans = [plan for plan, _ in replay(session, chat(60, words=words))]
        lengths.append(session.turn_length)
        marks.append(session.cut_low_water)
        last_cut = cuts_of(plans)[-1]
        assert last_cut.tokens_after <= DEFAULT_LOW_WATER * budget
    assert lengths[0] == 0 and 0 < lengths[1] < 1 and lengths[2] == 1
    assert marks[0] == DEFAULT_LOW_WATER > marks[1] > marks[2] == AGENT_LOW_WATER
    assert Planner("gpt-4o").session().turn_length == 0  # nothing measured yet: a chat's mark


def test_a_cut_that_reads_its_head_keeps_to_the_mark_and_one_that_reads_nothing_leaves_ten_requests_of_room() -> None:
    """A cut with a head is a cache hit, so only the mark sets it; with no head it misses the cache, and it leaves
    room for ten requests of the mean growth (at most 60% of the budget) so that nine requests in ten hit."""
    messages = chat(60, words=350)
    planner = Planner("gpt-4o", context_window=12_000, reserve_output=0)
    budget = planner.budget.max_input_tokens
    headed, headless = planner.session(), planner.session(keep_first=None)
    headed_cuts = cuts_of([plan for plan, _ in replay(headed, messages)])
    headless_cuts = cuts_of([plan for plan, _ in replay(headless, messages)])
    assert headed.head and headed.cut_low_water > AGENT_LOW_WATER  # short turns: near the chat mark
    growth = GPT4O.count_messages(messages[1:]) / (len(messages) // 2)  # about one user turn a request
    assert 10 * growth > (1 - headed.cut_low_water) * budget  # ten requests of growth need more than the mark leaves
    assert max(p.tokens_after for p in headed_cuts) > budget - 10 * growth
    assert all(p.tokens_after <= budget - min(10 * growth, 0.6 * budget) + growth for p in headless_cuts)
    assert len(headed_cuts) > len(headless_cuts)
    assert all(p.cache is not None and p.cache.cached_tokens > 0 for p in headed_cuts)
