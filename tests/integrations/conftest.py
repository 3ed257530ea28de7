"""The agent tests import their shared support modules by name. The agent-stack modules import their framework when
collected (one to three seconds each), so they are slow tests all through and the fast tier (``-m "not slow"``)
does not collect them."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

STACKS = frozenset({"test_openai_agents.py", "test_pydantic_ai.py", "test_google_adk.py", "test_agent_framework.py",
                    "test_llama_index.py", "test_litellm_proxy.py", "test_sent_as_counted.py"})


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.name in STACKS and config.getoption("markexpr") == "not slow":
        return True
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in STACKS:
            item.add_marker(pytest.mark.slow)
