"""What every ``ctxwin`` command prints besides its data: exit codes, one-line errors and warnings, plurals; and
the ``--model`` / ``--counter`` check the commands share.

Scripts rely on these: every problem is one line on stderr starting ``error:`` (or ``warning:``, or argparse's
``ctxwin CMD: error: --flag: ...`` for usage errors), and the exit code says which kind of failure it was.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ctxwin.counters import get_counter, get_model
from ctxwin.counters.base import TokenCounter
from ctxwin.counters.errors import TokenizerDataError
from ctxwin.counters.models import ModelSpec

EXIT_OK = 0  # done (ctxwin fit: every conversation fits, or --strict was not given)
EXIT_INPUT = 1  # bad input, an I/O error, missing tokenizer data
EXIT_USAGE = 2  # a bad flag or flag combination, named
EXIT_OVER_BUDGET = 3  # ctxwin fit --strict: a conversation does not fit
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_TERMINATED = 143  # SIGTERM (128 + 15), after removing any temporary output file

EXIT_CODES_HELP = (
    "exit codes: 0 done; 1 bad input or I/O error (-o is left as it was); 2 usage error, named by its flag; "
    "3 `fit --strict` and a conversation does not fit; 130 interrupted (Ctrl-C); 143 terminated (SIGTERM)"
)


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


def counter_for(args: argparse.Namespace, default: str | None) -> tuple[ModelSpec | None, TokenCounter] | int:
    """``--model`` / ``--counter`` as a model and a counter, or the exit code after reporting the bad flag."""
    parser = args.parser
    try:
        model = get_model(args.model) if args.model else None
    except ValueError as exc:
        return usage_error(parser, "--model", exc)
    spec = args.counter or (model.counter if model else default)
    if spec is None:
        return usage_error(parser, "--model", "give a model (see `ctxwin models`), or --counter SPEC")
    try:
        return model, get_counter(spec)
    except TokenizerDataError as exc:  # the counter exists, its data is missing here
        return error(exc)
    except (ValueError, TypeError) as exc:
        return usage_error(parser, "--counter" if args.counter else "--model", exc)


def plugin_column(row: dict[str, Any]) -> str:
    """The plugin that registered a row's counter or strategy, with its distribution unless it is built in."""
    return str(row["plugin"]) + (f" ({row['source']})" if row["source"] != "built-in" else "")


def json_flag(parser: argparse.ArgumentParser) -> None:
    """The one option of the listing commands."""
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
