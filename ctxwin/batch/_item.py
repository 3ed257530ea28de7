"""One conversation of a batch: fitted by the process's ``Fitter``, its result or its error kept with its index.

The same ``Fitter`` runs in ``fit_many``'s worker processes, in the calling process (``workers=1``), in
``ctxwin fit --workers``' workers and in Ray, so every path plans with the same code as ``ctxwin.fit``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ctxwin import _tracing as tracing
from ctxwin._errors import InvalidTypeError
from ctxwin.batch._conversation import nesting_error
from ctxwin.planner import FitConfig, Plan, Planner
from ctxwin.planner._config import DEFAULT_MODEL

# fit()'s own default model, so that fit_many(conversations) equals fit() on each conversation.
FIT_MODEL = DEFAULT_MODEL


@dataclass(frozen=True)
class FitResult:
    """Item ``index`` of the input (counting from 0): what its plan gave, or the text of the ``error`` that stopped it.

    ``messages`` is ``plan.messages`` (in the ``output`` form asked for), ``summary`` is ``plan.summary()``,
    ``system`` is ``plan.system`` (``output="anthropic"``: the request's top-level system) and ``request`` is
    ``plan.request`` (the whole request body for a provider output), all computed where the item was fitted. The
    ``Plan`` itself does not travel back from a worker: reading its figures there would count in the calling
    process, and pickling it counts every figure of its report in the worker.
    """

    index: int
    messages: list[Any] | None = None
    summary: dict[str, Any] | None = None
    error: str | None = None
    system: Any = None
    request: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def describe(exc: Exception) -> str:
    """The text reported for a failed item: ctxwin's input errors say what was wrong; anything else is named."""
    if isinstance(exc, RecursionError):
        return str(nesting_error())
    text = str(exc)
    return text if isinstance(exc, (ValueError, TypeError)) and text else f"{type(exc).__name__}: {text}"


def is_request(conversation: Any) -> bool:
    """A mapping with ``messages`` (and optional ``tools``) but no ``role``: a request body, not one message."""
    return isinstance(conversation, Mapping) and "messages" in conversation and "role" not in conversation


class Fitter:
    """Fits conversations with one ``Planner`` built from ``fit``'s keyword arguments (a ``config`` and
    ``FitConfig``'s options; without a config, ``fit``'s default model unless they name one), once per process.

    A conversation is anything ``fit`` accepts, a whole request mapping included (``{"messages": [...], "tools":
    [...]}``, Anthropic's with its ``system``, Responses' ``input``), whose tools (when given and non-empty)
    replace the ``tools`` argument for that conversation (``Planner.for_request``), as ``ctxwin fit`` does for
    JSONL lines that carry their tools.
    """

    def __init__(self, fit_kwargs: Mapping[str, Any], decode: Callable[[Any], Any] | None = None) -> None:
        options = dict(fit_kwargs)
        config: FitConfig | None = options.pop("config", None)
        if config is None:  # a config is taken whole, as ``fit`` takes it
            options.setdefault("model", FIT_MODEL)
        self.planner = Planner(config=FitConfig.of(config, **options))
        self.decode = decode

    def fit(self, index: int, item: Any) -> FitResult:
        """Item ``index``: decoded (when a ``decode`` was given), then planned; any failure is its error."""
        try:
            plan = self.plan(self.decode(item) if self.decode is not None else item, index)
            return FitResult(index, plan.messages, plan.summary(), system=plan.system, request=plan.request)
        except Exception as exc:  # one bad conversation never stops a run over millions
            return FitResult(index, error=describe(exc))

    def plan(self, conversation: Any, index: int = 0) -> Plan:
        """The plan for one conversation or request (item ``index`` of a run: its ``ctxwin.fit_many.item`` span);
        raises what ``fit`` raises."""
        with tracing.span("ctxwin.fit_many.item", {"ctxwin.batch.index": index}):
            if is_request(conversation):
                tools = conversation.get("tools")
                if tools is not None and not isinstance(tools, list):
                    raise InvalidTypeError(f"'tools' must be a list of tool definitions, got {type(tools).__name__}")
                for i, tool in enumerate(tools or []):
                    if not isinstance(tool, Mapping):
                        raise InvalidTypeError(f"tools[{i}] must be a tool definition (a dict), got "
                                               f"{type(tool).__name__}")
            return self.planner.plan(conversation)  # a whole request brings its system, tools and tool_choice
