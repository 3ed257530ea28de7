"""The console example of docs/tracing.md runs as written, in a fresh interpreter (it sets the global provider)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).parents[2] / "docs" / "tracing.md"


def example(section: str) -> str:
    body = DOC.read_text(encoding="utf-8").split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```python\n(.*?)```", body, re.DOTALL)
    assert found, f"no Python block under '## {section}'"
    return found.group(1)


@pytest.mark.slow
def test_the_console_example_prints_the_plan_under_the_callers_span() -> None:
    done = subprocess.run(
        [sys.executable, "-c", example("Printing spans to the console")], capture_output=True, text=True,
        timeout=120, check=True, env={"CTXWIN_LOAD_PLUGINS": "", "PATH": "/usr/bin:/bin"},
    )
    text, last = done.stdout.strip().rsplit("\n", 1)
    assert re.fullmatch(r"kept \d+ of 81 messages", last)
    decoder, spans, position = json.JSONDecoder(), [], 0
    while position < len(text):  # the exporter prints one indented JSON object per span
        span, position = decoder.raw_decode(text, position)
        spans.append(span)
        position = len(text) - len(text[position:].lstrip())
    by_name = {span["name"]: span for span in spans}
    request, plan, step = by_name["handle request"], by_name["ctxwin.plan"], by_name["ctxwin.step trim"]
    assert plan["parent_id"] == request["context"]["span_id"]
    assert step["parent_id"] == plan["context"]["span_id"]
    assert plan["attributes"]["gen_ai.request.model"] == "gpt-4o-mini"
    assert plan["attributes"]["ctxwin.fits"] is True


def test_the_otlp_example_is_the_same_setup_with_another_exporter() -> None:
    """It needs a collector, so it is only compiled; its ctxwin call is the console example's."""
    code = example("Exporting to an OTLP endpoint")
    compile(code, str(DOC), "exec")
    assert "trace.set_tracer_provider(provider)" in code and "provider.shutdown()" in code
