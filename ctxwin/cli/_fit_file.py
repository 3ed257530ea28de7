"""A JSONL file of conversations in, the fitted JSONL out: ``ctxwin fit FILE.jsonl`` and ``fit_file``. With workers,
each maps its own byte ranges of the file (``ctxwin.batch._shards``), so this process parses no line.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from ctxwin._cpus import available_cpus
from ctxwin._errors import InvalidInputError
from ctxwin.batch._conversation import ConversationFileError, nesting_error
from ctxwin.batch._item import FIT_MODEL, Fitter, describe
from ctxwin.batch._progress import Progress
from ctxwin.batch._shards import Mapped, map_file
from ctxwin.cli._atomic import AtomicOutput
from ctxwin.cli._counter_choice import request_model_spec
from ctxwin.cli._io import (
    BOM,
    ConversationLine,
    fitted_document,
    loads,
    open_bytes,
    request_from_json,
    request_model,
)
from ctxwin.cli._output import one_line
from ctxwin.planner import FitConfig, Plan

PLAN_KEY = "ctxwin"  # the key JSONL output lines get for the line number and the plan; an earlier run's is replaced


def full_report(plan: Plan) -> dict[str, Any]:
    """``--json``'s report: the summary, the budget's parts, every step and what recall brought back (the query,
    the excerpts and where each was)."""
    return {
        **plan.summary(),
        "model": plan.model,
        "counter": plan.counter,
        "context_window": plan.budget.context_window,
        "reserve_output": plan.budget.reserve_output,
        "tools_tokens": plan.budget.tools_tokens,
        "safety_margin": plan.budget.safety_margin,
        "steps": [s.as_dict() for s in plan.steps],
        "recall": plan.recalled.as_dict() if plan.recalled else None,
    }


def request_with_tools(text: bytes, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """``request_from_json`` for a run with ``--tools``: a line's own tools must be the same, or be absent."""
    request = request_from_json(text)
    if request.get("tools") and request["tools"] != tools:
        raise ConversationFileError("the line has its own 'tools', which differ from --tools; give one")
    return request


def output_line(text: bytes, number: int, request: dict[str, Any], report: dict[str, Any], reserved: bool) -> str:
    """The input line's object with the fitted request (``fitted_document``; ``reserved``: a reserve was given)
    and the plan; a bare list of messages becomes an object."""
    original = loads(text)
    document = fitted_document(original if isinstance(original, dict) else {"messages": original}, request,
                               reserved=reserved)
    fitted = {**document, PLAN_KEY: {"line": number, "plan": report}}
    try:
        return json.dumps(fitted, ensure_ascii=False) + "\n"
    except RecursionError:
        raise nesting_error() from None


class FitLines:
    """One JSONL line in, its output line (or its error) out, with a planner built once (per worker process).

    ``tools``: the run's tool definitions (``--tools``): a line's own must then be the same. ``full``: the full
    report with every step (``--json``) instead of ``Plan.summary()``. ``own_models``: a line that names its
    ``model`` is fitted for that model (the run gave neither a model nor a counter).
    """

    def __init__(
        self, fit_kwargs: dict[str, Any], tools: list[dict[str, Any]] | None, full: bool, own_models: bool = False
    ) -> None:
        self.fit_kwargs = {**fit_kwargs, "tools": tools, "output": "request"}
        # With each request's own model, a planner is built for each model named (``fit``'s default for the others).
        self.fitter = None if own_models else Fitter(self.fit_kwargs)
        self.tools, self.full = tools, full
        self._fitters: dict[str, Fitter] = {}

    def fitter_for(self, request: dict[str, Any]) -> Fitter:
        """The run's fitter, or with each request's own model the one for the model the request names (else
        ``fit``'s default), built once each; ValueError for a model the registry does not know or a
        ``context_window`` above the model's own."""
        if self.fitter is not None:
            return self.fitter
        name = request_model(request)
        model = request_model_spec(name).name if name is not None else FIT_MODEL
        fitter = self._fitters.get(model)
        if fitter is None:
            fitter = self._fitters[model] = Fitter({**self.fit_kwargs, "model": model})
        return fitter

    def __call__(self, number: int, line: bytes) -> Mapped | None:
        if not line.strip() or (number == 1 and line.strip() == BOM):
            return None
        try:
            request = request_from_json(line) if self.tools is None else request_with_tools(line, self.tools)
            fitter = self.fitter_for(request)
            plan = fitter.plan(request, number - 1)
            text = output_line(line, number, plan.request, full_report(plan) if self.full else plan.summary(),
                               fitter.planner.config.reserve_output is not None)
        except Exception as exc:  # the line's error: unreadable, not a conversation, or what stopped its plan
            return Mapped(error=describe(exc))
        return Mapped(text, flagged=not plan.fits)


