"""Every module under ctxwin/ opens with a short docstring (1-4 lines) saying what it is for; history and figures
live in docs/ and benchmarks/README.md. Read with ``ast``: nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "ctxwin"
MAX_LINES = 4


def docstring_lines(path: Path) -> int:
    """The lines of the module's docstring, stripped; 0 when it has none or an empty one."""
    text = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"), str(path)), clean=False)
    return len(text.strip().splitlines()) if text else 0


def test_the_tree_has_modules() -> None:
    assert len(list(ROOT.rglob("*.py"))) > 100


def test_every_module_has_a_short_docstring() -> None:
    offenders = {
        str(path.relative_to(ROOT.parent)): lines
        for path in sorted(ROOT.rglob("*.py"))
        if not 1 <= (lines := docstring_lines(path)) <= MAX_LINES
    }
    assert not offenders, (
        f"module docstrings must be 1-{MAX_LINES} lines (what the module is for; history and figures go to docs/ "
        "or benchmarks/README.md): "
        + ", ".join(f"{name} ({lines} lines)" for name, lines in offenders.items())
    )


def test_the_count_reads_the_docstring_and_nothing_else(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""One.\nTwo.\n\n"""\n\nX = """not a docstring\n\n\n\n\n"""\n', encoding="utf-8")
    assert docstring_lines(module) == 2
    module.write_text("X = 1\n", encoding="utf-8")
    assert docstring_lines(module) == 0
