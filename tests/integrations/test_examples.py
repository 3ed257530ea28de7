"""The agent examples run offline in a real subprocess and every model call they print is within the budget."""

from __future__ import annotations

import importlib.util
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


STACKS = {"openai_agents_agent.py": "agents", "pydantic_ai_agent.py": "pydantic_ai",
          "google_adk_agent.py": "google.adk", "agent_framework_agent.py": "agent_framework",
          "llama_index_agent.py": "llama_index", "litellm_agent.py": "litellm"}
STACK_CALL = re.compile(r"model call: (\d+) messages, (\d+) tokens \(budget (\d+)\), (\d+) leading items")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(STACKS))
def test_agent_stack_example_runs_and_every_call_fits(name: str) -> None:
    if importlib.util.find_spec(STACKS[name].split(".")[0]) is None:
        pytest.skip(f"{STACKS[name]} is not installed")
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=300, cwd=EXAMPLES.parent
    )
    assert result.returncode == 0, result.stderr
    calls = [tuple(map(int, match)) for match in STACK_CALL.findall(result.stdout)]
    assert len(calls) == 24  # 12 turns, a tool call and an answer each
    assert all(0 < tokens <= budget for _, tokens, budget, _ in calls)
    assert max(tokens for _, tokens, _, _ in calls) > 0.8 * calls[0][2]  # the budget was reached: fitting happened
    # the prompt cache: most calls start with what the previous call sent
    assert sum(shared > 0 for _, _, _, shared in calls[1:]) >= 0.9 * (len(calls) - 1)
