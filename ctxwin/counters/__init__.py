"""Token counters: the TokenCounter protocol, BaseTokenCounter and the built-in counters."""

from ctxwin.counters.approximate import ApproximateCounter
from ctxwin.counters.base import BaseTokenCounter, TokenCounter

__all__ = ["ApproximateCounter", "BaseTokenCounter", "TokenCounter"]
