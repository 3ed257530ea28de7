"""``anthropic-api:<model>``: Claude's exact counts from Anthropic's token-counting endpoint (extra ``anthropic``).
How messages are counted and cached: ``ctxwin.counters._api.counter``; the endpoint's rules: docs/counters.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ctxwin._errors import InvalidInputError
from ctxwin._install import install_hint
from ctxwin.counters._api.counter import TIMEOUT_ENV, ApiCounter, checked_tokens
from ctxwin.counters._errors import CountRequestError, TokenizerDataError
from ctxwin.messages._request_forms.anthropic import anthropic_tools, convert_to_anthropic

# Sent when ANTHROPIC_BASE_URL points elsewhere and no key is set (the SDK refuses to send without one).
NO_KEY = "none"


class AnthropicApiCounter(ApiCounter):
    """Claude's exact counts from Anthropic's count_tokens endpoint; see docs/counters.md."""

    provider = "anthropic-api"

    def __init__(self, model: str, **kwargs: Any) -> None:
        try:
            import anthropic
        except ImportError:
            raise TokenizerDataError(
                f"the anthropic-api counter needs the anthropic SDK. Fix: {install_hint('anthropic')}"
            ) from None
        super().__init__(model, **kwargs)
        key = os.environ.get("ANTHROPIC_API_KEY")
        if not key and not os.environ.get("ANTHROPIC_BASE_URL"):
            raise InvalidInputError("the anthropic-api counter needs an API key: set ANTHROPIC_API_KEY")
        self._anthropic = anthropic
        self.client = anthropic.Anthropic(api_key=key or NO_KEY, timeout=self.timeout, max_retries=0)

    def request(self, messages: list[dict[str, Any]], tools: Sequence[dict[str, Any]] | None) -> dict[str, Any]:
        """The request the Anthropic form sends (``convert_to_anthropic``, ``anthropic_tools``), so a count is of
        what ctxwin sends and a conversation Anthropic cannot take is refused here as it is there."""
        request: dict[str, Any] = {"model": self.model, **convert_to_anthropic(messages)}
        if tools:
            request["tools"] = anthropic_tools(tools)
        return request

    def send(self, request: Mapping[str, Any]) -> int:
        errors = self._anthropic
        try:
            result = self.client.messages.count_tokens(**request)
        except errors.APITimeoutError:
            raise CountRequestError(f"{self.name}: no answer from {self.client.base_url} within {self.timeout} s "
                                    f"(set {TIMEOUT_ENV} to wait longer)") from None
        except errors.APIConnectionError as exc:
            raise CountRequestError(f"{self.name}: cannot reach {self.client.base_url} ({exc.__cause__ or exc}): "
                                    "exact Claude counts need the network; offline, use 'approximate:safe'") \
                from None
        except errors.BadRequestError as exc:
            raise InvalidInputError(f"{self.name}: Anthropic refused the request: {exc.message}") from None
        except errors.APIStatusError as exc:
            raise CountRequestError(f"{self.name}: Anthropic answered HTTP {exc.status_code}: {exc.message}") \
                from None
        except errors.APIResponseValidationError as exc:
            raise CountRequestError(f"{self.name}: malformed response: {exc.message}") from None
        except ValueError as exc:  # a body that is not JSON
            raise CountRequestError(f"{self.name}: malformed response: {exc}") from None
        return checked_tokens(getattr(result, "input_tokens", None), self.name)
