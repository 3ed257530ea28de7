"""``--model`` / ``--counter`` as a model and a counter: the check ``ctxwin count`` and ``ctxwin bench`` share; and
the model a request file names (``"model": "claude-sonnet-4-5"``), which ``count`` and ``fit`` use when the command
line names neither (a ``--model`` or ``--counter`` given wins over it)."""

from __future__ import annotations

import argparse

from ctxwin.cli._output import error, usage_error
from ctxwin.counters import get_counter, get_model
from ctxwin.counters._base import TokenCounter
from ctxwin.counters._errors import TokenizerDataError
from ctxwin.counters._models import ModelSpec


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


def names_own_model(args: argparse.Namespace) -> bool:
    """Whether a request's own ``model`` decides: the command line gave neither ``--model`` nor ``--counter``."""
    return args.model is None and args.counter is None


def request_model_spec(name: str) -> ModelSpec:
    """The model a request names; ValueError saying it is the request's and how to fit it anyway."""
    try:
        return get_model(name)
    except ValueError as exc:
        raise ValueError(f"'model': {exc}; give --model or --counter to use another") from None


class RequestCounters:
    """The model and counter for each request: the command line's, or the model the request names (built once
    each) when the command line named none."""

    def __init__(self, given: tuple[ModelSpec | None, TokenCounter], own: bool) -> None:
        self.given, self.own = given, own
        self._built: dict[str, tuple[ModelSpec, TokenCounter]] = {}

    def __call__(self, name: str | None) -> tuple[ModelSpec | None, TokenCounter]:
        """ValueError for a model the registry does not know, TokenizerDataError for one whose data is missing."""
        if not self.own or name is None:
            return self.given
        model = request_model_spec(name)
        if model.name not in self._built:
            self._built[model.name] = model, get_counter(model.counter)
        return self._built[model.name]


def window_error(window: int | None, model: ModelSpec) -> str | None:
    """Why a ``--context-window`` cannot be used with ``model`` (None: it can): a window above the model's plans
    requests the provider refuses."""
    if window is None or window <= model.context_window:
        return None
    return (
        f"{window:,} tokens is more than {model.name}'s context window of {model.context_window:,}, so the "
        f"provider would refuse what fits it; give at most {model.context_window:,}"
    )
