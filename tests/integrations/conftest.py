"""The agent tests import their shared support module by name."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
