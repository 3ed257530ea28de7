"""Start-up: a fresh interpreter running ``import ctxwin``, ``ctxwin --help``, reading one message class (which
builds the pydantic models), counting with ``get_counter("approximate")`` (the plugins loaded, no tokenizer
library: issue 39) and ``get_model("gpt-4o")`` (genai-prices' data read: issue 51), each beside the bare interpreter
in the same run (issue 28's targets: ``import ctxwin`` at most 0.2 s, ``ctxwin --help`` at most 0.3 s).

``pytest benchmarks/bench_startup.py --benchmark-only`` times them with pytest-benchmark; ``python
benchmarks/bench_startup.py`` prints the median of 15 runs of each. ``python -X importtime -c "import ctxwin"``
shows where the time goes. tests/test_startup.py checks what these load, not how long they take.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {
    "python (bare interpreter)": ["-c", "pass"],
    "import ctxwin": ["-c", "import ctxwin"],
    "ctxwin --help": ["-m", "ctxwin", "--help"],
    "from ctxwin import HumanMessage": ["-c", "from ctxwin import HumanMessage"],
    'get_counter("approximate")': ["-c", "import ctxwin; ctxwin.get_counter('approximate').count_text('hi')"],
    # a model's figures: genai-prices' data read (issue 51)
    'get_model("gpt-4o")': ["-c", "import ctxwin; ctxwin.get_model('gpt-4o')"],
}


def start(arguments: list[str]) -> None:
    subprocess.run([sys.executable, *arguments], cwd=ROOT, check=True, stdout=subprocess.DEVNULL, timeout=60)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_startup(benchmark: BenchmarkFixture, command: str) -> None:
    benchmark.pedantic(start, args=(COMMANDS[command],), rounds=15, iterations=1, warmup_rounds=1)


def main() -> None:
    for command, arguments in COMMANDS.items():
        start(arguments)  # warm the file cache
        times = []
        for _ in range(15):
            began = time.perf_counter()
            start(arguments)
            times.append(time.perf_counter() - began)
        print(f"{command:34} median {statistics.median(times) * 1000:6.0f} ms, min {min(times) * 1000:6.0f} ms")


if __name__ == "__main__":
    main()
