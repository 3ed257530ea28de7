"""``ctxwin fit FILE --model M``: fit conversations to a model's budget and write them in OpenAI format.

One conversation (JSON, or JSONL of messages): a budget bar and one row per step go to stderr (``--json``: a JSON
report to stdout), the fitted conversation to ``-o OUT`` or, without ``-o``, to stdout. Many conversations (JSONL,
one per line, read as a stream): one output line each, ``{"line": N, "messages": [...], "plan": {...}}``, in input
order, fitted by ``ctxwin.batch.fit_many`` on ``--workers`` processes (the output does not depend on how many); a bad
line is reported on stderr and the run goes on (exit code 1 at the end). A progress bar is drawn on stderr when it
is a terminal.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections import deque
from collections.abc import Iterator
from contextlib import nullcontext
from typing import IO, Any, cast

from ctxwin.batch import fit_many
from ctxwin.batch.item import Fitter
from ctxwin.conversation_io import (
    ConversationFileError,
    ConversationLine,
    RawConversation,
    read_raw_conversations,
    read_tools,
    request_from_json,
)
from ctxwin.counters.errors import TokenizerDataError
from ctxwin.messages import convert_to_openai_messages
from ctxwin.planner import Plan
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
        "steps": [s.as_dict() for s in plan.steps],
    }


def _fit_arguments(args: argparse.Namespace, tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The Planner's (and ``fit_many``'s) keyword arguments from the command line."""
    strategies = [s.strip() for s in args.strategy.split(",") if s.strip()] if args.strategy else None
    return {
        "model": args.model,
        "strategies": strategies,
        "context_window": args.context_window,
        "reserve_output": args.reserve,
        "tools": tools,
        "counter": args.counter,
        "keep_last": args.keep_last,
        "summarizer": extractive_summarizer if args.summarize else None,
    }


def cmd_fit(args: argparse.Namespace) -> int:
    try:
        arguments = _fit_arguments(args, read_tools(args.tools))
        fitter = Fitter(arguments)  # builds the planner: bad arguments are reported before any file is read
        items = read_raw_conversations(args.file)
        first = next(items)
    except (ValueError, TypeError, TokenizerDataError, ConversationFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    sink: Any = open(args.output, "w", encoding="utf-8") if args.output else nullcontext(sys.stdout)  # noqa: SIM115
    with sink as out:
        if isinstance(first, RawConversation):  # the file is one conversation
            return _fit_one(first, fitter, out, args)
        # Otherwise the file is lines of conversations, all of them ConversationLine.
        lines = cast(Iterator[ConversationLine], itertools.chain([first], items))
        try:
            return _fit_many(lines, arguments, out, args)
        except ConversationFileError as exc:  # the file became unreadable part way (bad UTF-8)
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_INPUT


def _fit_one(item: RawConversation, fitter: Fitter, out: IO[str], args: argparse.Namespace) -> int:
    result = fitter.fit(0, {"messages": item.messages, "tools": item.tools})
    if result.plan is None:
        print(f"error: {item.source}: {result.error}", file=sys.stderr)
        return EXIT_INPUT
    plan = result.plan
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
    lines: Iterator[ConversationLine], arguments: dict[str, Any], out: IO[str], args: argparse.Namespace
) -> int:
    """One output line per conversation, in input order, fitted by ``fit_many`` on ``--workers`` processes.

    The workers parse the lines too (``decode``): this process only reads lines and writes results.
    """
    progress = Progress("fitted")
    in_flight: deque[ConversationLine] = deque()  # in input order, as the results come back

    def texts() -> Iterator[str]:
        for line in lines:
            in_flight.append(line)
            yield line.text

    workers = args.workers or None  # 0: all cores
    results = fit_many(
        texts(), workers=workers, progress=progress, decode=request_from_json, output="openai", **arguments
    )
    for result in results:
        line = in_flight.popleft()
        if result.plan is None:
            progress.error(f"error: {line.where}: {result.error}")
            continue
        report = _report(result.plan) if args.json else result.plan.summary()
        out.write(json.dumps({"line": line.line, "messages": result.plan.messages, "plan": report}, ensure_ascii=False))
        out.write("\n")
    progress.close()
    return EXIT_INPUT if progress.errors else EXIT_OK


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
    fit.add_argument(
        "--workers",
        "-w",
        type=_worker_count,
        default=1,
        help="processes for a JSONL file of many conversations; 0 = all cores (default: 1)",
    )
    fit.set_defaults(run=cmd_fit)


def _worker_count(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = -1
    if count < 0:
        raise argparse.ArgumentTypeError(f"expected a number of processes (0 = all cores), got {text!r}")
    return count
