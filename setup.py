"""The optional C accelerators (metadata is in pyproject.toml): the approximate counter's statistics and the writer of
messages (the change detector of the count cache and of the LangChain objects read).

``optional=True``: where no C compiler is available the build goes on without them and ctxwin uses its pure-Python
code, which gives the same results (ctxwin/counters/_approximate/features.py, ctxwin/messages/_writer.py).
"""

import sys

from setuptools import Extension, setup

# No fused multiply-add: the C arithmetic must round as Python's does, operation by operation.
FLAGS = [] if sys.platform == "win32" else ["-ffp-contract=off"]
setup(ext_modules=[Extension("ctxwin.counters._approximate.speedups", ["ctxwin/counters/_approximate/speedups.c"],
                             extra_compile_args=FLAGS, optional=True),
                   Extension("ctxwin.messages._written", ["ctxwin/messages/_written.c"], optional=True)])
