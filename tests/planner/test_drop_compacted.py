"""``drop_compacted`` (issue 51, item 2): what a provider's compaction block stands for is what a plan drops first,
the block unchanged, the system prompt and pinned messages kept."""

from __future__ import annotations

import copy

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import Planner
from ctxwin.strategies import pin

COMPACTION = {"type": "compaction", "id": "cmp_1", "encrypted_content": "enc:" + "Zm9v" * 50}


def conversation() -> list[BaseMessage]:
    old = [m for i in range(6) for m in (HumanMessage(f"old question {i} " + "words " * 80, id=f"oh{i}"),
                                         AIMessage(f"old answer {i} " + "words " * 80, id=f"oa{i}"))]
    return [SystemMessage("Be brief.", id="sys"), *old, AIMessage([copy.deepcopy(COMPACTION)], id="cmp"),
            HumanMessage("new question " + "words " * 40, id="nh"), AIMessage("new answer", id="na"),
            HumanMessage("and now?", id="last")]


def planner(window: int, strategies: list[str]) -> Planner:
    # ledger_share=0: these check what the step drops; the ledger's block would carry what the old turns said
    return Planner(counter="approximate", context_window=window, reserve_output=100, strategies=strategies,
                   ledger_share=0)


def test_what_the_compaction_stands_for_goes_first_and_the_block_goes_back_unchanged() -> None:
    messages = conversation()
    plan = planner(1_200, ["drop_compacted", "trim"]).plan(messages)
    assert plan.fits
    assert [m.id for m in plan.messages] == ["sys", "cmp", "nh", "na", "last"]
    assert plan.messages[1].content == [COMPACTION]
    assert plan.steps[0].name == "drop_compacted"
    assert set(plan.steps[0].dropped_ids) == {m.id for m in messages[1:13]}


def test_the_trim_alone_would_keep_what_the_compaction_stands_for() -> None:
    """The check above can fail: without the step, a trim keeps newest-first, old turns before the compaction
    included, and drops the compaction block's neighbours instead when the budget is tight."""
    plan = planner(1_200, ["trim"]).plan(conversation())
    assert any(m.id and m.id.startswith("o") for m in plan.messages)


def test_pinned_messages_and_the_system_prompt_stay() -> None:
    messages = conversation()
    messages[3] = pin(messages[3])
    plan = planner(1_400, ["drop_compacted", "trim"]).plan(messages)
    assert [m.id for m in plan.messages] == ["sys", "oh1", "cmp", "nh", "na", "last"]


def test_without_a_compaction_block_the_step_does_nothing() -> None:
    messages = [m for m in conversation() if m.id != "cmp"]
    plan = planner(1_200, ["drop_compacted", "trim"]).plan(messages)
    assert plan.steps[0].name == "drop_compacted" and not plan.steps[0].dropped_ids
    assert plan.fits and plan.messages[-1].id == "last"


def test_a_plan_that_fits_keeps_everything() -> None:
    messages = conversation()
    plan = planner(100_000, ["drop_compacted", "trim"]).plan(messages)
    assert plan.messages == messages


def test_tool_pairs_after_the_compaction_stay_whole() -> None:
    call = AIMessage("", tool_calls=[{"name": "read", "args": {}, "id": "c1"}], id="call")
    messages = [*conversation()[:-1], call, ToolMessage("file text", tool_call_id="c1", id="result"),
                HumanMessage("and now?", id="last")]
    plan = planner(1_200, ["drop_compacted", "trim"]).plan(messages)
    ids = [m.id for m in plan.messages]
    assert ids[:2] == ["sys", "cmp"] and ("call" in ids) == ("result" in ids)


