"""``ctxwin fit FILE --model M``: fit conversations to a model's budget and write them back in their own form (one
conversation, or a JSONL stream of them on ``--workers`` processes). Flags are checked before anything is read, and
``-o`` is replaced only when the run got to the end.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import sys
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, cast

from ctxwin._cpus import available_cpus
from ctxwin._errors import InvalidInputError
from ctxwin._plural import plural
from ctxwin.batch._item import FIT_MODEL, Fitter, describe
from ctxwin.batch._progress import Progress
from ctxwin.cli._atomic import AtomicOutput, writes_over
from ctxwin.cli._counter_choice import request_model_spec
from ctxwin.cli._fit_file import FitLines, fit_lines, full_report, seekable
from ctxwin.cli._io import (
    ConversationLine,
    RawConversation,
    fitted_document,
    read_raw_conversations,
    request_model,
)
from ctxwin.cli._options import add_options, build_config, flag_names, nonempty, read_run_options, text_value
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
from ctxwin.planner._option_error import OptionError

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
    """Where the plan is from, the context window as a bar, then the plan's own report (``Plan.report``)."""
    return [f"{where}: {plan.model or 'custom budget'} — counter {plan.counter}", *budget_bar(plan, plan.system_tokens),
            *plan.report().splitlines()]


@dataclass(frozen=True)
class _Checked:
    """What the checked command line asks: the ``FitConfig`` (without a model when each request's own decides:
    ``own_models``), the tools given, and the ``Fitter``'s keyword arguments."""

    config: FitConfig
    own_models: bool
    strict: bool  # exit 3 when a conversation does not fit (the planner itself is not strict: it would raise)

    @property
    def arguments(self) -> dict[str, Any]:
        return {"config": self.config}

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        return None if self.config.tools is None else list(self.config.tools)


def _check_flags(args: argparse.Namespace) -> _Checked | int:
    """Every usage error, named by its flag (or ``--config``), before any conversation is read; else the run."""
    parser = args.parser
    for name, other in (("FILE", args.file), ("--tools", args.tools)):
        if other is not None and writes_over(args.output, other):
            where = "stdout" if args.output in (None, "-") else args.output
            return usage_error(parser, "-o/--output", f"{where} is the same file as {name}; write to another file")
    if args.trace and args.workers != 1:
        return usage_error(parser, "--trace", "fits in this process, where the spans are recorded; drop --workers")
    options = read_run_options(args)
    if isinstance(options, int):
        return options
    merged = options.merged
    if merged.get("output", "request") not in ("messages", "request"):
        warning(f"--config {args.config}: output {merged['output']!r} is for Python; ctxwin fit writes each "
                "request in the form it came in")
    own_models = merged.get("model") is None and merged.get("counter") is None
    config = build_config(options, args, output="request", strict=False)
    if isinstance(config, int):
        return config
    if isinstance(config.counter, str):  # its argument is checked when it is built (tiktoken:nope)
        try:
            get_counter(config.counter)
        except TokenizerDataError:
            pass  # the counter exists, its data is missing here: an environment problem (exit 1), reported next
        except (ValueError, TypeError) as exc:
            return usage_error(parser, options.where("counter", args), exc)
    if config.counter is not None and config.model is None and config.context_window is None:
        return usage_error(parser, "--context-window", "is needed with --counter when no --model is given")
    summarizing = config.strategies is None or any(step.summarizes for step in build_chain(config.strategies) or [])
    for option in ("summarizer", "keep_last"):
        if merged.get(option) is not None and not summarizing:
            return usage_error(parser, options.where(option, args),
                               "needs 'summarize' in --strategies (or leave --strategies out)")
    return _Checked(config, own_models, bool(merged.get("strict")))


def run(args: argparse.Namespace) -> int:
    checked = _check_flags(args)
    if isinstance(checked, int):
        return checked
    if not args.trace:
        return _run(args, checked)
    try:
        trace = printed_trace()
    except ImportError:
        return usage_error(args.parser, "--trace", SDK_MISSING)
    with trace:
        return _run(args, checked)


def _run(args: argparse.Namespace, checked: _Checked) -> int:
    workers = args.workers or available_cpus()
    arguments = checked.arguments
    try:
        # Builds the planner: bad arguments are reported before any file is read (workers build their own); with
        # each request's own model, its planner is built when the request is read.
        fitter = Fitter(arguments) if workers == 1 and not checked.own_models else None
    except (ValueError, TypeError, TokenizerDataError) as exc:  # bad tool definitions, tokenizer data missing
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
                    chosen = _fitter_for(first, fitter, checked, args)
                    if isinstance(chosen, int):
                        return chosen
                    status = _fit_one(first, chosen, output, args, checked)
                elif workers > 1:  # lines of conversations: the workers read them from the file themselves
                    status = _fit_lines(path, None, checked, output, args, workers)
                else:  # lines of conversations, all of them ConversationLine, fitted here as they are read
                    lines = cast(Iterator[ConversationLine], itertools.chain([first], items))
                    status = _fit_lines(path, lines, checked, output, args, 1)
        except (ValueError, TypeError, TokenizerDataError) as exc:
            # unreadable, a broken document, or an argument the workers' planners refused: nothing written
            return error(exc)
        except OSError as exc:
            return error(f"cannot write {output.name}: {exc.strerror or exc}")
    return status


