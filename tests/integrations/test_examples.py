"""The agent examples run offline in a real subprocess and every model call they print is within the budget."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CALL = re.compile(r"model call: (\d+) messages, (\d+) tokens \(budget (\d+)\)")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["langchain_agent.py", "langgraph_agent.py"])
def test_example_runs_and_every_call_fits(name: str) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=300, cwd=EXAMPLES.parent
    )
    assert result.returncode == 0, result.stderr
    calls = [tuple(map(int, match)) for match in CALL.findall(result.stdout)]
    assert len(calls) == 24  # 12 turns, a tool call and an answer each
    assert all(0 < tokens <= budget for _, tokens, budget in calls)
    assert max(tokens for _, tokens, _ in calls) > 0.9 * calls[0][2]  # the budget was reached, so fitting happened
    assert "keeps all 48 messages" in result.stdout
