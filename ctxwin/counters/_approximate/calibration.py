"""The approximate counter's fitted constants, read from ``calibration.json`` (written by
``benchmarks/fit_approximate.py``; never edited by hand).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

CALIBRATION: dict[str, Any] = json.loads(
    resources.files("ctxwin.counters._approximate").joinpath("calibration.json").read_text(encoding="utf-8"))["targets"]
TARGETS = tuple(CALIBRATION)
