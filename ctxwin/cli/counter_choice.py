"""``--model`` / ``--counter`` as a model and a counter: the check ``ctxwin count`` and ``ctxwin bench`` share."""

from __future__ import annotations

import argparse

from ctxwin.cli.output import error, usage_error
from ctxwin.counters import get_counter, get_model
from ctxwin.counters.base import TokenCounter
from ctxwin.counters.errors import TokenizerDataError
from ctxwin.counters.models import ModelSpec


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
