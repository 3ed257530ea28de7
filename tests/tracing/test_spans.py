"""Spans of fits and trims, recorded by the real OpenTelemetry SDK with its in-memory exporter."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from ctxwin import _tracing as tracing
from ctxwin import fit, fit_many, trim_messages
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import BudgetExceeded, Planner

COUNTER = "tiktoken:o200k_base"
SECRET = "SECRET-CONTENT-7f3a"


def conversation(turns: int = 30) -> list[BaseMessage]:
    """A system prompt, then turns of a question, a tool call with a long result, and an answer; every text
    carries SECRET so a span that quotes any message is caught. The first question states a fact the last one asks
    about (what a fit that drops the first turns recalls)."""
    out: list[BaseMessage] = [SystemMessage(f"You are helpful. {SECRET}", id="sys")]
    for t in range(turns):
        if t == 0:
            question = "Note that the Lyon warehouse lease reference is LY-2231-X. "
        elif t == turns - 1:
            question = "Going back to the Lyon warehouse lease: what was its reference? "
        else:
            question = ""
        out.append(HumanMessage(f"question {t} {SECRET} {question}" + "alpha beta " * 20, id=f"u{t}"))
        out.append(AIMessage("", tool_calls=[{"name": "search", "args": {"q": "x"}, "id": f"c{t}"}], id=f"a{t}"))
        out.append(ToolMessage(f"{SECRET} " + "result line\n" * 150, tool_call_id=f"c{t}", id=f"r{t}"))
        out.append(AIMessage(f"answer {t} {SECRET} " + "gamma delta " * 20, id=f"b{t}"))
    return out


@pytest.fixture
def provider() -> Iterator[TracerProvider]:
    provider = TracerProvider()
    with tracing.use_provider(provider):
        yield provider
    provider.shutdown()


@pytest.fixture
def exporter(provider: TracerProvider) -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


def summarize_first(messages: list[BaseMessage]) -> str:
    return f"{len(messages)} earlier messages about alpha and gamma"


@pytest.mark.slow
def test_the_steps_nest_under_the_callers_span(provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    planner = Planner("gpt-4o", context_window=1500, reserve_output=0, summarizer=summarize_first, keep_last=12,
                      ledger_share=0)  # (the ledger's step is traced like the others)
    with provider.get_tracer("agent").start_as_current_span("agent run") as parent:
        plan = planner.plan(conversation())
    assert [step.name for step in plan.steps] == [
        "drop_compacted", "clear_reasoning", "filter", "truncate_tool_output", "summarize", "trim", "recall"]
    spans = exporter.get_finished_spans()
    (top,) = by_name(spans, "ctxwin.plan")
    assert top.parent is not None and top.parent.span_id == parent.get_span_context().span_id
    assert top.context.trace_id == parent.get_span_context().trace_id
    steps = [span for span in spans if span.name.startswith("ctxwin.step ")]
    assert [span.name for span in steps] == [f"ctxwin.step {s.name}" for s in plan.steps]
    assert all(span.parent is not None and span.parent.span_id == top.context.span_id for span in steps)
    children = [span for span in spans if span.parent is not None and span.parent.span_id == top.context.span_id]
    assert children == steps
    # Below the steps only the trim engine's rounds, each a trim_messages span inside the trim step.
    for span in set(spans) - {*steps, top, *by_name(spans, "agent run")}:
        assert span.name == "ctxwin.trim_messages" and span.parent.span_id == steps[5].context.span_id

    attributes = dict(top.attributes or {})
    assert attributes["gen_ai.request.model"] == "gpt-4o"
    assert attributes["gen_ai.usage.input_tokens"] == plan.tokens_after == attributes["ctxwin.tokens.after"]
    assert attributes["ctxwin.budget.max_input_tokens"] == plan.budget.max_input_tokens
    assert attributes["ctxwin.counter.name"] == plan.counter and attributes["ctxwin.counter.exact"] is True
    assert attributes["ctxwin.fits"] is True
    assert list(attributes["ctxwin.warnings"]) == plan.warnings  # type: ignore[arg-type]
    assert list(attributes["ctxwin.steps"]) == [s.name for s in plan.steps]  # type: ignore[arg-type]
    assert attributes["ctxwin.messages.input"] == len(conversation())
    assert attributes["ctxwin.messages.output"] == len(plan.messages)
    for kind in ("dropped", "truncated", "summarized"):
        total = sum(len(getattr(step, f"{kind}_ids")) for step in plan.steps)
        assert attributes[f"ctxwin.messages.{kind}"] == total

    for span, step in zip(steps, plan.steps, strict=True):
        attrs = dict(span.attributes or {})
        assert attrs["ctxwin.step.name"] == step.name
        assert attrs["ctxwin.step.skipped"] == step.skipped
        assert list(attrs["ctxwin.step.notes"]) == step.notes  # type: ignore[arg-type]
        for kind in ("dropped", "truncated", "summarized"):
            ids = getattr(step, f"{kind}_ids")
            assert attrs[f"ctxwin.messages.{kind}"] == len(ids)
            assert list(attrs.get(f"ctxwin.messages.{kind}_ids", ())) == ids[: tracing.MAX_IDS]  # type: ignore[arg-type]
    truncate = dict(steps[3].attributes or {})
    assert truncate["ctxwin.messages.truncated"] > 0
    summarize = dict(steps[4].attributes or {})
    assert summarize["ctxwin.messages.summarized"] > 0


def test_no_span_carries_message_content_by_default(exporter: InMemorySpanExporter) -> None:
    plan = fit(conversation(), "gpt-4o", context_window=1500, reserve_output=0, summarizer=summarize_first,
               keep_last=12, ledger_share=0)
    assert len(plan.steps) == 7 and plan.recalled is not None  # recall's query is content: on the plan, not a span
    trim_messages(conversation(), max_tokens=500, token_counter=COUNTER)
    spans = exporter.get_finished_spans()
    assert {span.name for span in spans} >= {"ctxwin.plan", "ctxwin.step trim", "ctxwin.trim_messages"}
    for span in spans:
        assert SECRET not in json.dumps(dict(span.attributes or {}), default=list)
        assert not span.events


def test_content_is_on_the_plan_span_only_when_opted_in(
    exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(tracing.CONTENT_ENV, "1")
    plan = fit(conversation(3), "gpt-4o", context_window=3000, reserve_output=500, output="openai")
    (top,) = by_name(exporter.get_finished_spans(), "ctxwin.plan")
    attributes = dict(top.attributes or {})
    assert json.loads(str(attributes["ctxwin.content.output"])) == plan.messages
    assert SECRET in str(attributes["ctxwin.content.input"])


def test_a_failing_summarizer_records_its_type_not_its_text(exporter: InMemorySpanExporter) -> None:
    def broken(_: list[BaseMessage]) -> str:
        raise RuntimeError(SECRET)

    plan = fit(conversation(), "gpt-4o", context_window=3000, reserve_output=500, summarizer=broken)
    (step,) = by_name(exporter.get_finished_spans(), "ctxwin.step summarize")
    assert step.status.status_code is StatusCode.ERROR and step.status.description == "RuntimeError"
    assert dict(step.attributes or {})["error.type"] == "RuntimeError"
    assert SECRET not in repr(step.to_json())
    assert plan.fits  # the plan went on: trim did its job, and its span is fine
    (trim,) = by_name(exporter.get_finished_spans(), "ctxwin.step trim")
    assert trim.status.status_code is StatusCode.UNSET


def test_strict_over_budget_marks_the_plan_span_failed(exporter: InMemorySpanExporter) -> None:
    with pytest.raises(BudgetExceeded):
        fit([HumanMessage("alpha " * 500)], "gpt-4o", context_window=200, reserve_output=0, strict=True)
    (top,) = by_name(exporter.get_finished_spans(), "ctxwin.plan")
    assert dict(top.attributes or {})["error.type"] == "BudgetExceeded"
    assert dict(top.attributes or {})["ctxwin.fits"] is False


def test_aplan_traces_like_plan(exporter: InMemorySpanExporter) -> None:
    async def summarize(messages: list[BaseMessage]) -> str:
        return summarize_first(messages)

    planner = Planner("gpt-4o", context_window=1500, reserve_output=0, summarizer=summarize, keep_last=12,
                      ledger_share=0)
    plan = asyncio.run(planner.aplan(conversation()))
    spans = exporter.get_finished_spans()
    (top,) = by_name(spans, "ctxwin.plan")
    steps = [span for span in spans if span.parent is not None and span.parent.span_id == top.context.span_id]
    assert len(steps) == 7
    assert [span.name for span in steps] == [f"ctxwin.step {s.name}" for s in plan.steps]


def test_trim_messages_span(exporter: InMemorySpanExporter) -> None:
    messages = conversation(5)
    kept = trim_messages(messages, max_tokens=600, token_counter=COUNTER)
    transform = trim_messages(max_tokens=600, token_counter=COUNTER, strategy="first")
    transform(messages)
    first, second = by_name(exporter.get_finished_spans(), "ctxwin.trim_messages")
    attributes = dict(first.attributes or {})
    assert attributes["ctxwin.messages.input"] == len(messages)
    assert attributes["ctxwin.messages.output"] == len(kept) < len(messages)
    assert attributes["ctxwin.budget.max_tokens"] == 600.0 and attributes["ctxwin.trim.strategy"] == "last"
    assert attributes["ctxwin.counter.name"] == "tiktoken:o200k_base"
    assert dict(second.attributes or {})["ctxwin.trim.strategy"] == "first"


def test_fit_many_items_are_spans_with_their_plans_inside(exporter: InMemorySpanExporter) -> None:
    items: list[Any] = [conversation(2), [{"role": "nobody", "content": "x"}], conversation(1)]
    results = list(fit_many(items, workers=1, context_window=3000, reserve_output=500))
    assert [r.ok for r in results] == [True, False, True]
    spans = exporter.get_finished_spans()
    item_spans = by_name(spans, "ctxwin.fit_many.item")
    assert [dict(s.attributes or {})["ctxwin.batch.index"] for s in item_spans] == [0, 1, 2]
    assert item_spans[1].status.status_code is StatusCode.ERROR
    assert dict(item_spans[1].attributes or {})["error.type"] in ("InvalidTypeError", "InvalidInputError")
    plans = by_name(spans, "ctxwin.plan")
    assert {p.parent.span_id for p in plans if p.parent} == {item_spans[0].context.span_id,
                                                              item_spans[2].context.span_id}


def test_ids_are_capped_and_counts_complete(exporter: InMemorySpanExporter) -> None:
    messages: list[BaseMessage] = [HumanMessage(f"m{i} alpha", id=f"m{i}") for i in range(400)]
    plan = fit(messages, "gpt-4o", context_window=200, reserve_output=0, strategies="trim")
    (step,) = by_name(exporter.get_finished_spans(), "ctxwin.step trim")
    attributes = dict(step.attributes or {})
    assert attributes["ctxwin.messages.dropped"] == len(plan.steps[0].dropped_ids) > tracing.MAX_IDS
    assert list(attributes["ctxwin.messages.dropped_ids"]) == plan.steps[0].dropped_ids[: tracing.MAX_IDS]  # type: ignore[arg-type]


def test_tracing_counts_no_token_the_plan_would_not(exporter: InMemorySpanExporter) -> None:
    """The report's figures are lazy: a traced plan leaves the dropped history uncounted, as an untraced one does."""
    messages = conversation(200)
    traced = fit(messages, "gpt-4o", context_window=3000, reserve_output=500, strategies="trim")
    counted = traced.figures.counted(0)
    with tracing.use_provider(None):
        plain = fit(messages, "gpt-4o", context_window=3000, reserve_output=500, strategies="trim")
    assert counted is None and plain.figures.counted(0) is None
    (top,) = by_name(exporter.get_finished_spans(), "ctxwin.plan")
    assert "ctxwin.tokens.before" not in dict(top.attributes or {})
