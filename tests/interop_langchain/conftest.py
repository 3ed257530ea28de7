"""Make ``upstream_support`` (LangChain's fixtures and the shared assertions of these ports) importable under
importlib mode."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
