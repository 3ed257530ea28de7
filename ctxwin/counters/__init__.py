"""Token counters: the TokenCounter protocol, BaseTokenCounter, the built-in counters and ModelSpec.

The tokenizer-backed counters live in their own modules (``ctxwin.counters.tiktoken_counter.TiktokenCounter``,
``ctxwin.counters.hf_counter.HFCounter``) so that importing this package does not load tiktoken, tokenizers or
jinja2; ``ctxwin.plugins.get_counter`` builds them on demand.
"""

from ctxwin.counters.approximate import ApproximateCounter
from ctxwin.counters.base import BaseTokenCounter, TokenCounter
from ctxwin.counters.errors import TokenizerDataError
from ctxwin.counters.models import ModelSpec

__all__ = ["ApproximateCounter", "BaseTokenCounter", "ModelSpec", "TokenCounter", "TokenizerDataError"]
