"""ContextWindowMiddleware inside a real LangChain v1 agent (``create_agent``) with a recording fake model."""

from __future__ import annotations

import asyncio

import pytest
from agent_support import (
    BIG_TOKENS,
    BIG_TURN,
    MODEL,
    SYSTEM_PROMPT,
    TOOLS,
    RecordingChatModel,
    big_log,
    check_call,
    filler,
    user_message,
)
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxwin import BudgetExceeded, get_counter
from ctxwin.integrations.langchain import ContextWindowMiddleware, TurnDoesNotFit, pre_model_hook

BUDGET = 6000
TURNS = 30


def run_turns(agent: object, model: RecordingChatModel, turns: int = TURNS) -> list[BaseMessage]:
    """``turns`` user turns, each answered after one tool call; every model call is checked as it was made."""
    history: list[BaseMessage] = []
    for turn in range(turns):
        seen = len(model.calls)
        history = agent.invoke({"messages": [*history, user_message(turn)]})["messages"]  # type: ignore[attr-defined]
        assert len(model.calls) == seen + 2
        for call in model.calls[seen:]:
            check_call(call, BUDGET, history)
    return history


@pytest.mark.slow
def test_thirty_turns_every_call_within_the_budget() -> None:
    model = RecordingChatModel()
    middleware = ContextWindowMiddleware(MODEL, context_window=BUDGET, reserve_output=0)
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM_PROMPT, middleware=[middleware])
    history = run_turns(agent, model)

    counter = get_counter(MODEL)
    # The stored state is the whole conversation, the 50k-token log included: only the model's input was fitted.
    assert len(history) == TURNS * 4
    logs = [m for m in history if isinstance(m, ToolMessage)]
    assert logs[BIG_TURN].content == big_log() and counter.count_text(big_log()) >= BIG_TOKENS
    assert counter.count_messages(history) > 2 * BUDGET
    # The calls after the big log got it shortened, not dropped, while it was in the recent window.
    sent_logs = [m for m in model.calls[2 * BIG_TURN + 1].messages if isinstance(m, ToolMessage)]
    assert sent_logs[-1].tool_call_id == logs[BIG_TURN].tool_call_id
    assert 0 < len(sent_logs[-1].text) < len(big_log()) // 4
    # Late calls dropped old turns (the session keeps the first ones as its head).
    assert sum(isinstance(m, HumanMessage) for m in model.calls[-1].messages) < TURNS // 2


def test_the_fitted_messages_are_the_callers_objects_and_classes() -> None:
    model = RecordingChatModel()
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM_PROMPT, middleware=[ContextWindowMiddleware(MODEL)])
    first = user_message(0)
    agent.invoke({"messages": [first]})
    # Within budget nothing changes: the model gets the state's own objects.
    assert model.calls[0].messages[1] is first
    assert isinstance(model.calls[1].messages[-1], ToolMessage)


def test_tools_and_system_prompt_are_counted() -> None:
    """A budget that holds the conversation alone but not with the system prompt and tools: the middleware drops
    older turns, and what the model got (system prompt and tools included) is within the budget."""
    counter = get_counter(MODEL)
    history: list[BaseMessage] = []
    for turn in range(3):
        history += [user_message(turn), AIMessage(f"Answer {turn}: " + filler(turn, 40), id=f"a-{turn}")]
    history.append(user_message(3))
    tools = RecordingChatModel().bind_tools(TOOLS).kwargs["tools"]  # type: ignore[attr-defined]
    alone = counter.count_messages(history)
    with_all = counter.count_messages([SystemMessage(SYSTEM_PROMPT), *history], tools=tools)
    budget = (alone + with_all) // 2
    assert alone <= budget < with_all

    model = RecordingChatModel(replies=["done"])
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM_PROMPT,
                         middleware=[ContextWindowMiddleware(MODEL, context_window=budget, reserve_output=0)])
    agent.invoke({"messages": history})
    (call,) = model.calls
    assert len(call.messages) < len(history) + 1
    check_call(call, budget, history)


def test_must_keep_over_budget_ends_the_run_saying_so_without_calling_the_model() -> None:
    model = RecordingChatModel()
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM_PROMPT,
                         middleware=[ContextWindowMiddleware(MODEL, context_window=600, reserve_output=0)])
    huge = HumanMessage("Turn 0: " + filler(1, 900), id="huge")
    result = agent.invoke({"messages": [huge]})
    assert model.calls == []
    answer = result["messages"][-1]
    assert isinstance(answer, AIMessage) and not answer.tool_calls
    assert "no longer fits the model's context" in answer.text and "allows 600" in answer.text
    assert answer.response_metadata["ctxwin"]["limit"] == 600
    assert result["messages"][0] is huge or result["messages"][0].id == "huge"  # the history is left as it was


def test_must_keep_over_budget_strict_raises_budget_exceeded() -> None:
    model = RecordingChatModel()
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM_PROMPT,
                         middleware=[ContextWindowMiddleware(MODEL, context_window=600, reserve_output=0, strict=True)])
    with pytest.raises(BudgetExceeded, match="budget allows 600") as caught:
        agent.invoke({"messages": [HumanMessage("Turn 0: " + filler(1, 900))]})
    assert caught.value.tokens > 600
    assert model.calls == []


def test_a_system_prompt_alone_over_budget_is_refused() -> None:
    model = RecordingChatModel()
    agent = create_agent(model, TOOLS, system_prompt=filler(3, 2000),
                         middleware=[ContextWindowMiddleware(MODEL, context_window=1000, reserve_output=0,
                                                             strict=True)])
    with pytest.raises(BudgetExceeded):
        agent.invoke({"messages": [user_message(0)]})
    assert model.calls == []


