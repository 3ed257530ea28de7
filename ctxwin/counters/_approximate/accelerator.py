"""The C accelerator of the approximate counter (``speedups.c``), configured from
``features``' tables: where it was built, ``ApproximateCounter`` counts through it.

It computes the same statistics in one pass over the code points and does the counter's arithmetic in the same
order of floating-point operations, so the two give the same integers (tests/approximate/test_accelerator.py):
about ten times faster on a chat message, whose cost in Python is mostly a fixed overhead per operation. It is
optional: built when the package is installed on a machine with a C compiler (setup.py), skipped otherwise, and
turned off with ``CTXWIN_NO_ACCELERATOR=1``.
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
