"""The approximate counter's fitted constants, read from ``calibration.json``.

The JSON is written by ``benchmarks/fit_approximate.py`` (do not edit it by hand); per target encoding it holds:
``weights`` (the estimate's tokens per occurrence of each statistic of ``features.FEATURES``),
``floor`` (the vocabulary-derived lower bound, same statistics), ``safe`` (safe mode's bound and
``(relative, spread)`` margin per family of text), ``safe_dense`` (the bound for text that is not language),
``max_relative_error`` (the estimate's 95th-percentile error, leaving whole sources out) and the ``evaluation``
that these figures come from.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

CALIBRATION: dict[str, Any] = json.loads(
    resources.files("ctxwin.counters._approximate").joinpath("calibration.json").read_text(encoding="utf-8"))["targets"]
TARGETS = tuple(CALIBRATION)
