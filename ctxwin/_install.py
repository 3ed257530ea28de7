"""The install command a missing-package error names: the packages of ctxwin's extra, which pip finds on any index
(ctxwin itself is installed from a checkout or a wheel, not from an index)."""

from __future__ import annotations

import importlib.metadata
import re

_EXTRA = re.compile(r"""^(?P<requirement>[^;]+);\s*extra\s*==\s*["'](?P<extra>[^"']+)["']\s*$""")


def install_hint(extra: str) -> str:
    """``pip install '<package>...'``: what ctxwin's ``extra`` adds, read from the installed metadata."""
    try:
        requires = importlib.metadata.requires("ctxwin") or []
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that was never installed
        requires = []
    packages = [m["requirement"].strip() for m in map(_EXTRA.match, requires) if m and m["extra"] == extra]
    if not packages:
        return f"install ctxwin with its '{extra}' extra (README.md, \"Install\")"
    return "pip install " + " ".join(f"'{p}'" for p in packages) + f" (ctxwin's '{extra}' extra)"
