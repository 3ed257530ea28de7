"""Suite-wide setup: third-party plugins installed on the machine never leak into the tests.

Plugins load once per process, so this must be set before anything asks for a counter; tests that need a
plugin register it explicitly (or install one into a subprocess of their own).
"""

import os

os.environ["CTXWIN_LOAD_PLUGINS"] = ""
