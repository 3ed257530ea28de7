"""The ``ctxwin`` command.

Exit codes: 0 success; 1 bad input (unreadable file, malformed conversation, unknown counter or model);
2 usage error (argparse).
"""

from __future__ import annotations

import argparse
import json
import sys
import unicodedata
from collections.abc import Sequence
from typing import Any

from ctxwin.conversation_io import Conversation, ConversationFileError, read_conversations
from ctxwin.counters import ApproximateCounter, TokenCounter
from ctxwin.counters.base import role_of
from ctxwin.messages import AIMessage, BaseMessage

EXIT_OK, EXIT_INPUT, EXIT_USAGE = 0, 1, 2


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


def _count_rows(conversation: Conversation, counter: TokenCounter) -> dict[str, Any]:
    rows: list[dict[str, Any]] = [
        {
            "index": i,
            "role": role_of(m),
            "name": m.name,
            "tokens": counter.count_message(m),
            "preview": _preview(m),
        }
        for i, m in enumerate(conversation.messages)
    ]
    total = counter.count_messages(conversation.messages, tools=conversation.tools)
    return {
        "source": conversation.source,
        "line": conversation.line,
        "counter": counter.name,
        "messages": rows,
        "message_tokens": sum(r["tokens"] for r in rows),
        "request_overhead": total - sum(r["tokens"] for r in rows),
        "total": total,
    }


def _print_count(report: dict[str, Any]) -> None:
    where = report["source"] + (f":{report['line']}" if report["line"] else "")
    print(f"{where} — counter: {report['counter']}")
    print(f"{'#':>4}  {'role':<16} {'tokens':>7}  text")
    for row in report["messages"]:
        role = row["role"] + (f"({row['name']})" if row["name"] else "")
        print(f"{row['index']:>4}  {role:<16} {row['tokens']:>7}  {row['preview']}")
    print(
        f"{len(report['messages'])} messages: {report['message_tokens']} tokens "
        f"+ {report['request_overhead']} request overhead = {report['total']} tokens"
    )


def cmd_count(args: argparse.Namespace) -> int:
    counter: TokenCounter = ApproximateCounter()
    reports: list[dict[str, Any]] = []
    errors = 0
    try:
        for item in read_conversations(args.file):
            if isinstance(item, ConversationFileError):
                print(f"error: {item}", file=sys.stderr)
                errors += 1
                continue
            report = _count_rows(item, counter)
            reports.append(report)
            if not args.json:
                _print_count(report)
    except ConversationFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    if args.json:
        print(json.dumps({"conversations": reports, "errors": errors}, ensure_ascii=False, indent=2))
    return EXIT_INPUT if errors else EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxwin", description="Fit chat prompts into a model's token budget."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    count = commands.add_parser("count", help="count the tokens of each message in a conversation file")
    count.add_argument("file", help="JSON or JSONL conversation in OpenAI chat format, or - for stdin")
    count.add_argument("--json", action="store_true", help="print JSON instead of a table")
    count.set_defaults(run=cmd_count)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
