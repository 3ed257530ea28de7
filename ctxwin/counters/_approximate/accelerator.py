"""The approximate counter's optional C accelerator (``speedups.c``), configured from ``features``' tables.
It does the Python path's arithmetic in the same order, so both give the same integers (docs/approximate.md).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ctxwin.counters._approximate.features import accelerator_tables

if TYPE_CHECKING:
    from ctxwin.counters._approximate.speedups import Model


def _load() -> type[Model] | None:
    if os.environ.get("CTXWIN_NO_ACCELERATOR"):
        return None
    try:
        import ctxwin.counters._approximate.speedups as speedups
    except ImportError:  # not built: no C compiler when the package was installed
        return None
    tables = accelerator_tables()
    speedups.configure(*tables["configure"])
    speedups.configure_safe(*tables["configure_safe"])
    return speedups.Model


# The accelerator's model class, None where it is not built or turned off.
MODEL = _load()
