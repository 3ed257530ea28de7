"""``python -m ctxwin``: the ``ctxwin`` command."""

import sys

from ctxwin.cli import main

if __name__ == "__main__":
    sys.exit(main())
