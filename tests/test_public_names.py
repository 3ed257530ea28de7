"""``ctxwin``'s public names: what type checkers read (the ``TYPE_CHECKING`` imports) is what ``import ctxwin``
gives at run time, each name the object of its home module, loaded on first use."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import ctxwin

INIT = Path(ctxwin.__file__)


def type_checking_imports() -> dict[str, str]:
    """``{name: module}`` of the imports inside ``if TYPE_CHECKING:`` in ctxwin/__init__.py (a star import stands for
    its module's ``__all__``)."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    names: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module is not None
        for alias in node.names:
            if alias.name == "*":
                names.update(dict.fromkeys(importlib.import_module(node.module).__all__, node.module))
            else:
                assert alias.asname == alias.name, f"{alias.name}: re-export it as `{alias.name} as {alias.name}`"
                names[alias.name] = node.module
    return names


def test_type_checkers_see_the_names_import_gives() -> None:
    assert sorted(type_checking_imports()) == sorted(set(ctxwin.__all__) - {"__version__"})


def test_every_public_name_is_its_home_modules_object() -> None:
    for name, module in type_checking_imports().items():
        assert getattr(ctxwin, name) is getattr(importlib.import_module(module), name), name


def test_star_import_and_dir_list_every_public_name() -> None:
    namespace: dict[str, object] = {}
    exec("from ctxwin import *", namespace)
    assert set(ctxwin.__all__) <= set(namespace) and set(ctxwin.__all__) <= set(dir(ctxwin))


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match="no attribute 'trim_message'"):
        ctxwin.trim_message  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(ImportError, match="trim_message"):
        exec("from ctxwin import trim_message", {})
