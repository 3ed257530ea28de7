"""``ctxwin fit FILE --model M``: fit conversations to a model's budget and write them back in their own form.

One conversation (JSON, or JSONL of messages): a budget bar and one row per step go to stderr (``--json``: a JSON
report to stdout, nothing on stderr but warnings), the fitted conversation to ``-o OUT`` or, without ``-o`` (or
with ``-o -``), to stdout, in the shape and request form it came in (``ctxwin.cli._io.fitted_document``): a list
stays a list, a request object (chat completions', Anthropic's with its ``system``, Responses' with ``input`` and
``instructions``) keeps its other keys, its messages in its own form. Many conversations (JSONL, one per line,
read as a stream): one output line each, in input order, the line's own object likewise, with ``"ctxwin":
{"line": N, "plan": {...}}`` added, fitted on ``--workers`` processes (``ctxwin.cli._fit_file``; the output does
not depend on how many); a bad line is reported on stderr and the run goes on. A progress bar is drawn on stderr
when it is a terminal. Without ``--model`` or ``--counter``, each request is fitted for the model its ``model`` key
names (``counter_choice``); ``--context-window`` may lower a model's window, not raise it.

Files are never lost: flags are checked first (a bad one is a usage error naming it, exit 2, before anything is
read), ``-o`` may not be an input, the output is opened only after the input was read (a JSONL batch streams into
a temporary file) and replaces ``-o`` only when the run got to the end (``ctxwin.cli._atomic``). Exit codes: see
``ctxwin.cli._output``; a conversation that does not fit is a warning, or exit 3 with ``--strict`` (``-o`` then
keeps its old content).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import sys
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any, cast

from ctxwin._cpus import available_cpus
from ctxwin._plural import plural
from ctxwin.batch._item import FIT_MODEL, Fitter, describe
from ctxwin.batch._progress import Progress
from ctxwin.cli._atomic import AtomicOutput, writes_over
from ctxwin.cli._budgets import parse_budget
from ctxwin.cli._counter_choice import names_own_model, request_model_spec, window_error
from ctxwin.cli._fit_file import FitLines, fit_lines, full_report, seekable
from ctxwin.cli._io import (
    ConversationLine,
    RawConversation,
    fitted_document,
    read_raw_conversations,
    read_tools,
    request_model,
)
from ctxwin.cli._output import (
    EXIT_CODES_HELP,
    EXIT_INPUT,
    EXIT_OK,
    EXIT_OVER_BUDGET,
    error,
    usage_error,
    warning,
)
from ctxwin.cli._trace import SDK_MISSING, printed_trace
from ctxwin.counters import get_counter, get_model
from ctxwin.counters._errors import TokenizerDataError
from ctxwin.planner import FitConfig, Plan
from ctxwin.planner._chain import build_chain
from ctxwin.strategies import get_strategy_factory
from ctxwin.strategies._salience import extractive_summarizer

BAR_WIDTH = 60
NO_ROOM_HINT = "lower --reserve, raise --context-window, or add --summarize"


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
            f"{step.name:<22} {step.tokens_before:>9,} {step.tokens_after:>9,}  {len(step.dropped_ids):>7,} "
            f"{len(step.truncated_ids):>9,} {len(step.summarized_ids):>10,}  {'; '.join(step.notes)}".rstrip()
        )
    verdict = "fits" if plan.fits else "DOES NOT FIT"
    lines.append(
        f"{verdict}: {plan.tokens_before:,} -> {plan.tokens_after:,} tokens for an input budget of "
        f"{plan.budget.max_input_tokens:,} ({100 * plan.budget_used:.0f}% used, "
        f"{plural(plan.recent_turns_verbatim, 'recent turn')} verbatim)"
    )
    recalled = plan.recalled
    if recalled is not None:
        query = " ".join(recalled.query.split())
        lines.append(f"recalled {plural(len(recalled.excerpts), 'excerpt')} ({recalled.tokens:,} tokens) from "
                     f"{', '.join(recalled.labels)} for {query[:100]!r}")
    lines += [f"warning: {w}" for w in plan.warnings]
    return lines


def _strategies(args: argparse.Namespace) -> list[str] | None:
    """``--strategy`` as names, each checked against the registry; ValueError for the usage error."""
    if args.strategy is None:
        return None
    names = [s.strip() for s in args.strategy.split(",")]
    if not any(names):
        raise ValueError("expected comma-separated strategy names (see `ctxwin strategies`), got none")
    if not all(names):
        raise ValueError(f"{args.strategy!r} has an empty name")
    for name in names:
        get_strategy_factory(name)  # ValueError naming the close matches
    return names


def _check_flags(args: argparse.Namespace) -> int | None:
    """Every usage error, named by its flag, before any file is read; None when the flags are fine."""
    parser = args.parser
    for name, other in (("FILE", args.file), ("--tools", args.tools)):
        if other is not None and writes_over(args.output, other):
            where = "stdout" if args.output in (None, "-") else args.output
            return usage_error(parser, "-o/--output", f"{where} is the same file as {name}; write to another file")
    try:
        strategies = _strategies(args)
    except ValueError as exc:
        return usage_error(parser, "--strategy", exc)
    summarizing = strategies is None or any(step.summarizes for step in build_chain(strategies) or [])
    if (args.summarize or args.keep_last is not None) and not summarizing:
        flag = "--summarize" if args.summarize else "--keep-last"
        return usage_error(parser, flag, "needs 'summarize' in --strategy (or leave --strategy out)")
    model_name = _model(args)
    try:
        model = get_model(model_name) if model_name else None
    except ValueError as exc:
        return usage_error(parser, "--model", exc)
    if args.counter is not None:
        try:
            get_counter(args.counter)
        except TokenizerDataError:
            pass  # the counter exists, its data is missing here: an environment problem (exit 1), reported next
        except (ValueError, TypeError) as exc:
            return usage_error(parser, "--counter", exc)
    if args.model and model is not None and (problem := window_error(args.context_window, model)) is not None:
        return usage_error(parser, "--context-window", problem)
    if args.context_window is not None:
        window = args.context_window
    elif model is not None:
        window = model.context_window
    else:
        return usage_error(parser, "--context-window", "is needed with --counter when no --model is given")
    if args.trace and args.workers != 1:
        return usage_error(parser, "--trace", "fits in this process, where the spans are recorded; drop --workers")
    if args.reserve is not None and args.reserve >= window:
        return usage_error(
            parser,
            "--reserve",
            f"{args.reserve:,} tokens leaves no room for the input in a context window of {window:,} tokens "
            "(--context-window)",
        )
    return None


def _model(args: argparse.Namespace) -> str | None:
    """``--model``; without it ``fit``'s default model, unless ``--counter`` says how to count."""
    return args.model or (None if args.counter else FIT_MODEL)


