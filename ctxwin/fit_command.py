"""``ctxwin fit FILE --model M``: fit conversations to a model's budget and write them in OpenAI format.

One conversation (JSON, or JSONL of messages): a budget bar and one row per step go to stderr (``--json``: a JSON
report to stdout), the fitted conversation to ``-o OUT`` or, without ``-o``, to stdout. Many conversations (JSONL,
one per line): one output line each, ``{"messages": [...], "plan": {...}}``, in input order; a bad line is reported
on stderr and the run goes on (exit code 1 at the end). A progress bar is drawn on stderr when it is a terminal.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from contextlib import nullcontext
from typing import IO, Any

from ctxwin.conversation_io import Conversation, ConversationFileError, read_conversations
from ctxwin.counters.errors import TokenizerDataError
from ctxwin.messages import convert_to_openai_messages
from ctxwin.planner import Plan, Planner
from ctxwin.progress import Progress
from ctxwin.strategies.extractive import extractive_summarizer

EXIT_OK, EXIT_INPUT = 0, 1
BAR_WIDTH = 60


def budget_bar(plan: Plan, system_tokens: int) -> list[str]:
    """The context window as a bar: system, tools, history, reserved output, free space."""
    budget = plan.budget
    history = max(plan.tokens_after - system_tokens - budget.tools_tokens, 0)
    parts = [
        ("S", "system", system_tokens),
        ("T", "tools", budget.tools_tokens),
        ("H", "history", history),
        ("R", "reserved output", budget.reserve_output),
        ("M", "safety margin", budget.safety_margin),
    ]
    free = max(budget.context_window - sum(n for _, _, n in parts), 0)
    parts.append((".", "free", free))
    scale = BAR_WIDTH / max(budget.context_window, sum(n for _, _, n in parts), 1)
    bar = "".join(mark * max(round(n * scale), 1 if n else 0) for mark, _, n in parts)
    legend = "  ".join(f"{mark} {label} {n:,}" for mark, label, n in parts if n or label == "free")
    return [f"[{bar}] {budget.context_window:,} tokens", legend]


def plan_lines(plan: Plan, where: str) -> list[str]:
    lines = [
        f"{where}: {plan.model or 'custom budget'} — counter {plan.counter}",
        *budget_bar(plan, plan.system_tokens),
    ]
    lines.append(f"{'step':<22} {'before':>9} {'after':>9}  dropped truncated summarised  notes")
    for step in plan.steps:
        lines.append(
            f"{step.name:<22} {step.tokens_before:>9,} {step.tokens_after:>9,}  {len(step.dropped_ids):>7} "
            f"{len(step.truncated_ids):>9} {len(step.summarized_ids):>10}  {'; '.join(step.notes)}"
        )
    verdict = "fits" if plan.fits else "DOES NOT FIT"
    lines.append(
        f"{verdict}: {plan.tokens_before:,} -> {plan.tokens_after:,} tokens for an input budget of "
        f"{plan.budget.max_input_tokens:,}"
    )
    lines += [f"warning: {w}" for w in plan.warnings]
    return lines


def _report(plan: Plan) -> dict[str, Any]:
    return {
        **plan.summary(),
        "model": plan.model,
        "counter": plan.counter,
        "context_window": plan.budget.context_window,
        "reserve_output": plan.budget.reserve_output,
        "tools_tokens": plan.budget.tools_tokens,
        "safety_margin": plan.budget.safety_margin,
        "steps": [dataclasses.asdict(s) for s in plan.steps],
    }


def _planner(args: argparse.Namespace, tools: list[dict[str, Any]] | None) -> Planner:
    strategies = [s.strip() for s in args.strategy.split(",") if s.strip()] if args.strategy else None
    return Planner(
        args.model,
        strategies,
        context_window=args.context_window,
        reserve_output=args.reserve,
        tools=tools,
        counter=args.counter,
        keep_last=args.keep_last,
        summarizer=extractive_summarizer if args.summarize else None,
    )


def _load_tools(path: str | None) -> list[dict[str, Any]] | None:
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            tools = json.load(handle)
    except (OSError, json.JSONDecodeError) as exc:
        raise ConversationFileError(f"{path}: cannot read tool definitions: {exc}") from None
    if isinstance(tools, dict) and isinstance(tools.get("tools"), list):
        tools = tools["tools"]
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise ConversationFileError(f"{path}: expected a JSON list of tool definitions")
    return tools


def cmd_fit(args: argparse.Namespace) -> int:
    try:
        tools = _load_tools(args.tools)
        planner = _planner(args, tools)
        items = list(read_conversations(args.file))
    except (ValueError, TypeError, TokenizerDataError, ConversationFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    many = len(items) > 1 or (items and isinstance(items[0], Conversation) and items[0].line is not None)
    sink: Any = open(args.output, "w", encoding="utf-8") if args.output else nullcontext(sys.stdout)  # noqa: SIM115
    with sink as out:
        return _fit_many(items, planner, out, args) if many else _fit_one(items[0], planner, out, args)


def _fit_one(
    item: Conversation | ConversationFileError, planner: Planner, out: IO[str], args: argparse.Namespace
) -> int:
    if isinstance(item, ConversationFileError):
        print(f"error: {item}", file=sys.stderr)
        return EXIT_INPUT
    plan = _plan(planner, item)
    if plan is None:
        return EXIT_INPUT
    messages = _openai(plan)
    if args.json:
        report = {**_report(plan), **({} if args.output else {"messages": messages})}
        print(json.dumps(report, ensure_ascii=False, indent=2))
        if args.output:
            json.dump(messages, out, ensure_ascii=False, indent=2)
        return EXIT_OK
    print("\n".join(plan_lines(plan, item.source)), file=sys.stderr)
    json.dump(messages, out, ensure_ascii=False, indent=2)
    out.write("\n")
    return EXIT_OK


def _fit_many(
    items: list[Conversation | ConversationFileError], planner: Planner, out: IO[str], args: argparse.Namespace
) -> int:
    progress = Progress("fitted", len(items))
    for item in items:
        if isinstance(item, ConversationFileError):
            progress.error(f"error: {item}")
        else:
            plan = _plan(planner, item, progress)
            if plan is not None:
                line = {
                    "line": item.line,
                    "messages": _openai(plan),
                    "plan": _report(plan) if args.json else plan.summary(),
                }
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
        progress.step()
    progress.close()
    return EXIT_INPUT if progress.errors else EXIT_OK


def _plan(planner: Planner, item: Conversation, progress: Progress | None = None) -> Plan | None:
    where = f"{item.source}{f':{item.line}' if item.line else ''}"
    try:
        if item.tools and item.tools != planner.tools:  # tools saved with the conversation
            planner = planner.with_tools(item.tools)
        return planner.plan(item.messages)
    except (ValueError, TypeError) as exc:  # BudgetExceeded included: strict plans report the figures
        if progress is None:
            print(f"error: {where}: {exc}", file=sys.stderr)
        else:
            progress.error(f"error: {where}: {exc}")
    return None


def _openai(plan: Plan) -> list[dict[str, Any]]:
    return convert_to_openai_messages(plan.messages)


def add_fit_parser(commands: Any) -> None:
    fit = commands.add_parser("fit", help="fit conversations to a model's token budget and write them out")
    fit.add_argument("file", help="JSON or JSONL conversation(s) in OpenAI chat format, or - for stdin")
    fit.add_argument("--model", "-m", help="the model to fit for (see `ctxwin models`)")
    fit.add_argument("--counter", "-c", help="a counter spec instead of the model's (needs --context-window)")
    fit.add_argument("--context-window", type=int, help="override the model's context window")
    fit.add_argument("--reserve", type=int, help="tokens reserved for the reply (default: the model's max output)")
    fit.add_argument("--tools", help="a JSON file with the tool definitions sent with the request")
    fit.add_argument("--strategy", help="comma-separated strategies, e.g. truncate_tool_output,trim")
    fit.add_argument("--summarize", action="store_true", help="summarise older turns (offline, extractive)")
    fit.add_argument("--keep-last", type=int, help="summarise older turns, keeping the last N messages verbatim")
    fit.add_argument("--json", action="store_true", help="print a JSON report instead of the table")
    fit.add_argument("--output", "-o", help="write the fitted conversation(s) here (default: stdout)")
    fit.set_defaults(run=cmd_fit)
