"""A one-line progress bar on stderr for long runs over conversations, drawn only when stderr is a terminal.

Kept free of any dependency (no tqdm) because the CLI's only output that is not data must never break a pipe: when
stderr is redirected the bar is silent and errors are printed as plain lines.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from ctxwin._plural import plural


class Progress:
    """``step()`` after each item, done or failed; ``error(text)`` for a failed one prints its error without
    garbling the bar; ``close()`` at the end. The bar counts the items done (those without an error), the errors,
    and with a ``total`` how far the run is."""

    def __init__(self, label: str, total: int | None = None, *, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self.label, self.total = label, total
        self.done = self.errors = 0
        self._drawn = 0.0

    def step(self, count: int = 1) -> None:
        self.done += count
        now = time.monotonic()
        if self.enabled and (now - self._drawn >= 0.1 or self.done == self.total):  # at most 10 redraws a second
            self._drawn = now
            self._draw()

    def _draw(self) -> None:
        errors = f", {plural(self.errors, 'error')}" if self.errors else ""
        where = f" ({self.done}/{self.total})" if self.total is not None else ""
        print(f"\r{self.label} {max(self.done - self.errors, 0)}{errors}{where}", end="", file=self.stream, flush=True)

    def error(self, text: str) -> None:
        self.errors += 1
        print(f"\n{text}" if self.enabled and self.done else text, file=self.stream, flush=True)

    def close(self) -> None:
        if self.enabled and self.done:
            self._draw()  # the final count, which a throttled step may not have drawn
            print(file=self.stream, flush=True)
