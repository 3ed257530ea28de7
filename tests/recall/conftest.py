"""Make ``planted_support`` (tests/planner: conversations with planted facts) importable under importlib mode."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "planner"))
