"""``python -m ctxwin.cli``: the ``ctxwin`` command, as ``python -m ctxwin``."""

import sys

from ctxwin.cli._main import main

if __name__ == "__main__":
    sys.exit(main())
