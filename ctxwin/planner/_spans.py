"""What a plan's spans say (``ctxwin._tracing``): the plan's span at its start and end, and each step's span."""

from __future__ import annotations

import json
from typing import Any

from ctxwin import _tracing as tracing
from ctxwin.counters._base import TokenCounter
from ctxwin.messages import BaseMessage, convert_to_openai_messages
from ctxwin.planner._report import Figures, Labels, Plan, StepReport, Touched
from ctxwin.strategies._base import Budget, StepResult


def start_attributes(
    counter: TokenCounter, model: str | None, budget: Budget, messages: list[BaseMessage]
) -> dict[str, tracing.AttributeValue] | None:
    """What a plan's span says from the start: model, counter, budget, input size (None when nothing traces)."""
    if not tracing.enabled():
        return None
    attributes: dict[str, tracing.AttributeValue] = {
        "ctxwin.counter.name": str(counter.name),
        "ctxwin.counter.exact": not counter.max_relative_error,
        "ctxwin.budget.max_input_tokens": budget.max_input_tokens,
        "ctxwin.budget.context_window": budget.context_window,
        "ctxwin.budget.reserve_output": budget.reserve_output,
        "ctxwin.budget.tools_tokens": budget.tools_tokens,
        "ctxwin.budget.safety_margin": budget.safety_margin,
        "ctxwin.messages.input": len(messages),
    }
    if model is not None:
        attributes["gen_ai.request.model"] = model
    return attributes


def _touched(result: StepResult, labels: Labels) -> dict[str, tracing.AttributeValue]:
    """How many messages a step dropped, shortened and summarised, and the first ``tracing.MAX_IDS`` of their ids
    (named now only for a traced step, and at most that many)."""
    attributes: dict[str, tracing.AttributeValue] = {}
    for kind in Touched.KINDS:
        messages = result.touched(kind)
        attributes[f"ctxwin.messages.{kind}"] = len(messages)
        if messages:
            attributes[f"ctxwin.messages.{kind}_ids"] = labels.names(messages[: tracing.MAX_IDS])
    return attributes


def _tokens(figures: Figures, before: int, after: int) -> dict[str, tracing.AttributeValue]:
    """The token figures the plan has counted already: a trace never makes it tokenize what it dropped unread."""
    values = {"ctxwin.tokens.before": figures.counted(before), "ctxwin.tokens.after": figures.counted(after)}
    return {key: value for key, value in values.items() if value is not None}


def step_attributes(
    report: StepReport, result: StepResult, labels: Labels, before: int
) -> dict[str, tracing.AttributeValue]:
    return {
        "ctxwin.step.name": report.name,
        "ctxwin.step.index": report.index,
        "ctxwin.step.skipped": report.skipped,
        "ctxwin.step.notes": list(report.notes),
        "ctxwin.step.warnings": list(result.warnings),
        "ctxwin.messages.before": before,
        "ctxwin.messages.after": len(result.messages),
        **_touched(result, labels),
        **_tokens(report.figures, report.index, report.index + 1),
    }


def plan_attributes(plan: Plan, inputs: list[BaseMessage], messages: list[BaseMessage]) -> dict[str, Any]:
    """What a plan's span says at the end: the outcome, totals over the steps, the content only when opted in."""
    attributes: dict[str, Any] = {
        "gen_ai.usage.input_tokens": plan.tokens_after,
        "ctxwin.fits": plan.fits,
        "ctxwin.warnings": list(plan.warnings),
        "ctxwin.steps": [step.name for step in plan.steps],
        "ctxwin.messages.output": len(messages),
        **_tokens(plan.figures, 0, len(plan.figures) - 1),
    }
    for position, kind in enumerate(("dropped", "truncated", "summarized")):
        attributes[f"ctxwin.messages.{kind}"] = sum(step.touched.counts[position] for step in plan.steps)
    if tracing.content_enabled():
        attributes["ctxwin.content.input"] = json.dumps(convert_to_openai_messages(inputs), ensure_ascii=False)
        attributes["ctxwin.content.output"] = json.dumps(convert_to_openai_messages(messages), ensure_ascii=False)
    return attributes
