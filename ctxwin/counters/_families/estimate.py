"""``estimate:<counter spec>``: a tokenizer of a model's family counting a model whose own tokenizer ctxwin does not
ship (a newer model of that maker), declared as an estimate with the approximate counter's margin, so a plan keeps
that much of the budget free and a session's ``observe`` corrects it both ways."""

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
