"""Every install command an error names works without ctxwin on an index: it names the extra's own packages."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement

from ctxwin._install import install_hint

ROOT = Path(__file__).resolve().parent.parent
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_the_hint_installs_the_packages_of_the_extra(extra: str) -> None:
    hint = install_hint(extra)
    assert hint.startswith("pip install ") and "ctxwin[" not in hint
    named = [Requirement(r) for r in re.findall(r"'([^']+)'", hint.split(" (")[0])]
    assert [(r.name, r.extras, r.specifier) for r in named] == [
        (r.name, r.extras, r.specifier) for r in map(Requirement, EXTRAS[extra])
    ]


def test_a_hint_for_an_extra_ctxwin_does_not_have_says_where_to_read() -> None:
    assert "README.md" in install_hint("no-such-extra")


def test_no_message_in_the_package_names_an_install_of_ctxwin_from_an_index() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{number}" for path in (ROOT / "ctxwin").rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"pip install .?ctxwin\b", line)
    ]
    assert not offenders, offenders


def test_the_installed_metadata_is_the_checkout_s() -> None:
    requires = importlib.metadata.requires("ctxwin") or []
    assert any(r.startswith("mistral-common") and 'extra == "mistral"' in r for r in requires)
