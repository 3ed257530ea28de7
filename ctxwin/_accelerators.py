"""Loading ctxwin's optional C accelerators: each is used where it was built and not turned off with
``CTXWIN_NO_ACCELERATOR=1``; every one has a pure-Python counterpart giving the same results."""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def accelerator(module: str) -> ModuleType | None:
    """The C module ``module`` (``"ctxwin.trim._pairscan"``, ...), or None where it is turned off or was not built
    (no C compiler when the package was installed)."""
    if os.environ.get("CTXWIN_NO_ACCELERATOR"):
        return None
    try:
        return importlib.import_module(module)
    except ImportError:
        return None
