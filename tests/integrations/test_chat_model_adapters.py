"""A LangChain chat model as the planner's summarizer (``ChatModelSummarizer``) and as ``trim_messages``'
``token_counter``; and ``import ctxwin`` importing no LangChain."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import pytest
from agent_support import MODEL, RecordingChatModel, filler, user_message
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.messages import trim_messages as lc_trim_messages
from pydantic import Field

import ctxwin
from ctxwin import Planner, get_counter
from ctxwin.integrations.langchain import DEFAULT_SUMMARY_PROMPT, ChatModelSummarizer

SUMMARY = "The user debugged failing linker steps; the cache was cold on every turn."


def conversation(turns: int) -> list[BaseMessage]:
    messages: list[BaseMessage] = [SystemMessage("You help with builds.", id="sys")]
    for turn in range(turns):
        call = {"name": "build_log", "args": {"turn": turn}, "id": f"c{turn}", "type": "tool_call"}
        messages += [
            user_message(turn),
            AIMessage("", tool_calls=[call], id=f"a{turn}"),
            ToolMessage("log " + filler(turn, 100), tool_call_id=f"c{turn}", id=f"t{turn}"),
            AIMessage("Answer " + filler(turn + 50, 60), id=f"r{turn}"),
        ]
    return messages


@pytest.mark.slow
def test_the_summarizer_model_summarises_inside_a_plan() -> None:
    model = RecordingChatModel(replies=[SUMMARY])
    messages = conversation(12)
    plan = ctxwin.fit(messages, MODEL, context_window=3000, reserve_output=0, summarizer=ChatModelSummarizer(model))
    assert plan.fits
    (call,) = model.calls
    assert call.messages[0].text == DEFAULT_SUMMARY_PROMPT
    transcript = call.messages[1].text
    assert user_message(0).text in transcript and "build_log" in transcript  # the span it stands for, tool calls too
    summary = plan.messages[1]
    assert isinstance(summary, SystemMessage) and SUMMARY in summary.text  # a LangChain message (type in = type out)
    assert plan.messages[0] is messages[0] and plan.messages[-1] is messages[-1]
    assert any(step.name == "summarize" and step.summarized_ids for step in plan.steps)


def test_the_summarizer_model_is_awaited_in_aplan() -> None:
    model = RecordingChatModel(replies=[SUMMARY])
    planner = Planner(MODEL, context_window=3000, reserve_output=0, summarizer=ChatModelSummarizer(model))
    plan = asyncio.run(planner.aplan(conversation(12)))
    assert len(model.calls) == 1 and SUMMARY in plan.messages[1].text


def test_a_failing_summarizer_model_skips_the_step_and_the_plan_still_fits() -> None:
    class Broken(RecordingChatModel):
        def _generate(self, *args: Any, **kwargs: Any) -> Any:
            raise ConnectionError("provider down")

    plan = ctxwin.fit(conversation(12), MODEL, context_window=3000, reserve_output=0,
                      summarizer=ChatModelSummarizer(Broken()))
    assert plan.fits
    assert any("summarizer raised ConnectionError" in note for step in plan.steps for note in step.notes)


def test_summarizer_arguments_are_checked() -> None:
    with pytest.raises(TypeError, match="must be a LangChain chat model"):
        ChatModelSummarizer(lambda messages: "text")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="prompt must be a non-empty string"):
        ChatModelSummarizer(RecordingChatModel(), prompt=" ")


class CountingChatModel(RecordingChatModel):
    """Counts with the model's ctxwin counter, recording the types of the messages it was asked to count."""

    counted: list[set[str]] = Field(default_factory=list)

    def get_num_tokens_from_messages(
        self, messages: list[BaseMessage], tools: Sequence[Any] | None = None
    ) -> int:
        self.counted.append({type(m).__module__.split(".")[0] for m in messages})
        return get_counter(MODEL).count_messages(messages)


def test_a_chat_model_as_token_counter_sees_langchain_messages_and_matches_langchain() -> None:
    messages = conversation(6)
    model = CountingChatModel()
    ours = ctxwin.trim_messages(messages, max_tokens=1500, token_counter=model, strategy="last", include_system=True,
                                start_on="human")
    assert model.counted and all(kinds == {"langchain_core"} for kinds in model.counted)
    theirs = lc_trim_messages(messages, max_tokens=1500, token_counter=model, strategy="last", include_system=True,
                              start_on="human")
    assert [m.id for m in ours] == [m.id for m in theirs]
    assert all(mine is original for mine, original in zip(ours, theirs, strict=True))  # the caller's own objects


def test_import_ctxwin_imports_no_langchain() -> None:
    code = (
        "import sys, ctxwin; "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('langchain', 'langchain_core', 'langgraph')); "
        "print(loaded); sys.exit(bool(loaded))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_summarizer_remembers_the_last_spans_it_summarised() -> None:
    model = RecordingChatModel(replies=["first", "second", "third"])
    summarizer = ChatModelSummarizer(model, remember=1)
    one, two = conversation(1), conversation(2)
    assert [summarizer(one), summarizer(one), summarizer(two), summarizer(one)] == ["first", "first", "second", "third"]
    assert len(model.calls) == 3  # the second span pushed the first out
    forgetful = ChatModelSummarizer(RecordingChatModel(replies=["a"]), remember=0)
    forgetful(one), forgetful(one)
    assert len(forgetful.model.calls) == 2  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="remember must be a non-negative int"):
        ChatModelSummarizer(model, remember=-1)


@pytest.mark.slow
def test_the_summarizer_model_is_given_the_ledger_with_typed_sections() -> None:
    from ctxwin.integrations.langchain import LEDGER_SUMMARY_PROMPT

    model = RecordingChatModel(replies=[SUMMARY])
    messages = conversation(12)
    messages.insert(1, user_message(99).model_copy(update={"content": "Never restart payments-api at night."}))
    plan = ctxwin.fit(messages, MODEL, context_window=3000, reserve_output=0, summarizer=ChatModelSummarizer(model))
    assert plan.fits
    (call,) = model.calls
    prompt = call.messages[0].text
    assert prompt.startswith(DEFAULT_SUMMARY_PROMPT) and LEDGER_SUMMARY_PROMPT in prompt
    assert "Rules:\n- Never restart payments-api at night." in prompt  # the ledger, by typed sections
    assert "Never restart payments-api at night." in plan.messages[1].text  # carried in its block, before the summary
    assert SUMMARY in plan.messages[2].text
