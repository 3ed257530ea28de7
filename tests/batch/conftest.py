"""Make ``batch_support`` importable under importlib mode, and register the ``ray`` marker.

Tests marked ``ray`` need the ``ray`` extra and are skipped (with the reason) where Ray is not installed.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ray: needs Ray Data (the 'ray' extra); starts a local Ray instance")