def _fitter_for(
    item: RawConversation, fitter: Fitter | None, checked: _Checked, args: argparse.Namespace
) -> Fitter | int:
    """The fitter for the file's one request: for the model it names (else ``fit``'s default) when the command line
    and ``--config`` named no model or counter (a model given wins, with a warning when they differ), or the exit
    code after reporting why not."""
    name = request_model(item.document)
    config = checked.config
    if not checked.own_models:
        if name is not None and config.model is not None and _model_name(name) != _model_name(config.model):
            warning(f"{item.source} names the model {name!r}; fitting for --model {config.model}, which wins")
        return fitter or Fitter(checked.arguments)
    try:
        model = request_model_spec(name) if name is not None else get_model(FIT_MODEL)
    except ValueError as exc:
        return error(f"{item.source}: {exc}")
    try:
        return Fitter({"config": config.replace(model=model.name)})
    except OptionError as exc:
        whose = f"the model {item.source} names" if name is not None else "the default model: give --model for another"
        return usage_error(args.parser, flag_names(exc.option), f"{exc} ({whose})")
    except (ValueError, TypeError, TokenizerDataError) as exc:
        return error(exc)


def _model_name(name: str) -> str:
    """The registry's name for a model name as written (itself when unknown)."""
    try:
        return get_model(name).name
    except ValueError:
        return name


def _fit_one(
    item: RawConversation, fitter: Fitter, output: AtomicOutput, args: argparse.Namespace, checked: _Checked
) -> int:
    tools = checked.tools
    if tools is not None and item.tools and item.tools != tools:
        given = args.tools if args.tools is not None else f"--config {args.config}"
        return usage_error(
            args.parser, "--tools", f"{item.source} has its own 'tools', which differ from {given}; give one"
        )
    try:
        plan = fitter.plan(item.request)
    except Exception as exc:  # as fit_many reports an item: the input's error, or what else stopped it
        return error(f"{item.source}: {describe(exc)}")
    fitted = fitted_document(item.messages if item.document is None else item.document, plan.request,
                             reserved=fitter.planner.config.reserve_output is not None)
    if args.json:
        report = {**full_report(plan), **({} if output.path else {"messages": plan.messages})}
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print("\n".join(plan_lines(plan, item.source)), file=sys.stderr)
    status = _verdict(0 if plan.fits else 1, 1, checked, output)
    if status == EXIT_OK and (output.path or not args.json):
        out = output.stream()
        json.dump(fitted, out, ensure_ascii=False, indent=2)
        out.write("\n")
        output.commit()
    return status


def _verdict(over: int, total: int, checked: _Checked, output: AtomicOutput) -> int:
    """Warn about conversations that do not fit; with --strict that is exit 3 and ``-o`` keeps its old content."""
    if not over:
        return EXIT_OK
    if total == 1:
        what = "the conversation does not fit the budget (its plan says what must stay and what would help)"
    else:
        what = (f"{over:,} of {plural(total, 'conversation')} {'does' if over == 1 else 'do'} not fit the budget "
                "(each plan's warnings say what must stay and what would help)")
    if checked.strict:
        kept = f"; {output.path} left as it was" if output.path else ""
        print(f"error: {what}{kept}", file=sys.stderr)
        return EXIT_OVER_BUDGET
    warning(f"{what}; --strict makes this exit 3")
    return EXIT_OK


def _fit_lines(
    path: str,
    lines: Iterator[ConversationLine] | None,
    checked: _Checked,
    output: AtomicOutput,
    args: argparse.Namespace,
    workers: int,
) -> int:
    """One output line per conversation, in input order: fitted here as ``lines`` are read, or by ``workers``
    processes that read the file ``path`` themselves (``ctxwin.cli._fit_file``)."""
    progress = Progress("fitted")
    mapper = functools.partial(FitLines, checked.arguments, checked.tools, args.json, checked.own_models)
    name = "<stdin>" if args.file == "-" else args.file
    result = fit_lines(path, lines, output.stream(), mapper, workers=workers, progress=progress, name=name)
    progress.close()
    status = _verdict(result.over_budget, result.fitted, checked, output)
    if status == EXIT_OK and result.fitted:  # not when no line could be fitted: an empty file would replace -o
        output.commit()
    return EXIT_INPUT if result.errors else status


def add_arguments(fit: argparse.ArgumentParser) -> None:
    fit.epilog = EXIT_CODES_HELP
    fit.add_argument(
        "file", type=text_value("a file name"), help="JSON or JSONL conversation(s): chat messages, or chat "
        "completions, Anthropic or Responses requests (written back in their form); - for stdin"
    )
    fit.add_argument("--json", action="store_true", help="print a JSON report instead of the table")
    fit.add_argument("--output", "-o", type=text_value("a file name"),
                     help="write the fitted conversation(s) here (default, or -: stdout)")
    fit.add_argument(
        "--workers",
        "-w",
        type=nonempty(_worker_count, "a number of processes"),
        default=1,
        help="processes for a JSONL file of many conversations; 0 = all cores (default: 1)",
    )
    fit.add_argument(
        "--trace",
        action="store_true",
        help="print the OpenTelemetry span tree of the run (steps, durations, attributes) to stderr; needs "
        "opentelemetry-sdk",
    )
    # ``output`` is the form of each request, which ``ctxwin fit`` keeps: -o is the file written.
    add_options(fit, skip=("output",), helps={"model": (
        f"the model to fit for (see `ctxwin models`; default: the model the request names in its 'model' key, else "
        f"{FIT_MODEL}; given, it wins over the request's)"
    )})


def _worker_count(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = -1
    if count < 0:
        raise InvalidInputError(f"expected a number of processes (0 = all cores), got {text!r}")
    return count

