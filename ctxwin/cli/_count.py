"""``ctxwin count FILE``: the tokens of each message and the request total (``--model M`` or ``--counter SPEC``;
without either, the model a request names in its ``model`` key, else the approximate counter; ``--json``)."""

from __future__ import annotations

import argparse
import json
import unicodedata
from typing import Any

from ctxwin._plural import plural
from ctxwin.batch._conversation import Conversation, ConversationFileError, nesting_error
from ctxwin.cli._counter_choice import RequestCounters, configured_counter
from ctxwin.cli._io import read_conversations
from ctxwin.cli._options import add_options, option_flags, text_value
from ctxwin.cli._output import EXIT_INPUT, EXIT_OK, error
from ctxwin.counters._base import TokenCounter, estimates
from ctxwin.counters._errors import TokenizerDataError
from ctxwin.counters._models import ModelSpec
from ctxwin.messages import AIMessage, BaseMessage
from ctxwin.messages._openai_format import openai_role

DEFAULT_COUNTER = "approximate"
# Counting needs a model or a counter, and the tools sent; --config's other options are the planner's.
IGNORED = frozenset(option_flags()) - {"model", "counter", "tools"}


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


def _count_rows(
    conversation: Conversation, counter: TokenCounter, model: ModelSpec | None, tools: list[dict[str, Any]] | None
) -> dict[str, Any]:
    counts = [counter.count_message(m) for m in conversation.messages]
    rows = [
        {"index": i, "role": openai_role(m), "name": m.name, "tokens": n, "preview": _preview(m)}
        for i, (m, n) in enumerate(zip(conversation.messages, counts, strict=True))
    ]
    total = counter.count_messages(conversation.messages, tools=conversation.tools or tools)
    # A message's count is the most it adds to any request (the engines add counts up and must never under-count);
    # a chat template can write it shorter where it stands (Qwen3 drops an earlier turn's reasoning markers), so the
    # request is the messages' sum plus its overhead (framing, tools), less what they take less in place.
    difference = total - sum(counts)
    report: dict[str, Any] = {
        "source": conversation.source,
        "line": conversation.line,
        "counter": counter.name,
        "estimated": estimates(counter),
        "messages": rows,
        "message_tokens": sum(counts),
        "request_overhead": max(difference, 0),
        "shorter_in_place": max(-difference, 0),
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
    estimated = ", estimates of the provider's count" if report["estimated"] else ""
    print(f"{where} — counter: {report['counter']}{estimated}" + (f" (model {model['name']})" if model else ""))
    print(f"{'#':>4}  {'role':<16} {'tokens':>7}  text")
    for row in report["messages"]:
        role = row["role"] + (f"({row['name']})" if row["name"] else "")
        print(f"{row['index']:>4}  {role:<16} {row['tokens']:>7,}  {row['preview']}")
    change = (
        f"- {report['shorter_in_place']:,} shorter in place (a message's count is the most it can add)"
        if report["shorter_in_place"]
        else f"+ {report['request_overhead']:,} request overhead"
    )
    print(
        f"{plural(len(report['messages']), 'message')}: {plural(report['message_tokens'], 'token')} {change} "
        f"= {plural(report['total'], 'token')}"
    )
    if model:
        print(
            f"context window {model['context_window']:,} (max output {model['max_output_tokens']:,})"
            + (": approximate count, no public tokenizer" if model["approximate"] else "")
        )


def run(args: argparse.Namespace) -> int:
    chosen = configured_counter(args, IGNORED, DEFAULT_COUNTER)
    if isinstance(chosen, int):
        return chosen
    config, model, counter = chosen
    counters = RequestCounters((model, counter), config.model is None and config.counter is None)
    tools = None if config.tools is None else list(config.tools)
    reports: list[dict[str, Any]] = []
    errors = 0
    try:
        for item in read_conversations(args.file):
            if isinstance(item, ConversationFileError):
                error(item)
                errors += 1
                continue
            try:
                model, counter = counters(item.model)
                report = _count_rows(item, counter, model, tools)
            except (ValueError, TypeError, RecursionError, TokenizerDataError) as exc:  # e.g. malformed tools
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



def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", type=text_value("a file name"), help="JSON or JSONL conversation(s): chat messages, or chat "
        "completions, Anthropic or Responses requests; - for stdin"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_options(parser, skip=IGNORED, helps={
        "model": "count with this model's tokenizer and framing (see `ctxwin models`; default: the request's own "
                 "'model', else the approximate counter)",
        "counter": "a counter spec, e.g. tiktoken:o200k_base (default: the model's, else approximate)",
        "tools": "a JSON file with tool definitions counted with each request that has none of its own",
    })
