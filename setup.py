"""The optional C accelerator of the approximate counter's statistics (metadata is in pyproject.toml).

``optional=True``: where no C compiler is available the build goes on without it and ctxwin uses the pure-Python
statistics, which give the same numbers (ctxwin/counters/approximate/features.py).
"""

import sys

from setuptools import Extension, setup

# No fused multiply-add: the C arithmetic must round as Python's does, operation by operation.
FLAGS = [] if sys.platform == "win32" else ["-ffp-contract=off"]
setup(ext_modules=[Extension("ctxwin.counters.approximate.speedups", ["ctxwin/counters/approximate/speedups.c"],
                             extra_compile_args=FLAGS, optional=True)])
