"""What every ``ctxwin`` command prints besides its data: exit codes, one-line ``error:``/``warning:`` messages, plugin
columns. It imports nothing of ctxwin, so ``ctxwin.cli._main`` can use it and still start fast.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

EXIT_OK = 0  # done (ctxwin fit: every conversation fits, or --strict was not given)
EXIT_INPUT = 1  # bad input, an I/O error, missing tokenizer data
EXIT_USAGE = 2  # a bad flag or flag combination, named
EXIT_OVER_BUDGET = 3  # ctxwin fit --strict: a conversation does not fit
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_TERMINATED = 143  # SIGTERM (128 + 15), after removing any temporary output file

EXIT_CODES_HELP = (
    "exit codes: 0 done; 1 bad input or I/O error (-o is left as it was, except that a JSONL batch with bad lines "
    "writes the others and reports each bad one); 2 usage error, named by its flag; 3 `fit --strict` and a "
    "conversation does not fit (-o is left as it was); 130 interrupted (Ctrl-C) and 143 terminated (SIGTERM), -o "
    "left as it was: a signal after -o was replaced changes nothing"
)


class Terminated(BaseException):
    """SIGTERM, raised like Ctrl-C's KeyboardInterrupt so that a temporary output file is removed on the way out."""


class Published:
    """Whether the command put its output in place (``ctxwin.cli._atomic``): the run is then done, and ``main``'s
    SIGINT and SIGTERM handlers raise nothing more, so 130 and 143 always mean ``-o`` was left as it was."""

    done = False


def one_line(text: object) -> str:
    """Exception texts can span lines (a tokenizer's, a plugin's); a report is one line per problem."""
    return " ".join(str(text).split())


def error(text: object) -> int:
    print(f"error: {one_line(text)}", file=sys.stderr)
    return EXIT_INPUT


def warning(text: object) -> None:
    print(f"warning: {one_line(text)}", file=sys.stderr)


def usage_error(parser: argparse.ArgumentParser, flag: str, text: object) -> int:
    """argparse's form (``ctxwin fit: error: --keep-last: ...``) on one line, for checks argparse cannot make."""
    print(f"{parser.prog}: error: {flag}: {one_line(text)}", file=sys.stderr)
    return EXIT_USAGE


def plugin_column(row: dict[str, Any]) -> str:
    """The plugin that registered a row's counter or strategy, with its distribution unless it is built in."""
    return str(row["plugin"]) + (f" ({row['source']})" if row["source"] != "built-in" else "")


def json_flag(parser: argparse.ArgumentParser) -> None:
    """The one option of the listing commands."""
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
