"""A request form is one module and one registration: a toy form, written here and registered for the test, is
fitted through as the built-in ones are (one-off plans, sessions, ``output="request"``), and no other module needed
a change for it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

import ctxwin
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.messages._forms import CallerForms
from ctxwin.messages._request_forms.form import MediaRules, RequestForm
from ctxwin.messages._request_forms.registry import form_of, register_form, unregister_form


class Transcript(RequestForm):
    """A made-up provider: ``{"lines": [{"speaker", "said"}], "preamble", "word_limit"}``; media in user lines
    only; tools as bare names; it refuses a conversation ending with the assistant."""

    name = "transcript"
    items_key = "lines"
    system_key = "preamble"
    limit_key = "word_limit"
    media = MediaRules(frozenset({"user"}), frozenset({"video", "audio", "input_audio"}))

    def claims(self, request: Any) -> bool:
        return isinstance(request, Mapping) and "lines" in request

    def write(self, messages: list[BaseMessage], forms: CallerForms | None) -> tuple[list[Any], Any]:
        system = [m for m in messages if isinstance(m, SystemMessage)]
        lines = [{"speaker": m.type, "said": m.text} for m in messages if not isinstance(m, SystemMessage)]
        return lines, "\n".join(m.text for m in system) or None

    def tools(self, tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"name": tool["function"]["name"]} for tool in tools]

    def refusals(self, messages: Sequence[BaseMessage], tools: Any, reserve: int, model: str | None) -> list[str]:
        return ["a transcript must end with the user"] if messages and isinstance(messages[-1], AIMessage) else []


TRANSCRIPT = Transcript()
PNG = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5E"
       "rkJggg==")
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}]


@pytest.fixture
def registered() -> Iterator[Transcript]:
    register_form(TRANSCRIPT)
    try:
        yield TRANSCRIPT
    finally:
        unregister_form(TRANSCRIPT)


def chat(turns: int) -> list[Any]:
    messages: list[Any] = [SystemMessage("Be brief.")]
    for i in range(turns):
        messages += [HumanMessage(f"question {i} " * 40), AIMessage(f"answer {i} " * 40)]
    return [*messages, HumanMessage("last question")]


def test_a_registered_form_is_an_output_and_its_request_is_written_in_it(registered: Transcript) -> None:
    plan = ctxwin.fit(chat(30), "gpt-4o", output="transcript", tools=TOOLS, context_window=2_000,  # type: ignore[call-overload]
                      reserve_output=100)
    assert plan.fits and plan.steps[-1].dropped_ids
    request = plan.request
    assert request["model"] == "gpt-4o" and request["word_limit"] == 100 and request["preamble"] == "Be brief."
    assert request["tools"] == [{"name": "lookup"}]
    assert request["lines"][-1] == {"speaker": "human", "said": "last question"}
    # the tools are counted as the form sends them: the budget is the window less what its tool list costs
    counter = ctxwin.get_counter("gpt-4o")
    assert plan.budget.tools_tokens == counter.count_tools([{"type": "function", "function": {"name": "lookup"}}])


def test_a_registered_form_answers_for_its_sdk_rules_and_media(registered: Transcript) -> None:
    image = {"type": "image_url", "image_url": {"url": PNG}}
    messages = [HumanMessage("look"), AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "c1"}]),
                ToolMessage([{"type": "text", "text": "found"}, image], tool_call_id="c1"), AIMessage("done")]
    plan = ctxwin.fit(messages, "gpt-4o", output="transcript", tools=TOOLS)  # type: ignore[call-overload]
    assert "a transcript must end with the user" in plan.warnings
    assert [s.name for s in plan.steps][:1] == ["place_media"]  # the image left the tool result for a user line
    assert plan.request["lines"][3]["speaker"] == "human"


def test_a_registered_form_is_read_back_and_planned_in_sessions(registered: Transcript) -> None:
    request = {"lines": [], "messages": chat(3)}
    assert form_of(request) is registered
    plan = ctxwin.Planner("gpt-4o", output="request").plan(request)
    assert plan.output == "transcript" and "lines" in plan.request
    session = ctxwin.Planner("gpt-4o", output="transcript", context_window=3_000, reserve_output=100).session()
    cuts = 0
    for i in range(12):
        session.add_messages([HumanMessage(f"question {i} " * 30), AIMessage(f"answer {i} " * 30)])
        session.add_messages(HumanMessage("and?"))
        plan = session.plan()
        assert plan.fits and plan.request["lines"][-1] == {"speaker": "human", "said": "and?"}
        cuts += plan.cache is not None and plan.cache.cut
    assert cuts  # the session cut in the toy form too


def test_a_form_name_is_taken_once(registered: Transcript) -> None:
    with pytest.raises(ValueError, match="'transcript' exists already"):
        register_form(Transcript())
    for name in ("messages", "request"):
        other = Transcript()
        other.name = name  # type: ignore[misc]
        with pytest.raises(ValueError, match="exists already"):
            register_form(other)


def test_an_unregistered_form_is_no_output() -> None:
    with pytest.raises(ValueError, match="output must be one of 'messages', 'openai', 'responses', 'anthropic', "
                                         "'request', got 'transcript'"):
        ctxwin.fit(chat(1), output="transcript")  # type: ignore[call-overload]
