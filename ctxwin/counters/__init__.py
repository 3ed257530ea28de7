"""Token counters: the TokenCounter protocol, BaseTokenCounter, the built-in counters, ModelSpec (with each model's
CachingRules) and the lookups.

The tokenizer-backed counters live in their own modules (``ctxwin.counters.families.tiktoken_counter.TiktokenCounter``,
``ctxwin.counters.families.hf_counter.HFCounter``) so that importing this package does not load tiktoken, tokenizers or
jinja2; ``get_counter`` builds them on demand from what the plugins registered (the built-in ones are registered by
the ``plugin`` modules of ``approximate/``, ``families/`` and ``api/``, and the models by ``models_plugin``).
"""

from ctxwin.counters.approximate.counter import ApproximateCounter
from ctxwin.counters.base import BaseTokenCounter, TokenCounter
from ctxwin.counters.caching import CachingRules
from ctxwin.counters.errors import TokenizerDataError
from ctxwin.counters.image_tokens import ImageSizeWarning
from ctxwin.counters.lookup import CounterInfo, get_counter, get_model, list_counters, list_models, model_plugin
from ctxwin.counters.models import ModelSpec

__all__ = [
    "ApproximateCounter",
    "BaseTokenCounter",
    "CachingRules",
    "CounterInfo",
    "ImageSizeWarning",
    "ModelSpec",
    "TokenCounter",
    "TokenizerDataError",
    "get_counter",
    "get_model",
    "list_counters",
    "list_models",
    "model_plugin",
]