def _fit_arguments(args: argparse.Namespace, tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The ``Fitter``'s (and ``fit_many``'s) keyword arguments from the (checked) command line: its ``FitConfig``."""
    config = FitConfig(
        model=_model(args),
        strategies=_strategies(args),
        context_window=args.context_window,
        reserve_output=args.reserve,
        tools=tools,
        counter=args.counter,
        keep_last=args.keep_last,
        summarizer=extractive_summarizer if args.summarize else None,
        output="request",  # each conversation written back in the request form it came in
    )
    return {"config": config}


def run(args: argparse.Namespace) -> int:
    usage = _check_flags(args)
    if usage is not None:
        return usage
    if not args.trace:
        return _run(args)
    try:
        trace = printed_trace()
    except ImportError:
        return usage_error(args.parser, "--trace", SDK_MISSING)
    with trace:
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    workers = args.workers or available_cpus()
    try:
        tools = read_tools(args.tools)
        arguments = _fit_arguments(args, tools)
        # Builds the planner: bad arguments are reported before any file is read (workers build their own).
        fitter = Fitter(arguments) if workers == 1 else None
    except (ValueError, TypeError, TokenizerDataError) as exc:  # ConversationFileError, bad tool definitions
        return error(exc)
    output = AtomicOutput(args.output)
    try:
        output.check()
    except OSError as exc:
        return error(f"cannot write {output.name}: {exc.strerror or exc}")
    name = "<stdin>" if args.file == "-" else args.file
    with output:
        try:
            with seekable(args.file) if workers > 1 else nullcontext(args.file) as path:
                items = read_raw_conversations(path, name)
                first = next(items)
                if isinstance(first, RawConversation):  # the file is one conversation
                    chosen = _fitter_for(first, fitter, arguments, args)
                    if isinstance(chosen, int):
                        return chosen
                    status = _fit_one(first, chosen, output, args, tools)
                elif workers > 1:  # lines of conversations: the workers read them from the file themselves
                    status = _fit_lines(path, None, arguments, output, args, tools, workers)
                else:  # lines of conversations, all of them ConversationLine, fitted here as they are read
                    lines = cast(Iterator[ConversationLine], itertools.chain([first], items))
                    status = _fit_lines(path, lines, arguments, output, args, tools, 1)
        except (ValueError, TypeError, TokenizerDataError) as exc:
            # unreadable, a broken document, or an argument the workers' planners refused: nothing written
            return error(exc)
        except OSError as exc:
            return error(f"cannot write {output.name}: {exc.strerror or exc}")
    return status


def _fitter_for(
    item: RawConversation, fitter: Fitter | None, arguments: dict[str, Any], args: argparse.Namespace
) -> Fitter | int:
    """The fitter for the file's one request: for the model it names (else ``fit``'s default) when the command line
    named no model or counter (``--model`` wins, with a warning when they differ), or the exit code after
    reporting why not."""
    name = request_model(item.document)
    if not names_own_model(args):
        if name is not None and args.model is not None and _model_name(name) != _model_name(args.model):
            warning(f"{item.source} names the model {name!r}; fitting for --model {args.model}, which wins")
        return fitter or Fitter(arguments)
    try:
        model = request_model_spec(name) if name is not None else get_model(FIT_MODEL)
    except ValueError as exc:
        return error(f"{item.source}: {exc}")
    problem = window_error(args.context_window, model)
    if problem is not None:
        whose = f"the model {item.source} names" if name is not None else "the default model: give --model for another"
        return usage_error(args.parser, "--context-window", f"{problem} ({whose})")
    if fitter is not None and fitter.planner.model == model.name:
        return fitter
    return Fitter({**arguments, "model": model.name})


def _model_name(name: str) -> str:
    """The registry's name for a model name as written (itself when unknown)."""
    try:
        return get_model(name).name
    except ValueError:
        return name


