"""``estimate:<counter spec>``: a tokenizer of a model's family counting a newer model of that maker, declared as an
estimate so a plan keeps a margin free and a session's ``observe`` corrects it.
"""

from __future__ import annotations

from ctxwin.counters._base import CounterAdapter, TokenCounter


class EstimatedCounter(CounterAdapter):
    """``counter``'s counts, reported as an estimate (``estimating``) with ``max_relative_error`` at least
    ``margin``."""

    def __init__(self, counter: TokenCounter, margin: float) -> None:
        super().__init__(counter)
        self.name = f"estimate:{counter.name}"
        self.estimating = True
        self.max_relative_error = max(margin, float(counter.max_relative_error or 0.0))
