"""OpenTelemetry spans for fits and trims, free when nobody traces: ctxwin never imports OpenTelemetry, it uses it when
the application has (docs/tracing.md).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

# How many message ids a span lists per kind (dropped, truncated, summarised), so a span stays small when a step
# drops thousands of messages; the counts are always complete.
MAX_IDS = 32
CONTENT_ENV = "CTXWIN_TRACE_CONTENT"

AttributeValue = str | bool | int | float | Sequence[str]

_override: Any = None  # a provider ``use_provider`` installed (``ctxwin fit --trace``), else the global one
_cached: tuple[Any, Any] | None = None  # (provider, its ctxwin tracer)


def _tracer() -> Any:
    """The ctxwin tracer of the configured provider, or None: the fast path when nothing traces."""
    global _cached
    provider = _override
    if provider is None:
        api = sys.modules.get("opentelemetry.trace")
        if api is None:
            return None
        provider = api.get_tracer_provider()
        if isinstance(provider, (api.ProxyTracerProvider, api.NoOpTracerProvider)):
            return None
    if _cached is None or _cached[0] is not provider:
        _cached = (provider, provider.get_tracer("ctxwin"))
    return _cached[1]


def enabled() -> bool:
    """Whether spans are being recorded (so callers skip building attributes otherwise)."""
    return _tracer() is not None


def content_enabled() -> bool:
    """Whether the user opted in to message content on spans (``CTXWIN_TRACE_CONTENT=1``)."""
    return os.environ.get(CONTENT_ENV, "") == "1"


@contextmanager
def span(name: str, attributes: dict[str, AttributeValue] | None = None) -> Iterator[Any]:
    """A span named ``name``, current for the block (child of the caller's current span), or None when nothing
    traces. An exception leaving the block marks it failed by type, not text."""
    tracer = _tracer()
    if tracer is None:
        yield None
        return
    with tracer.start_as_current_span(
        name, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as current:
        try:
            yield current
        except BaseException as exc:
            fail(current, exc)
            raise


def fail(current: Any, exc: BaseException) -> None:
    """Mark ``current`` (a span from ``span``, or None) failed by ``exc``'s type; its text only with content on."""
    if current is None:
        return
    from opentelemetry.trace import Status, StatusCode  # imported: a span exists

    kind = type(exc).__qualname__
    current.set_attribute("error.type", kind)
    current.set_status(Status(StatusCode.ERROR, kind))
    if content_enabled():
        current.set_attribute("ctxwin.error.message", str(exc))


def fail_current(exc: BaseException) -> None:
    """Mark the current span failed by ``exc``'s type: for a step that caught an error and went on (a summarizer
    that raised), whose span would otherwise look fine."""
    if _tracer() is not None:
        from opentelemetry.trace import get_current_span

        fail(get_current_span(), exc)


@contextmanager
def use_provider(provider: Any) -> Iterator[None]:
    """Trace with ``provider`` instead of the global one for the block (the CLI's own, printed when done)."""
    global _override
    previous, _override = _override, provider
    try:
        yield
    finally:
        _override = previous
