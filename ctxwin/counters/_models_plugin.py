"""Default plugin: the models ctxwin knows out of the box (``builtin_models.py``), registered like any plugin's."""

from __future__ import annotations

from collections.abc import Callable

from ctxwin.counters._builtin_models import BUILTIN_MODELS
from ctxwin.counters._models import ModelSpec
from ctxwin.hookspecs import hookimpl


@hookimpl
def register_models(register: Callable[[ModelSpec], None]) -> None:
    for spec in BUILTIN_MODELS:
        register(spec)
