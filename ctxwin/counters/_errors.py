"""The errors a counter raises: its tokenizer data unusable, a plugin's counter failing, a count endpoint silent."""

from __future__ import annotations

from ctxwin._errors import CtxwinError


class TokenizerDataError(CtxwinError, RuntimeError):
    """Tokenizer data is missing, corrupt or the wrong version; the message names the file and the fix."""


class PluginCounterError(CtxwinError, RuntimeError):
    """A plugin's counter failed to build or to count (its own exception, chained); the message names the counter and
    the plugin, so the failure is the plugin's to fix, not ctxwin's."""


class CountRequestError(CtxwinError, RuntimeError):
    """A provider's token-counting endpoint gave no count: unreachable, timed out, refused, or answered nonsense."""


class ModelDataError(CtxwinError, RuntimeError):
    """Model data could not be refreshed (no network, a timeout, an HTTP error, a file that is not genai-prices'
    data); the data in use is left as it was."""