def test_async_agent_with_a_chat_model_summarizer() -> None:
    """``ainvoke`` runs the async path: the summarizer model is awaited, its summary is what the agent model gets."""
    summarizer = RecordingChatModel(replies=["The user asked about failing builds on turns 0-9."])
    model = RecordingChatModel()
    middleware = ContextWindowMiddleware(MODEL, context_window=BUDGET, reserve_output=0, summarizer=summarizer)
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM_PROMPT, middleware=[middleware])

    async def run() -> list[BaseMessage]:
        history: list[BaseMessage] = []
        for turn in range(12):
            seen = len(model.calls)
            history = (await agent.ainvoke({"messages": [*history, user_message(turn)]}))["messages"]
            for call in model.calls[seen:]:
                check_call(call, BUDGET, history)
        return history

    asyncio.run(run())
    assert summarizer.calls, "the summarizer model was called"
    last = model.calls[-1].messages
    summaries = [m for m in last if isinstance(m, SystemMessage) and "failing builds" in m.text]
    assert len(summaries) == 1 and last.index(summaries[0]) >= 1  # after the system prompt (and the session's head)


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="context_window is required"):
        ContextWindowMiddleware(get_counter(MODEL))
    with pytest.raises(TypeError, match="model must be a ctxwin model name or a TokenCounter"):
        ContextWindowMiddleware(42)  # type: ignore[arg-type]
    budget = ContextWindowMiddleware(get_counter(MODEL), context_window=1900, reserve_output=1000).planner.budget
    assert (budget.context_window, budget.reserve_output, budget.max_input_tokens) == (1900, 1000, 900)
    assert ContextWindowMiddleware(MODEL, reserve_output=1000).planner.budget.reserve_output == 1000


def test_a_budget_option_of_another_name_is_refused_with_fit_s_name() -> None:
    with pytest.raises(TypeError, match=r"ContextWindowMiddleware: unknown option 'max_tokens' .*context_window"):
        ContextWindowMiddleware(get_counter(MODEL), max_tokens=900)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"pre_model_hook: unknown option 'reserve' .*reserve_output"):
        pre_model_hook(MODEL, reserve=1000)  # type: ignore[call-arg]


def test_a_provider_tool_that_cannot_be_counted_is_named() -> None:
    """A provider's built-in tool has no definition to count: refused, naming it, never silently left out."""
    model = RecordingChatModel()
    agent = create_agent(model, [*TOOLS, {"type": "web_search_preview"}], system_prompt=SYSTEM_PROMPT,
                         middleware=[ContextWindowMiddleware(MODEL)])
    with pytest.raises(ValueError, match=r"tools\[1\]: expected"):
        agent.invoke({"messages": [user_message(0)]})
    assert model.calls == []


def test_a_turn_whose_tool_results_cannot_fit_ends_instead_of_looping() -> None:
    """The first call fits; the tool's result cannot fit beside it even shortened. Dropping it would hand the model
    the user message alone again, and it would call the tool again until the recursion limit: the run ends."""
    counter = get_counter(MODEL)
    tools = RecordingChatModel().bind_tools(TOOLS).kwargs["tools"]  # type: ignore[attr-defined]
    first = user_message(0)
    budget = counter.count_messages([SystemMessage(SYSTEM_PROMPT), first], tools=tools) + 40
    model = RecordingChatModel()
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM_PROMPT,
                         middleware=[ContextWindowMiddleware(MODEL, context_window=budget, reserve_output=0)])
    result = agent.invoke({"messages": [first]})
    assert len(model.calls) == 1  # the tool call; the second call was refused
    answer = result["messages"][-1]
    assert isinstance(answer, AIMessage) and "the current turn (3 messages" in answer.text
    assert isinstance(result["messages"][-2], ToolMessage)  # the tool ran; its result stays in the state
    turn = result["messages"][-4:-1]  # what the refused call would have needed: the system prompt and the turn
    needed = counter.count_messages([SystemMessage(SYSTEM_PROMPT), *turn], tools=tools)
    assert answer.response_metadata["ctxwin"] == {"tokens": needed, "limit": budget} and needed > budget
    assert f"needs {needed} tokens" in answer.text

    strict = create_agent(RecordingChatModel(), TOOLS, system_prompt=SYSTEM_PROMPT,
                          middleware=[ContextWindowMiddleware(MODEL, context_window=budget, reserve_output=0,
                                                              strict=True)])
    with pytest.raises(TurnDoesNotFit, match="would call its tools again"):
        strict.invoke({"messages": [first]})


@pytest.mark.slow
def test_sync_agent_with_a_chat_model_summarizer_asks_it_once_per_span() -> None:
    summarizer = RecordingChatModel(replies=["Builds failed in the linker on the early turns."])
    model = RecordingChatModel()
    middleware = ContextWindowMiddleware(MODEL, context_window=BUDGET, reserve_output=0, summarizer=summarizer)
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM_PROMPT, middleware=[middleware])
    run_turns(agent, model, turns=12)
    summarised = [c for c in model.calls if any(isinstance(m, SystemMessage) and "linker" in m.text
                                                for m in c.messages)]
    assert len(summarised) >= 4
    # A turn's two calls summarise the same span: the summarizer model was asked once for both.
    assert 0 < len(summarizer.calls) <= len(summarised) // 2 + 1
