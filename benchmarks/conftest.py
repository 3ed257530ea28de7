"""pytest setup for the benchmark suites.

The suites import their shared modules (``side_by_side``, ``conversations``, ``corpus``) from this directory, which
is not a package. pytest-benchmark's machine info gets what ``render.py`` prints about the run besides the CPU and
Python: the versions of the libraries measured, the memory, and the load when the run started (the figures come
from a machine shared with other jobs, and the load says how busy it was).
"""

import importlib.metadata
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

LIBRARIES = ("ctxwin", "tiktoken", "tokenizers", "langchain-core", "pydantic", "pytest-benchmark")


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def pytest_benchmark_update_machine_info(config: Any, machine_info: dict[str, Any]) -> None:
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    machine_info["libraries"] = versions
    machine_info["memory_gib"] = _memory_gib()
    machine_info["load_average"] = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
