"""The model and counter a command counts with: its config's (``--model``, ``--counter``, ``--config``), which
``ctxwin count`` and ``ctxwin bench`` share; and the model a request file names (``"model": "claude-sonnet-4-5"``),
which ``count`` and ``fit`` use when the configuration names neither (a model or counter given wins over it)."""

from __future__ import annotations

import argparse
from collections.abc import Collection

from ctxwin._errors import InvalidInputError
from ctxwin.cli._options import build_config, read_run_options
from ctxwin.cli._output import error, usage_error
from ctxwin.counters import get_counter, get_model
from ctxwin.counters._base import TokenCounter
from ctxwin.counters._errors import TokenizerDataError
from ctxwin.counters._models import ModelSpec
from ctxwin.planner._config import FitConfig


def configured_counter(
    args: argparse.Namespace, ignore: Collection[str], default: str | None
) -> tuple[FitConfig, ModelSpec | None, TokenCounter] | int:
    """The command's ``FitConfig`` (``--config`` and the flags, but the options in ``ignore``), its model and its
    counter (``default`` without a model or a counter); the exit code after reporting why not."""
    options = read_run_options(args, ignore=ignore)
    if isinstance(options, int):
        return options
    config = build_config(options, args)
    if isinstance(config, int):
        return config
    chosen = counter_for(args, config, default)
    return chosen if isinstance(chosen, int) else (config, *chosen)


def counter_for(
    args: argparse.Namespace, config: FitConfig, default: str | None
) -> tuple[ModelSpec | None, TokenCounter] | int:
    """The (checked) config's model and counter (``default`` without either), or the exit code after reporting
    why not (no model nor counter, tokenizer data missing)."""
    model = get_model(config.model) if config.model else None
    spec = config.counter or (model.counter if model else default)
    if spec is None:
        return usage_error(args.parser, "--model", "give a model (see `ctxwin models`), or --counter SPEC")
    if not isinstance(spec, str):  # a counter object: only Python gives one
        return model, spec
    try:
        return model, get_counter(spec)
    except TokenizerDataError as exc:  # the counter exists, its data is missing here
        return error(exc)
    except (ValueError, TypeError) as exc:  # its argument (``tiktoken:nope``)
        return usage_error(args.parser, "--counter" if config.counter else "--model", exc)


def request_model_spec(name: str) -> ModelSpec:
    """The model a request names; ValueError saying it is the request's and how to fit it anyway."""
    try:
        return get_model(name)
    except ValueError as exc:
        raise InvalidInputError(f"'model': {exc}; give --model or --counter to use another") from None


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
