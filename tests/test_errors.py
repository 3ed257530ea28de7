"""One error root: every exception class ctxwin defines derives from ``ctxwin.CtxwinError``, keeping a built-in base."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import ctxwin

PACKAGE = Path(ctxwin.__file__).parent

# Not errors: control flow that never reaches a caller.
NOT_ERRORS = {
    "ctxwin._errors.CtxwinError",  # the root itself
    "ctxwin.cli._output.Terminated",  # a signal unwinding the CLI (a BaseException, like KeyboardInterrupt)
    "ctxwin.messages._convert._ItemError",  # re-raised by its caller as a ValueError naming the item's index
}


def exception_classes() -> list[str]:
    """Every class in ctxwin's source whose bases name an exception (``...Error``, ``Exception``, ``...Exceeded``)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                ast.unparse(b).endswith(("Error", "Exception", "Exceeded", "Unavailable", "Fit")) for b in node.bases
            ):
                found.append(f"{module}.{node.name}")
    return found


def test_the_scan_finds_the_errors_users_catch() -> None:
    names = exception_classes()
    assert "ctxwin.planner._report.BudgetExceeded" in names and "ctxwin.history._errors.HistoryFormatError" in names


@pytest.mark.parametrize("qualified", [n for n in exception_classes() if n not in NOT_ERRORS])
def test_every_ctxwin_error_has_the_one_root(qualified: str) -> None:
    module, _, name = qualified.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except ImportError as exc:  # an integration whose framework is not installed
        pytest.skip(f"{module}: {exc}")
    assert issubclass(cls, ctxwin.CtxwinError), f"{qualified} does not derive from ctxwin.CtxwinError"
    builtin = [b for b in cls.__mro__ if b.__module__ == "builtins" and b not in (Exception, BaseException, object)]
    assert builtin, f"{qualified} keeps no built-in base (ValueError, TypeError, RuntimeError, ...) for users to catch"


def test_the_root_catches_what_users_caught_before() -> None:
    system = ctxwin.SystemMessage("a system prompt far longer than the window allows " * 5)
    for caught in (ctxwin.CtxwinError, ValueError):
        with pytest.raises(caught):
            ctxwin.fit([system, "hello"], model="gpt-4o", context_window=20, reserve_output=0, strict=True)


def test_ctxwin_raises_no_bare_value_or_type_error() -> None:
    """Bad input raises ``InvalidInputError`` / ``InvalidTypeError`` (a ``ValueError`` / ``TypeError`` under the root),
    so ``except ctxwin.CtxwinError`` catches everything ctxwin raises about its input."""
    bare = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            made = node.exc if isinstance(node, ast.Raise) else node.value if isinstance(node, ast.Return) else None
            raised = isinstance(made, ast.Call) and ast.unparse(made.func) in ("ValueError", "TypeError")
            # ...or handed on to be raised later (an error kind given to a helper)
            caught = ("isinstance", "issubclass", "contextlib.suppress")
            handed = isinstance(node, ast.Call) and ast.unparse(node.func) not in caught and any(
                isinstance(arg, ast.Name) and arg.id in ("ValueError", "TypeError") for arg in node.args)
            if raised or handed:
                bare.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not bare, "raise InvalidInputError / InvalidTypeError (ctxwin._errors) instead:\n" + "\n".join(bare)


def test_bad_input_is_caught_by_the_root() -> None:
    with pytest.raises(ctxwin.CtxwinError):
        ctxwin.trim_messages([{"role": "wizard", "content": "hi"}], max_tokens=10, token_counter="approximate")
    with pytest.raises(ctxwin.CtxwinError):
        ctxwin.FitConfig(context_window=-5)
