"""Approximate token counter: an estimate from character classes, no tokenizer data.

First cut: CJK characters count one token each, other text four characters a token. The calibrated estimator
(and its ``safe`` upper-bound mode) replaces ``count_text``; the framing comes from BaseTokenCounter.
"""

from __future__ import annotations

import re

from ctxwin.counters.base import BaseTokenCounter

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


class ApproximateCounter(BaseTokenCounter):
    name = "approximate"

    def __init__(self, target: str = "o200k_base", *, safe: bool = False) -> None:
        self.target = target
        self.safe = safe
        self.name = "approximate:safe" if safe else "approximate"

    @classmethod
    def from_spec(cls, arg: str | None) -> ApproximateCounter:
        """The counter for the text after ``approximate:`` in a spec: ``safe``, an encoding, or ``safe:<encoding>``."""
        parts = [p for p in (arg or "").split(":") if p]
        safe = "safe" in parts
        targets = [p for p in parts if p != "safe"]
        if len(targets) > 1:
            raise ValueError(f"approximate counter spec takes at most one target encoding, got {arg!r}")
        return cls(targets[0] if targets else "o200k_base", safe=safe)

    def count_text(self, text: str) -> int:
        cjk = len(_CJK.findall(text))
        return cjk + -(-(len(text) - cjk) // 4)
