"""The root of every error ctxwin raises on purpose: ``except ctxwin.CtxwinError`` catches them all."""

from __future__ import annotations


class CtxwinError(Exception):
    """Base of every ctxwin error. Each also keeps the built-in base users catch today (``ValueError`` for bad
    input, ``TypeError`` for a wrong type, ``RuntimeError`` for a failure at run time), so both ``except`` forms
    work."""


class InvalidInputError(CtxwinError, ValueError):
    """A value ctxwin was given is not acceptable; the message names it and what was expected."""


class InvalidTypeError(CtxwinError, TypeError):
    """A value ctxwin was given has the wrong type; the message names it and the type expected."""
