"""Without tracing nothing of OpenTelemetry is imported or called, installed or not (fresh interpreters)."""

from __future__ import annotations

import subprocess
import sys

import pytest

FIT = """
import sys
{prelude}
import ctxwin
messages = [{{"role": "user", "content": "alpha " * 50}}] * 200
plan = ctxwin.fit(messages, "gpt-4o", context_window=400, reserve_output=0)
ctxwin.trim_messages(messages, max_tokens=100, token_counter="gpt-4o")
list(ctxwin.fit_many([messages], workers=1, context_window=400, reserve_output=0))
assert len(plan.steps) >= 1
print(sorted(name for name, module in sys.modules.items() if name.startswith("opentelemetry") and module))
"""


def loaded(prelude: str = "") -> str:
    done = subprocess.run(
        [sys.executable, "-c", FIT.format(prelude=prelude)], capture_output=True, text=True, timeout=120, check=True,
        env={"CTXWIN_LOAD_PLUGINS": "", "PATH": "/usr/bin:/bin"},
    )
    return done.stdout.strip()


@pytest.mark.slow
def test_installed_but_unused_is_never_imported() -> None:
    assert loaded() == "[]"


@pytest.mark.slow
def test_absent_package_costs_nothing() -> None:
    assert loaded("sys.modules['opentelemetry'] = None") == "[]"


@pytest.mark.slow
def test_imported_without_a_provider_records_nothing() -> None:
    """The application imported the API but set no provider: ctxwin finds the proxy and makes no span."""
    prelude = (
        "import opentelemetry.trace as api\n"
        "from ctxwin import _tracing as tracing\n"
        "assert isinstance(api.get_tracer_provider(), api.ProxyTracerProvider) and not tracing.enabled()"
    )
    assert "opentelemetry.trace" in loaded(prelude)
