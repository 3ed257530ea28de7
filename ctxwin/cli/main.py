"""The ``ctxwin`` command (also ``python -m ctxwin``).

Subcommands: ``count FILE`` (per-message token table and total; ``--model M`` or ``--counter SPEC``, default the
approximate counter), ``counters`` (registered counters, their plugin and data origin, and plugin errors),
``models`` (registered models, and which are counted approximately because no tokenizer is public),
``strategies`` (registered strategies and their plugins), ``fit FILE`` (``ctxwin.cli.fit``) and ``bench FILE``
(``ctxwin.cli.bench``). Each takes ``--json``. New subcommands add a ``cmd_*`` function and a few lines in
``build_parser``, or a module with an ``add_*_parser`` function.

Exit codes (``ctxwin.cli.output``, listed in ``ctxwin --help``): 0 done; 1 bad input (unreadable file, malformed
conversation, tokenizer data missing), an I/O error, or output closed early (``ctxwin count big.json | head``); 2
usage error named by its flag (an unknown model or counter included); 3 ``fit --strict`` and a conversation does
not fit; 130 Ctrl-C; 143 SIGTERM. Every problem is one line on stderr; ``main`` turns what a command did not catch
(Ctrl-C, SIGTERM, a recursion limit, a bug) into such a line too, never a traceback. A plugin that failed to load is
one warning line per plugin, not Python's warnings.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import signal
import sys
import threading
import unicodedata
from collections.abc import Sequence
from typing import Any

from ctxwin.batch.conversation import Conversation, ConversationFileError, nesting_error
from ctxwin.cli.bench import add_bench_parser
from ctxwin.cli.fit import add_fit_parser
from ctxwin.cli.io import read_conversations
from ctxwin.cli.output import (
    EXIT_CODES_HELP,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    counter_for,
    error,
    one_line,
    warning,
)
from ctxwin.counters import list_counters, list_models, model_plugin
from ctxwin.counters.base import TokenCounter
from ctxwin.counters.models import ModelSpec
from ctxwin.messages import AIMessage, BaseMessage
from ctxwin.messages.openai_format import openai_role
from ctxwin.plugins import plugin_errors, plugin_source
from ctxwin.plural import plural
from ctxwin.strategies import list_strategies

DEFAULT_COUNTER = "approximate"


def _display_width(char: str) -> int:
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


def _preview(message: BaseMessage, width: int = 48) -> str:
    """The message text on one line, cut to ``width`` terminal columns (CJK characters take two)."""
    text = " ".join(message.text.split())
    if not text and isinstance(message, AIMessage) and message.tool_calls:
        text = "tool calls: " + ", ".join(c["name"] for c in message.tool_calls)
    used = 0
    for i, char in enumerate(text):
        used += _display_width(char)
        if used > width - 1:
            return text[:i] + "…"
    return text


def _count_rows(conversation: Conversation, counter: TokenCounter, model: ModelSpec | None) -> dict[str, Any]:
    counts = [counter.count_message(m) for m in conversation.messages]
    rows = [
        {"index": i, "role": openai_role(m), "name": m.name, "tokens": n, "preview": _preview(m)}
        for i, (m, n) in enumerate(zip(conversation.messages, counts, strict=True))
    ]
    total = counter.count_messages(conversation.messages, tools=conversation.tools)
    report: dict[str, Any] = {
        "source": conversation.source,
        "line": conversation.line,
        "counter": counter.name,
        "messages": rows,
        "message_tokens": sum(counts),
        "request_overhead": total - sum(counts),
        "total": total,
    }
    if model is not None:
        report["model"] = {
            "name": model.name,
            "context_window": model.context_window,
            "max_output_tokens": model.max_output_tokens,
            "approximate": model.approximate,
        }
    return report


def _print_count(report: dict[str, Any]) -> None:
    where = report["source"] + (f":{report['line']}" if report["line"] else "")
    model = report.get("model")
    print(f"{where} — counter: {report['counter']}" + (f" (model {model['name']})" if model else ""))
    print(f"{'#':>4}  {'role':<16} {'tokens':>7}  text")
    for row in report["messages"]:
        role = row["role"] + (f"({row['name']})" if row["name"] else "")
        print(f"{row['index']:>4}  {role:<16} {row['tokens']:>7,}  {row['preview']}")
    print(
        f"{plural(len(report['messages']), 'message')}: {plural(report['message_tokens'], 'token')} "
        f"+ {report['request_overhead']:,} request overhead = {plural(report['total'], 'token')}"
    )
    if model:
        print(
            f"context window {model['context_window']:,} (max output {model['max_output_tokens']:,})"
            + (": approximate count, no public tokenizer" if model["approximate"] else "")
        )


def cmd_count(args: argparse.Namespace) -> int:
    chosen = counter_for(args, DEFAULT_COUNTER)
    if isinstance(chosen, int):
        return chosen
    model, counter = chosen
    reports: list[dict[str, Any]] = []
    errors = 0
    try:
        for item in read_conversations(args.file):
            if isinstance(item, ConversationFileError):
                error(item)
                errors += 1
                continue
            try:
                report = _count_rows(item, counter, model)
            except (ValueError, TypeError, RecursionError) as exc:  # e.g. malformed tool definitions
                text = nesting_error() if isinstance(exc, RecursionError) else exc
                error(f"{item.source}{f':{item.line}' if item.line else ''}: {text}")
                errors += 1
                continue
            reports.append(report)
            if not args.json:
                _print_count(report)
    except ConversationFileError as exc:
        return error(exc)
    if args.json:
        print(json.dumps({"conversations": reports, "errors": errors}, ensure_ascii=False, indent=2))
    return EXIT_INPUT if errors else EXIT_OK


def _plugin_column(row: dict[str, Any]) -> str:
    """The plugin that registered a row's counter or strategy, with its distribution unless it is built in."""
    return str(row["plugin"]) + (f" ({row['source']})" if row["source"] != "built-in" else "")


