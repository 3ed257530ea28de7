"""Bridges to data-processing frameworks; each module imports its framework lazily (``import ctxwin`` never does).

``ctxwin.integrations.ray``: fit a Ray Dataset of conversations (the ``ray`` extra).
"""
