"""How many CPUs this process may use: what the tiktoken counter's threads and ``fit_many``'s processes size to."""

from __future__ import annotations

import os


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one, not the machine's count)."""
    process_cpu_count = getattr(os, "process_cpu_count", None)  # Python 3.13+
    if process_cpu_count is not None:
        return int(process_cpu_count() or 1)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