@dataclass
class FileResult:
    """What a run over a file did: conversations written, how many of them do not fit, the bad lines' errors."""

    fitted: int = 0
    over_budget: int = 0
    errors: list[str] = field(default_factory=list)


def fit_lines(
    path: str,
    lines: Iterator[ConversationLine] | None,
    out: IO[str],
    mapper: functools.partial[FitLines],
    *,
    workers: int,
    progress: Progress | None,
    name: str,
) -> FileResult:
    """Fit the file's conversation lines into ``out``, in order; each bad line reported to ``progress`` too.

    ``workers`` > 1 (or no ``lines``) maps the regular file ``path`` in byte ranges on that many processes;
    otherwise ``lines`` (read from ``path`` as a stream) are mapped here.
    """
    result = FileResult()

    def bad(number: int, text: str) -> None:
        report = f"{name}:{number}: {one_line(text)}"
        result.errors.append(report)
        if progress is not None:
            progress.error(f"error: {report}")

    if workers > 1 or lines is None:
        with contextlib.closing(map_file(path, out, mapper, workers=workers)) as ranges:
            for done in ranges:
                for number, text in done.errors:
                    bad(number, text)
                result.fitted += done.written
                result.over_budget += done.flagged
                if progress is not None:
                    progress.step(done.written + len(done.errors))
        return result
    fit_line = mapper()
    for line in lines:
        mapped = fit_line(line.line, line.text)
        if mapped is None:
            continue
        if progress is not None:
            progress.step()
        if mapped.error is not None:
            bad(line.line, mapped.error)
            continue
        out.write(mapped.text or "")
        result.fitted += 1
        result.over_budget += mapped.flagged
    return result


def is_regular_file(path: str) -> bool:
    try:
        return path != "-" and stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


@contextlib.contextmanager
def seekable(path: str) -> Iterator[str]:
    """``path`` itself when it is a regular file; stdin (``-``) or a pipe copied to a temporary file otherwise,
    removed at the end. The copy moves bytes only: no line is parsed here."""
    if is_regular_file(path):
        yield path
        return
    descriptor, copy = tempfile.mkstemp(prefix="ctxwin-input-", suffix=".jsonl")
    try:
        with open(descriptor, "wb") as target, open_bytes(path) as source:
            shutil.copyfileobj(source, target, 1 << 20)
        yield copy
    finally:
        with contextlib.suppress(OSError):
            os.unlink(copy)


def fit_file(
    path: str,
    out: str | None,
    *,
    workers: int | None = None,
    tools: list[dict[str, Any]] | None = None,
    full_report: bool = False,
    progress: Progress | None = None,
    **fit_kwargs: Any,
) -> FileResult:
    """Fit every conversation of the JSONL file ``path`` (one per line; ``"-"``: stdin) and write them to ``out``
    (``None`` or ``"-"``: stdout), as ``ctxwin fit FILE.jsonl -o OUT --workers N`` does; return what was done.

    Each output line is the input line's object, its ``messages`` fitted, ``"ctxwin": {"line": N, "plan": ...}``
    added (``Plan.summary()``; the full report with steps when ``full_report``). ``workers``: processes (``None``:
    every CPU; ``1``: this process); each reads and fits its own byte ranges of the file, and this process only
    appends their output in order. A bad line is in ``FileResult.errors`` (``"FILE:LINE: why"``; also reported to
    ``progress`` when given) and the run goes on. ``out`` is written to a temporary file and replaces the target
    only at the end, when at least one line was fitted; an exception or Ctrl-C leaves it as it was. ``fit_kwargs``
    are ``fit``'s (``output`` is each line's own request form); a bad one raises before any line is written.
    Without a ``model`` or ``counter`` among them, a line that names its ``model`` is fitted for that model (else
    for ``fit``'s default), as ``ctxwin fit`` does.
    """
    count = available_cpus() if workers is None else workers
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InvalidInputError(f"workers must be a positive int, or None for all CPUs, got {workers!r}")
    if fit_kwargs.get("output", "request") != "request":
        raise InvalidInputError("fit_file writes each line in its own request form; output= cannot be changed")
    given = FitConfig.of(fit_kwargs.get("config"), **{k: v for k, v in fit_kwargs.items() if k != "config"})
    own_models = given.model is None and given.counter is None
    mapper = functools.partial(FitLines, fit_kwargs, tools, full_report, own_models)
    name = "<stdin>" if path == "-" else path
    output = AtomicOutput(out)
    output.check()
    with output, (seekable(path) if count > 1 else contextlib.nullcontext(path)) as source:
        lines = None if count > 1 else _conversation_lines(source, name)
        result = fit_lines(source, lines, output.stream(), mapper, workers=count, progress=progress, name=name)
        if result.fitted:
            output.commit()
    return result


def _conversation_lines(path: str, name: str) -> Iterator[ConversationLine]:
    with open_bytes(path) as handle:
        for number, text in enumerate(handle, start=1):
            yield ConversationLine(name, number, text)
