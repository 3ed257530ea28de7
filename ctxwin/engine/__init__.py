"""Internals of the trim engine: counter adaptation, the token cache, tool pairs, partial messages and the search.

The public entry points live in ``ctxwin.trim``.
"""
