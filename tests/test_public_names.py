"""``ctxwin``'s public names: what type checkers read (the ``TYPE_CHECKING`` imports) is what ``import ctxwin``
gives at run time, each name the object of its home module, loaded on first use."""

from __future__ import annotations

import ast
import importlib
import re
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


# The public modules: no part of the name private. Their ``__all__`` is read from the source (an integration's module
# imports its framework), or from the module itself where it is computed.
DOCS = INIT.parent.parent / "docs"
PUBLIC = sorted(
    name for name in (
        ".".join(path.relative_to(INIT.parent.parent).with_suffix("").parts).removesuffix(".__init__")
        for path in INIT.parent.rglob("*.py")
    )
    if not any(part.startswith("_") for part in name.split("."))
)


def public_names(module: str) -> list[str]:
    path = INIT.parent.parent.joinpath(*module.split("."))
    source = (path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).read_text(encoding="utf-8")
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                return list(ast.literal_eval(node.value))
            except ValueError:
                return list(importlib.import_module(module).__all__)
    return []


def api_sections() -> dict[str, str]:
    """docs/api.md's text under each ``## `module``` heading."""
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    return {m.group(1): m.group(2) for m in re.finditer(r"^## `([\w.]+)`\n(.*?)(?=^## |\Z)", text, re.M | re.S)}


def test_the_public_modules_are_the_packages_users_import() -> None:
    integrations = [m for m in PUBLIC if m.startswith("ctxwin.integrations.")]
    assert [m for m in PUBLIC if m not in integrations] == [
        "ctxwin", "ctxwin.batch", "ctxwin.cli", "ctxwin.counters", "ctxwin.history", "ctxwin.hookspecs",
        "ctxwin.integrations", "ctxwin.messages", "ctxwin.planner", "ctxwin.recall", "ctxwin.strategies", "ctxwin.trim",
    ]
    assert "ctxwin.integrations.langchain" in integrations


def test_every_public_name_is_documented_in_docs_api_md() -> None:
    sections = api_sections()
    missing = [
        f"{module}.{name}" for module in PUBLIC if module != "ctxwin.integrations"
        for name in public_names(module) if f"- `{name}`:" not in sections.get(module, "")
    ]
    assert not missing, "public names docs/api.md does not list (one `- `name`: what it is` line each):\n" + "\n".join(
        missing)
    assert set(sections) <= set(PUBLIC), "docs/api.md documents modules that are not public"


def test_docs_api_md_lists_no_name_that_is_not_public() -> None:
    for module, text in api_sections().items():
        listed = re.findall(r"^- `(\w+)`:", text, re.M)
        assert sorted(listed) == sorted(public_names(module)), module


IMPORT = re.compile(r"^\s*(?:from\s+(ctxwin[\w.]*)\s+import\s+\(?([\w\s,]+)|import\s+(ctxwin[\w.]*))", re.M)


def test_no_doc_or_example_imports_a_private_module() -> None:
    root = INIT.parent.parent
    examples = root / "examples"
    files = [root / "README.md", *DOCS.rglob("*.md"), *examples.rglob("*.py"), *examples.rglob("*.md")]
    private = []
    for path in files:
        for match in IMPORT.finditer(path.read_text(encoding="utf-8")):
            module = match.group(1) or match.group(3)
            names = re.split(r"[\s,]+", (match.group(2) or "").strip())
            if any(part.startswith("_") for part in module.split(".")) or any(
                    n.startswith("_") and not n.startswith("__") for n in names):
                private.append(f"{path.relative_to(root)}: {match.group(0).strip()}")
    assert not private, "docs and examples import only public modules and names:\n" + "\n".join(private)


def changelog_api() -> dict[str, list[str]]:
    """``{module: names}`` of CHANGELOG.md's ``#### `module``` blocks (the first release's public API)."""
    text = (INIT.parent.parent / "CHANGELOG.md").read_text(encoding="utf-8")
    return {m.group(1): re.findall(r"`(\w+)`", m.group(2))
            for m in re.finditer(r"^#### `([\w.]+)`\n\n(.*?)\n\n", text + "\n\n", re.M | re.S)}


def test_the_changelog_lists_every_public_name() -> None:
    expected = {module: public_names(module) for module in PUBLIC if public_names(module)}
    found = changelog_api()
    assert sorted(found) == sorted(expected), "the public modules CHANGELOG.md's API blocks list"
    for module, names in expected.items():
        assert sorted(found[module]) == sorted(names), f"CHANGELOG.md's names of {module}"
