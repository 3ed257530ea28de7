"""The ``ctxwin`` command.

Subcommands: ``count FILE`` (per-message token table and total; ``--model M`` or ``--counter SPEC``, default the
approximate counter), ``counters`` (registered counters, their plugin and data origin, and plugin errors),
``models`` (registered models, and which are counted approximately because no tokenizer is public), ``fit FILE``
(``ctxwin.fit_command``) and ``bench FILE`` (``ctxwin.bench_command``). Each takes ``--json``. New subcommands add a
``cmd_*`` function and a few lines in ``build_parser``, or a module with an ``add_*_parser`` function.

Exit codes: 0 success; 1 bad input (unreadable file, malformed conversation, unknown counter or model, tokenizer
data missing) or output closed early (``ctxwin count big.json | head``); 2 usage error (argparse).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import unicodedata
from collections.abc import Sequence
from typing import Any

from ctxwin.bench_command import add_bench_parser
from ctxwin.conversation_io import Conversation, ConversationFileError, read_conversations
from ctxwin.counters.base import TokenCounter
from ctxwin.counters.errors import TokenizerDataError
from ctxwin.counters.models import ModelSpec
from ctxwin.fit_command import add_fit_parser
from ctxwin.messages import AIMessage, BaseMessage
from ctxwin.messages.openai_format import openai_role
from ctxwin.plugins import (
    get_counter,
    get_model,
    list_counters,
    list_models,
    model_plugin,
    plugin_errors,
    plugin_source,
)

EXIT_OK, EXIT_INPUT, EXIT_USAGE = 0, 1, 2
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
        print(f"{row['index']:>4}  {role:<16} {row['tokens']:>7}  {row['preview']}")
    print(
        f"{len(report['messages'])} messages: {report['message_tokens']} tokens "
        f"+ {report['request_overhead']} request overhead = {report['total']} tokens"
    )
    if model:
        print(
            f"context window {model['context_window']} (max output {model['max_output_tokens']})"
            + (": approximate count, no public tokenizer" if model["approximate"] else "")
        )


def _error(message: object) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_INPUT


def cmd_count(args: argparse.Namespace) -> int:
    try:
        model = get_model(args.model) if args.model else None
        counter = get_counter(args.counter or (model.counter if model else DEFAULT_COUNTER))
    except (ValueError, TypeError, TokenizerDataError) as exc:
        return _error(exc)
    reports: list[dict[str, Any]] = []
    errors = 0
    try:
        for item in read_conversations(args.file):
            if isinstance(item, ConversationFileError):
                _error(item)
                errors += 1
                continue
            try:
                report = _count_rows(item, counter, model)
            except (ValueError, TypeError) as exc:  # e.g. malformed tool definitions
                _error(f"{item.source}{f':{item.line}' if item.line else ''}: {exc}")
                errors += 1
                continue
            reports.append(report)
            if not args.json:
                _print_count(report)
    except ConversationFileError as exc:
        return _error(exc)
    if args.json:
        print(json.dumps({"conversations": reports, "errors": errors}, ensure_ascii=False, indent=2))
    return EXIT_INPUT if errors else EXIT_OK


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
        plugin = row["plugin"] + (f" ({row['source']})" if row["source"] != "built-in" else "")
        print(f"{row['name']:<14} {plugin:<34} {row['origin']}")
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
            "aliases": list(m.aliases),
            "note": m.note,
            "plugin": model_plugin(m.name),
        }
        for m in list_models()
    ]
    if args.json:
        print(json.dumps({"models": rows}, ensure_ascii=False, indent=2))
        return EXIT_OK
    print(f"{'model':<22} {'context':>9} {'output':>7}  {'counter':<22} note")
    for row in rows:
        print(
            f"{row['name']:<22} {row['context_window']:>9} {row['max_output_tokens']:>7}  {row['counter']:<22} "
            f"{row['note']}"
        )
    approximate = [r["name"] for r in rows if r["approximate"]]
    if approximate:
        print(
            f"\n{len(approximate)} models have no public tokenizer and use the approximate counter in safe mode: "
            + ", ".join(approximate)
        )
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ctxwin", description="Fit chat prompts into a model's token budget.")
    commands = parser.add_subparsers(dest="command", required=True)

    count = commands.add_parser("count", help="count the tokens of each message in a conversation file")
    count.add_argument("file", help="JSON or JSONL conversation in OpenAI chat format, or - for stdin")
    which = count.add_mutually_exclusive_group()
    which.add_argument("--model", "-m", help="count with this model's tokenizer and framing (see `ctxwin models`)")
    which.add_argument("--counter", "-c", help="a counter spec, e.g. tiktoken:o200k_base (default: approximate)")
    count.add_argument("--json", action="store_true", help="print JSON instead of a table")
    count.set_defaults(run=cmd_count)

    counters = commands.add_parser("counters", help="list token counters, their plugins and data origins")
    counters.add_argument("--json", action="store_true", help="print JSON instead of a table")
    counters.set_defaults(run=cmd_counters)

    models = commands.add_parser("models", help="list known models, their limits and counters")
    models.add_argument("--json", action="store_true", help="print JSON instead of a table")
    models.set_defaults(run=cmd_models)

    add_fit_parser(commands)
    add_bench_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result: int = args.run(args)
    except BrokenPipeError:
        # The reader went away (`| head`): say nothing more, and stop Python's own flush at exit failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_INPUT
    return result


if __name__ == "__main__":
    sys.exit(main())
