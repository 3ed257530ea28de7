"""Bridges to the frameworks users run; each module imports its framework itself (``import ctxwin`` never does).
What they share without a framework is here: ``TurnDoesNotFit``, the error every agent stack raises (also
``ctxwin.TurnDoesNotFit``). docs/stacks/ has a page per framework; ``ctxwin.integrations.ray`` fits Ray Datasets.
"""

from ctxwin.integrations._conversations import TurnDoesNotFit

__all__ = ["TurnDoesNotFit"]
