"""The ``ctxwin`` command: ``main`` (argparse and the small commands), ``fit``, ``bench``, reading conversations
(``io``), writing files atomically (``atomic``) and the output conventions and exit codes (``output``)."""

from ctxwin.cli._main import main

__all__ = ["main"]
