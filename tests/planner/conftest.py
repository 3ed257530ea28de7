"""Make ``planted_support`` (conversations with planted facts for these tests) importable under importlib mode."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
