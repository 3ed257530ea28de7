"""Token counters: the TokenCounter protocol, BaseTokenCounter, the built-in counters, ModelSpec (with each model's
CachingRules; windows and prices from genai-prices at run time, ``refresh_model_data``) and the lookups.

The tokenizer-backed counters live in their own modules (``ctxwin.counters._families.tiktoken_counter.TiktokenCounter``,
``ctxwin.counters._families.hf_counter.HFCounter``) so that importing this package does not load tiktoken, tokenizers or
jinja2; ``get_counter`` builds them on demand from what the plugins registered (the built-in ones are registered by
the ``plugin`` modules of ``approximate/``, ``families/`` and ``api/``, and the models by ``models_plugin``).
"""

from ctxwin.counters._approximate.counter import ApproximateCounter
from ctxwin.counters._base import BaseTokenCounter, TokenCounter, as_token_counter, checked_count, checked_counts
from ctxwin.counters._caching import CachingRules, PriceTier
from ctxwin.counters._errors import CountRequestError, ModelDataError, PluginCounterError, TokenizerDataError
from ctxwin.counters._image_tokens import ImageSizeWarning
from ctxwin.counters._lookup import CounterInfo, get_counter, get_model, list_counters, list_models, model_plugin
from ctxwin.counters._models import FigureSource, ModelSpec
from ctxwin.counters._refresh import refresh_model_data

__all__ = [
    "ApproximateCounter",
    "BaseTokenCounter",
    "CachingRules",
    "CountRequestError",
    "CounterInfo",
    "FigureSource",
    "ImageSizeWarning",
    "ModelDataError",
    "ModelSpec",
    "PluginCounterError",
    "PriceTier",
    "TokenCounter",
    "TokenizerDataError",
    "as_token_counter",
    "checked_count",
    "checked_counts",
    "get_counter",
    "get_model",
    "list_counters",
    "list_models",
    "model_plugin",
    "refresh_model_data",
]
