"""``ctxwin fit --trace``: the run's OpenTelemetry spans as an indented tree on stderr, so a user sees what ctxwin
decided without a tracing backend.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TextIO

from ctxwin import _tracing as tracing

SDK_MISSING = "needs the OpenTelemetry SDK: pip install opentelemetry-sdk"


def printed_trace(stream: TextIO | None = None) -> AbstractContextManager[None]:
    """A context that traces its block, then prints the span tree to ``stream`` (stderr). ImportError, when
    called, if the SDK is not installed."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return _printing(provider, exporter, stream)


@contextmanager
def _printing(provider: Any, exporter: Any, stream: TextIO | None) -> Iterator[None]:
    try:
        with tracing.use_provider(provider):
            yield
    finally:
        lines = tree_lines(exporter.get_finished_spans())
        print("\n".join(["trace:", *lines]), file=stream or sys.stderr)
        provider.shutdown()


def tree_lines(spans: Sequence[Any]) -> list[str]:
    """One line per span, children indented under their parent in start order (spans whose parent is not among
    ``spans`` are roots)."""
    known = {span.context.span_id for span in spans}
    children: dict[int | None, list[Any]] = {}
    for span in sorted(spans, key=lambda span: span.start_time or 0):
        parent = span.parent.span_id if span.parent is not None and span.parent.span_id in known else None
        children.setdefault(parent, []).append(span)
    lines: list[str] = []
    stack = [(span, 0) for span in reversed(children.get(None, []))]
    while stack:  # iterative: a deep tree never hits the recursion limit
        span, depth = stack.pop()
        lines.append("  " * depth + _describe(span))
        stack.extend((child, depth + 1) for child in reversed(children.get(span.context.span_id, [])))
    return lines


def _describe(span: Any) -> str:
    milliseconds = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
    parts = [f"{span.name} ({milliseconds:.2f} ms)"]
    if not span.status.is_ok:
        parts.append(f"ERROR {span.status.description}")
    for key, value in (span.attributes or {}).items():
        if isinstance(value, tuple | list) and not value:
            continue  # no notes, no warnings: nothing to read
        shown = ", ".join(map(str, value)) if isinstance(value, tuple | list) else value
        parts.append(f"{key}={shown}")
    return "  ".join(parts)
