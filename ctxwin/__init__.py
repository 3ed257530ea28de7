"""ctxwin: fit LLM chat prompts into a model's token budget.

The message API mirrors ``langchain_core.messages``: switching is a change of import.
"""

from ctxwin.messages import *  # noqa: F403
from ctxwin.messages import __all__ as _message_names

__version__ = "0.1.0"

__all__ = [*_message_names, "__version__"]
