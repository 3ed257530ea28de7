"""A LiteLLM proxy whose every chat request is fitted to the model's budget: ``ContextWindowHook``, so every client of
the proxy, in any language, sends fitted requests. docs/stacks/litellm.md is the guide.
This module imports LiteLLM (the ``litellm`` extra); ``import ctxwin`` never does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from ctxwin._errors import InvalidInputError
from ctxwin._install import install_hint

try:
    from litellm.integrations.custom_logger import CustomLogger
    from litellm.proxy._types import ProxyException
except ImportError as exc:  # pragma: no cover - the dev environment has LiteLLM
    raise ImportError(f"ctxwin.integrations.litellm needs LiteLLM: {install_hint('litellm')}") from exc

from ctxwin.counters import get_model
from ctxwin.integrations._conversations import Fitted, FittersByModel, read_responses
from ctxwin.messages import BaseMessage, convert_to_messages, convert_to_openai_messages
from ctxwin.messages._request_forms.responses import convert_to_responses_items
from ctxwin.planner import BudgetExceeded
from ctxwin.planner._config import FitConfig

__all__ = ["OPTIONS_VARIABLE", "ContextWindowHook", "proxy_hook"]

OPTIONS_VARIABLE = "CTXWIN_LITELLM_OPTIONS"

# The call types whose bodies carry a conversation: chat completions (``messages``) and Responses (``input``).
_CHAT_CALLS = frozenset({"completion", "acompletion"})
_RESPONSES_CALLS = frozenset({"responses", "aresponses"})


class ContextWindowHook(CustomLogger):
    """A LiteLLM ``CustomLogger`` whose ``async_pre_call_hook`` fits each chat or Responses request body.

    ``model`` and the options are ``ctxwin.FitConfig``'s (``context_window``, ``reserve_output``, ``strategies``,
    ``summarizer``, ``keep_last``, the sessions' options...), or a whole ``config``; ``model=None`` takes each
    request's model (through ``models`` when given).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        models: Mapping[str, str] | None = None,
        config: FitConfig | None = None,
        **options: Any,
    ) -> None:
        super().__init__()
        if model is not None:
            options["model"] = model
        self.config = FitConfig.of(config, **options)
        self.models = dict(models or {})
        self.fitter = FittersByModel("ContextWindowHook", self.config, self._model_name)
        """The fitter for requests to a model (the configured model's when one was given)."""

    def _model_name(self, model: str | None) -> str:
        if model is None:
            raise InvalidInputError("ContextWindowHook: the request names no model")
        for name in (self.models.get(model), model, model.rpartition("/")[2]):
            if name is not None and get_model(name) is not None:
                return name
        raise InvalidInputError(f"ContextWindowHook: ctxwin knows no model {model!r}: map it to one with "
                                f"models={{{model!r}: '<ctxwin model>'}}, or give model= or counter= and "
                                f"context_window=")

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: str
    ) -> dict[str, Any]:
        """The body with its conversation fitted; other calls (embeddings, images...) as they came."""
        if call_type in _CHAT_CALLS and not isinstance(data.get("messages"), list):
            # LiteLLM would fail deep inside on it, with a traceback and retries: refused here, as a bad body
            raise ProxyException(f"ctxwin could not fit this request: messages must be a list of messages, got "
                                 f"{type(data.get('messages')).__name__}", "invalid_request_error", "messages", 400)
        if call_type in _CHAT_CALLS:
            field, read, give = "messages", _read_chat, _chat_back
        elif call_type in _RESPONSES_CALLS and isinstance(data.get("input"), list):
            field, read, give = "input", read_responses, _responses_back
        else:
            return data
        request = {key: value for key, value in data.items() if key != field}
        request[field] = []
        try:
            fitted = await self.fitter(data.get("model")).afit(
                list(data[field]), read, key=_conversation(data), request=request
            )
        except BudgetExceeded as error:
            raise ProxyException(str(error), "invalid_request_error", field, 400) from None
        except (ValueError, TypeError) as error:  # the body: its messages, tools, reply limit or model
            raise ProxyException(f"ctxwin could not fit this request: {error}", "invalid_request_error", None,
                                 400) from None
        return {**data, field: give(fitted)}


def _conversation(data: Mapping[str, Any]) -> Hashable | None:
    metadata = data.get("metadata")
    found = data.get("litellm_session_id") or (metadata.get("session_id") if isinstance(metadata, Mapping) else None)
    return found if isinstance(found, str) else None


def _read_chat(items: Sequence[Any]) -> list[tuple[Any, BaseMessage]]:
    try:
        return [(item, message) for item in items for message in convert_to_messages([item])]
    except ValueError:
        convert_to_messages(items)  # the same error, naming the item's index in the body
        raise


def _chat_back(fitted: Fitted) -> list[Any]:
    return fitted.given_back(convert_to_openai_messages)


def _responses_back(fitted: Fitted) -> list[Any]:
    return [item for group in fitted.given_back(lambda m: tuple(convert_to_responses_items([m]))) for item in group]


def _options() -> dict[str, Any]:
    """The options of ``proxy_hook``: the JSON object in ``CTXWIN_LITELLM_OPTIONS``."""
    text = os.environ.get(OPTIONS_VARIABLE, "").strip()
    if not text:
        return {}
    try:
        options = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{OPTIONS_VARIABLE} must be a JSON object of ctxwin.FitConfig options: "
                                f"{exc}") from None
    if not isinstance(options, dict):
        raise InvalidInputError(f"{OPTIONS_VARIABLE} must be a JSON object of ctxwin.FitConfig options, got {text!r}")
    return options


proxy_hook = ContextWindowHook(**_options())
"""The hook the proxy's YAML can name (``callbacks: ctxwin.integrations.litellm.proxy_hook``)."""