def cmd_counters(args: argparse.Namespace) -> int:
    rows = [
        {"name": c.name, "plugin": c.plugin, "source": plugin_source(c.plugin), "origin": c.origin}
        for c in list_counters()
    ]
    problems = [{"plugin": e.plugin, "stage": e.stage, "error": e.error} for e in plugin_errors()]
    if args.json:
        print(json.dumps({"counters": rows, "plugin_errors": problems}, ensure_ascii=False, indent=2))
        return EXIT_OK
    print(f"{'counter':<14} {'plugin':<34} data origin")
    for row in rows:
        print(f"{row['name']:<14} {_plugin_column(row):<34} {row['origin']}")
    for problem in problems:
        print(f"plugin error: {problem['plugin']} ({problem['stage']}): {problem['error']}")
    return EXIT_OK


def cmd_models(args: argparse.Namespace) -> int:
    rows: list[dict[str, Any]] = [
        {
            "name": m.name,
            "context_window": m.context_window,
            "max_output_tokens": m.max_output_tokens,
            "counter": m.counter,
            "approximate": m.approximate,
            "exact": m.exact,
            "aliases": list(m.aliases),
            "note": m.note,
            "plugin": model_plugin(m.name),
        }
        for m in list_models()
    ]
    if args.json:
        print(json.dumps({"models": rows}, ensure_ascii=False, indent=2))
        return EXIT_OK
    print(f"{'model':<22} {'context':>9} {'output':>7}  {'counter':<38} {'exact':<5} note")
    for row in rows:
        print(
            f"{row['name']:<22} {row['context_window']:>9,} {row['max_output_tokens']:>7,}  {row['counter']:<38} "
            f"{'yes' if row['exact'] else 'no':<5} {row['note']}"
        )
    approximate = [r["name"] for r in rows if r["approximate"]]
    if approximate:
        print(
            f"\n{plural(len(approximate), 'model')} {'has' if len(approximate) == 1 else 'have'} no public "
            "tokenizer and use the approximate counter in safe mode: " + ", ".join(approximate)
        )
    return EXIT_OK


