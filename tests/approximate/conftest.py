"""Makes ``benchmarks/corpus.py`` (the reference tokenizer loader and the corpora) importable from these tests."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
