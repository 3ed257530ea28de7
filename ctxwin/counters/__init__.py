"""Token counters: the TokenCounter protocol, the built-in counters, ModelSpec and the lookups.
The tokenizer-backed counters live in their own modules, built on demand by ``get_counter``, so that importing this
package loads no tokenizer.
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
