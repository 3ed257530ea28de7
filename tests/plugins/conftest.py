"""Plugin tests register and unregister their plugins explicitly and never see installed entry points."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_entry_point_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXWIN_LOAD_PLUGINS", "")