def _different_tools(args: argparse.Namespace, tools: list[dict[str, Any]] | None, own: Any) -> bool:
    return args.tools is not None and bool(own) and own != tools


def _fit_one(
    item: RawConversation,
    fitter: Fitter,
    output: AtomicOutput,
    args: argparse.Namespace,
    tools: list[dict[str, Any]] | None,
) -> int:
    if _different_tools(args, tools, item.tools):
        return usage_error(
            args.parser, "--tools", f"{item.source} has its own 'tools', which differ from {args.tools}; give one"
        )
    try:
        plan = fitter.plan(item.request)
    except Exception as exc:  # as fit_many reports an item: the input's error, or what else stopped it
        return error(f"{item.source}: {describe(exc)}")
    fitted = fitted_document(item.messages if item.document is None else item.document, plan.request)
    if args.json:
        report = {**full_report(plan), **({} if output.path else {"messages": plan.messages})}
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print("\n".join(plan_lines(plan, item.source)), file=sys.stderr)
    status = _verdict(0 if plan.fits else 1, 1, args, output)
    if status == EXIT_OK and (output.path or not args.json):
        out = output.stream()
        json.dump(fitted, out, ensure_ascii=False, indent=2)
        out.write("\n")
        output.commit()
    return status


def _verdict(over: int, total: int, args: argparse.Namespace, output: AtomicOutput) -> int:
    """Warn about conversations that do not fit; with --strict that is exit 3 and ``-o`` keeps its old content."""
    if not over:
        return EXIT_OK
    if total == 1:
        what = "the conversation does not fit"
    else:
        what = f"{over:,} of {plural(total, 'conversation')} {'does' if over == 1 else 'do'} not fit"
    if args.strict:
        kept = f"; {output.path} left as it was" if output.path else ""
        print(f"error: {what} the budget ({NO_ROOM_HINT}){kept}", file=sys.stderr)
        return EXIT_OVER_BUDGET
    warning(f"{what} the budget ({NO_ROOM_HINT}; --strict makes this exit 3)")
    return EXIT_OK


