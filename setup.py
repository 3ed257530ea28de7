"""The optional C accelerators (metadata is in pyproject.toml): the approximate counter's statistics, the counters'
message framing, the writer of messages (the change detector of the count cache and of the LangChain objects read),
the trim's tool-pair walk, the plan's scan for flagged messages and recall's term counts.

``optional=True``: where no C compiler is available the build goes on without them and ctxwin uses its pure-Python
code, which gives the same results (ctxwin/counters/_approximate/features.py, ctxwin/counters/_base.py,
ctxwin/messages/_writer.py, ctxwin/trim/_tool_pairs.py, ctxwin/strategies/_pins.py, ctxwin/recall/_terms.py).
"""

import sys

from setuptools import Extension, setup

# No fused multiply-add: the C arithmetic must round as Python's does, operation by operation.
FLAGS = [] if sys.platform == "win32" else ["-ffp-contract=off"]
setup(ext_modules=[Extension("ctxwin.counters._approximate.speedups", ["ctxwin/counters/_approximate/speedups.c"],
                             extra_compile_args=FLAGS, optional=True),
                   Extension("ctxwin.counters._framing", ["ctxwin/counters/_framing.c"], optional=True),
                   Extension("ctxwin.messages._written", ["ctxwin/messages/_written.c"], optional=True),
                   Extension("ctxwin.trim._pairscan", ["ctxwin/trim/_pairscan.c"], optional=True),
                   Extension("ctxwin.strategies._flagged", ["ctxwin/strategies/_flagged.c"], optional=True),
                   Extension("ctxwin.recall._termscan", ["ctxwin/recall/_termscan.c"], optional=True)])