def cmd_strategies(args: argparse.Namespace) -> int:
    rows = [
        {
            "name": s.name,
            "plugin": s.plugin,
            "source": plugin_source(s.plugin),
            "description": one_line((s.factory.__doc__ or "").strip().split("\n\n")[0]),
        }
        for s in list_strategies()
    ]
    if args.json:
        print(json.dumps({"strategies": rows}, ensure_ascii=False, indent=2))
        return EXIT_OK
    print(f"{'strategy':<22} {'plugin':<34} description")
    for row in rows:
        print(f"{row['name']:<22} {_plugin_column(row):<34} {row['description']}")
    return EXIT_OK


def _version() -> str:
    try:
        return importlib.metadata.version("ctxwin")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxwin",
        description="Fit chat prompts into a model's token budget.",
        epilog=EXIT_CODES_HELP,
    )
    parser.add_argument("--version", action="version", version=f"ctxwin {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    count = commands.add_parser("count", help="count the tokens of each message in a conversation file")
    count.add_argument("file", help="JSON or JSONL conversation in OpenAI chat format, or - for stdin")
    which = count.add_mutually_exclusive_group()
    which.add_argument("--model", "-m", help="count with this model's tokenizer and framing (see `ctxwin models`)")
    which.add_argument("--counter", "-c", help="a counter spec, e.g. tiktoken:o200k_base (default: approximate)")
    count.add_argument("--json", action="store_true", help="print JSON instead of a table")
    count.set_defaults(run=cmd_count, parser=count)

    counters = commands.add_parser("counters", help="list token counters, their plugins and data origins")
    counters.add_argument("--json", action="store_true", help="print JSON instead of a table")
    counters.set_defaults(run=cmd_counters)

    models = commands.add_parser("models", help="list known models, their limits and counters")
    models.add_argument("--json", action="store_true", help="print JSON instead of a table")
    models.set_defaults(run=cmd_models)

    strategies = commands.add_parser("strategies", help="list registered strategies (for fit --strategy)")
    strategies.add_argument("--json", action="store_true", help="print JSON instead of a table")
    strategies.set_defaults(run=cmd_strategies)

    add_fit_parser(commands)
    add_bench_parser(commands)
    return parser


def _plugin_warnings(args: argparse.Namespace) -> None:
    """One line per plugin that failed to load (``ctxwin counters`` lists them in full)."""
    if args.run is cmd_counters:
        return
    for problem in {e.plugin: e for e in plugin_errors()}.values():
        warning(f"{problem} (the other plugins work; see `ctxwin counters`)")


def _forgiving_streams() -> None:
    """A lone surrogate read from JSON ("\\ud800") is printed as that escape instead of failing the print; in JSON
    output that is the same string again."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


class Terminated(BaseException):
    """SIGTERM, raised like Ctrl-C's KeyboardInterrupt so that a temporary output file is removed on the way out."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, or argparse's usage error (already printed)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    _forgiving_streams()
    in_main_thread = threading.current_thread() is threading.main_thread()  # signal handlers live there only
    previous = signal.signal(signal.SIGTERM, _terminate) if in_main_thread else None
    try:
        return _run(args)
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _run(args: argparse.Namespace) -> int:
    try:
        result: int = args.run(args)
        _plugin_warnings(args)
    except BrokenPipeError:
        # The reader went away (`| head`): say nothing more, and stop Python's own flush at exit failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_INPUT
    except KeyboardInterrupt:
        error("interrupted")
        return EXIT_INTERRUPTED
    except Terminated:
        error("terminated")
        return EXIT_TERMINATED
    except RecursionError:
        return error(nesting_error())
    except MemoryError:
        return error("out of memory")
    except Exception as exc:  # a bug: still one line, with what to do about it
        return error(f"unexpected {type(exc).__name__}: {exc} (a ctxwin bug: please report it with the input)")
    return result