def _fit_lines(
    path: str,
    lines: Iterator[ConversationLine] | None,
    arguments: dict[str, Any],
    output: AtomicOutput,
    args: argparse.Namespace,
    tools: list[dict[str, Any]] | None,
    workers: int,
) -> int:
    """One output line per conversation, in input order: fitted here as ``lines`` are read, or by ``workers``
    processes that read the file ``path`` themselves (``ctxwin.cli._fit_file``)."""
    progress = Progress("fitted")
    mapper = functools.partial(FitLines, arguments, tools, args.json, names_own_model(args))
    name = "<stdin>" if args.file == "-" else args.file
    result = fit_lines(path, lines, output.stream(), mapper, workers=workers, progress=progress, name=name)
    progress.close()
    status = _verdict(result.over_budget, result.fitted, args, output)
    if status == EXIT_OK and result.fitted:  # not when no line could be fitted: an empty file would replace -o
        output.commit()
    return EXIT_INPUT if result.errors else status


def _token_amount(*, zero: bool) -> Any:
    def parse(text: str) -> int:
        try:
            return parse_budget(text, what="amount", zero=zero)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def _keep_last(text: str) -> int:
    try:
        count = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        count = -1
    if count < 0:
        raise argparse.ArgumentTypeError(f"expected a number of messages (0 or more), got {text!r}")
    return count



def add_arguments(fit: argparse.ArgumentParser) -> None:
    fit.epilog = EXIT_CODES_HELP
    fit.add_argument(
        "file", help="JSON or JSONL conversation(s): chat messages, or chat completions, Anthropic or Responses "
        "requests (written back in their form); - for stdin"
    )
    fit.add_argument(
        "--model", "-m", help=f"the model to fit for (see `ctxwin models`; default: the model the request names in "
        f"its 'model' key, else {FIT_MODEL}; given, it wins over the request's)"
    )
    fit.add_argument("--counter", "-c", help="a counter spec instead of the model's (see `ctxwin counters`)")
    fit.add_argument(
        "--context-window",
        type=_token_amount(zero=False),
        help="lower the model's context window (8000, 8k; above the model's is refused)",
    )
    fit.add_argument(
        "--reserve",
        type=_token_amount(zero=True),
        help="tokens reserved for the reply (default: the request's own max_tokens, else the model's max output, at "
        "most an eighth of the window (8k when the window allows) and half of it)",
    )
    fit.add_argument("--tools", help="a JSON file with the tool definitions sent with the request")
    fit.add_argument("--strategy", help="comma-separated strategies, e.g. truncate_tool_output,trim")
    fit.add_argument("--summarize", action="store_true", help="summarise older turns (offline, extractive)")
    fit.add_argument(
        "--keep-last", type=_keep_last, help="summarise older turns, keeping the last N messages verbatim"
    )
    fit.add_argument(
        "--strict", action="store_true", help="exit 3 (-o left as it was) when a conversation does not fit"
    )
    fit.add_argument("--json", action="store_true", help="print a JSON report instead of the table")
    fit.add_argument("--output", "-o", help="write the fitted conversation(s) here (default, or -: stdout)")
    fit.add_argument(
        "--workers",
        "-w",
        type=_worker_count,
        default=1,
        help="processes for a JSONL file of many conversations; 0 = all cores (default: 1)",
    )
    fit.add_argument(
        "--trace",
        action="store_true",
        help="print the OpenTelemetry span tree of the run (steps, durations, attributes) to stderr; needs "
        "opentelemetry-sdk",
    )


def _worker_count(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = -1
    if count < 0:
        raise argparse.ArgumentTypeError(f"expected a number of processes (0 = all cores), got {text!r}")
    return count