def test_a_compaction_block_counts_by_its_size_until_a_usage_says_more() -> None:
    """An opaque item counts one token per byte its base64 decodes to, not a flat block's 255; a readable summary
    (Anthropic's ``content``) counts as text besides."""
    from ctxwin.counters import get_counter

    counter = get_counter("gpt-4o")
    opaque = AIMessage([{"type": "compaction", "id": "cmp_2", "encrypted_content": "QUJD" * 1_000}])
    bare = counter.count_message(AIMessage([{"type": "compaction", "id": "cmp_2", "encrypted_content": ""}]))
    assert counter.count_message(opaque) - bare == 3_000
    summary = "The user asked for the weather in Paris; it was sunny. " * 20
    readable = AIMessage([{"type": "compaction", "content": summary, "encrypted_content": None}])
    assert counter.count_message(readable) >= counter.count_text(summary)


def test_a_responses_compaction_item_is_read_fitted_and_written_back_whole() -> None:
    """The judge's case without the SDK (tests/interop/test_compaction_fit.py sends it to a strict server)."""
    import json

    import ctxwin

    item = {"id": "cmp_9", "type": "compaction", "encrypted_content": "enc:" + "QUJD" * 40, "created_by": "server"}
    old = [{"role": role, "content": f"{role} {i} " + "words " * 120}
           for i in range(5) for role in ("user", "assistant")]
    given = [*old, dict(item), {"type": "message", "role": "assistant", "content": "ok"},
             {"role": "user", "content": "next?"}]
    plan = ctxwin.fit(given, model="gpt-6-sol", context_window=1_400, reserve_output=400, output="responses",
                      strategies=["drop_compacted", "trim"])
    sent = plan.request["input"]
    assert json.dumps(sent[0]) == json.dumps(item)  # first, whole, in its own key order
    assert [entry.get("role") for entry in sent[1:]] == ["assistant", "user"]
    assert plan.steps[0].name == "drop_compacted" and len(plan.steps[0].dropped_ids) == len(old)


def test_the_default_chain_drops_what_the_compaction_stands_for_first_and_keeps_the_block() -> None:
    """No ``strategies=``: the default chain opens with ``drop_compacted``, and no later step drops the newest
    compaction block (a tight budget trims the turns after it instead)."""
    messages = conversation()
    plan = Planner(counter="approximate", context_window=520, reserve_output=100).plan(messages)
    assert plan.steps[0].name == "drop_compacted" and len(plan.steps[0].dropped_ids) == 12
    assert [m.id for m in plan.messages][:2] == ["sys", "cmp"] and plan.messages[-1].id == "last"


def test_a_session_counts_an_observed_compaction_item_by_the_providers_usage() -> None:
    """Observed once, the item counts what the provider's input tokens leave for it beside the rest of the request;
    the budget is not corrected by it (an opaque item's size is no counter's error)."""
    from ctxwin.counters import get_counter

    counter = get_counter("gpt-4o")
    planner = Planner(counter=counter, context_window=100_000, reserve_output=100)
    session = planner.session(conversation())
    first = session.plan()
    item = next(m for m in first.messages if m.id == "cmp")
    estimated = counter.count_message(item)
    rest = first.tokens_after - estimated - sum(counter.count_message(m) for m in conversation()[1:13])
    session.observe({"input_tokens": rest + 40, "output_tokens": 1})  # the provider read from the item on
    assert session.max_input_tokens == planner.budget.max_input_tokens
    session.add_messages(HumanMessage("one more", id="more"))
    second = session.plan()
    added = counter.count_message(HumanMessage("one more", id="more"))
    assert second.tokens_after == first.tokens_after - estimated + 40 + added


def test_a_usage_below_the_rest_of_the_request_measures_no_item() -> None:
    """A usage that leaves nothing for the item is not this request's: the item keeps its estimate, and the ratio's
    check reports the usage."""
    import warnings

    from ctxwin.counters import get_counter

    counter = get_counter("gpt-4o")
    session = Planner(counter=counter, context_window=100_000, reserve_output=100).session(conversation())
    first = session.plan()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session.observe({"input_tokens": 5, "output_tokens": 1})
    assert any("another request" in str(w.message) for w in caught)
    second = session.plan()
    assert second.tokens_after == first.tokens_after
