"""The "Writing a strategy" example of docs/planner.md runs as written."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxwin._plugins import unregister_plugin
from ctxwin.strategies import list_strategies

DOC = Path(__file__).parents[2] / "docs" / "planner.md"


def example(section: str) -> str:
    """The first fenced Python block of ``section`` in docs/planner.md."""
    text = DOC.read_text(encoding="utf-8")
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```python\n(.*?)```", body, re.DOTALL)
    assert found, f"no Python block under '## {section}'"
    return found.group(1)


@pytest.fixture
def namespace() -> Iterator[dict[str, Any]]:
    names: dict[str, Any] = {}
    yield names
    with contextlib.suppress(ValueError):  # the example failed before it registered its plugin
        unregister_plugin("small-talk")


def test_the_strategy_example_registers_its_strategy_and_fits_with_it(namespace: dict[str, Any]) -> None:
    exec(compile(example("Writing a strategy"), str(DOC), "exec"), namespace)
    plan = namespace["plan"]
    assert plan.fits
    first = plan.steps[0]
    assert first.name == "drop_small_talk"
    assert first.dropped_ids == ["#2"] and first.tokens_after < first.tokens_before
    assert [m.text for m in plan.messages if m.type == "human"][-1] == "And in reverse?"
    assert all(m.text != "thanks!" for m in plan.messages)
    assert "drop_small_talk" in {info.name for info in list_strategies()}
