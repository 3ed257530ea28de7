"""The ``ctxwin`` command (``main``), and ``fit_file``, the ``ctxwin fit`` of a JSONL file from Python.

``fit_file`` is imported when first read: ``ctxwin --help`` loads no more than the command it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ctxwin.cli._main import main

if TYPE_CHECKING:
    from ctxwin.cli._fit_file import fit_file as fit_file

__all__ = ["fit_file", "main"]

if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        if name != "fit_file":
            raise AttributeError(f"module 'ctxwin.cli' has no attribute {name!r}")
        from ctxwin.cli._fit_file import fit_file

        return fit_file
