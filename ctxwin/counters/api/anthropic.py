"""``anthropic-api:<model>``: Claude's exact counts from Anthropic's token-counting endpoint (extra ``anthropic``).

``POST /v1/messages/count_tokens`` (https://docs.claude.com/en/api/messages-count-tokens) takes a Messages API
request (``model``, ``messages``, ``system``, ``tools``) and answers ``{"input_tokens": <int>}``; it is free but
rate-limited, and needs the network. The ``anthropic`` SDK sends it, with the key from ``ANTHROPIC_API_KEY`` and
the server from ``ANTHROPIC_BASE_URL`` (a proxy or local server needs no key), a timeout and no retries. How
messages are counted and cached: ``ctxwin.counters.api.counter``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ctxwin.counters.api.counter import TIMEOUT_ENV, ApiCounter, CountRequestError, checked_tokens
from ctxwin.counters.errors import TokenizerDataError

ANTHROPIC_FIX = "pip install 'ctxwin[anthropic]'"
# Sent when ANTHROPIC_BASE_URL points elsewhere and no key is set (the SDK refuses to send without one).
NO_KEY = "none"


def data_url(url: str) -> tuple[str, str] | None:
    """``(media_type, base64 data)`` of a ``data:<type>;base64,<data>`` URL."""
    head, sep, data = url.partition(",")
    if not url.startswith("data:") or not sep or not head.endswith(";base64"):
        return None
    return head[5:].removesuffix(";base64"), data


def _block(block: dict[str, Any], where: str) -> dict[str, Any]:
    """An OpenAI-form content block as Anthropic's."""
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    if kind == "image_url":
        url = block["image_url"]["url"] if isinstance(block.get("image_url"), dict) else block.get("image_url")
        inline = data_url(url) if isinstance(url, str) else None
        if inline is not None:
            return {"type": "image", "source": {"type": "base64", "media_type": inline[0], "data": inline[1]}}
        if isinstance(url, str):
            return {"type": "image", "source": {"type": "url", "url": url}}
    raise ValueError(f"{where}: a {kind!r} content block has no Anthropic form ctxwin can send for counting")


def _content(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [_block(block, where) for block in content or []]


def anthropic_messages(items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """OpenAI-form messages as Anthropic's ``(system blocks, messages)``: tool calls as ``tool_use`` blocks, tool
    results as ``tool_result`` blocks in a user turn."""
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        where = f"messages[{index}]"
        role = item["role"]
        content = _content(item.get("content"), where)
        if role in ("system", "developer"):
            system.extend(content)
        elif role == "tool":
            result = {"type": "tool_result", "tool_use_id": item.get("tool_call_id") or "", "content": content}
            out.append({"role": "user", "content": [result]})
        elif role == "assistant":
            for call in item.get("tool_calls") or []:
                function = call.get("function") or {}
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except json.JSONDecodeError:
                    arguments = {"arguments": function.get("arguments")}  # counted as the text it is
                content.append({"type": "tool_use", "id": call.get("id") or "", "name": function.get("name") or "",
                                "input": arguments if isinstance(arguments, dict) else {"value": arguments}})
            out.append({"role": "assistant", "content": content})
        else:
            out.append({"role": "user", "content": content})
    return system, out


def anthropic_tools(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-form tool definitions (``{"type": "function", "function": {...}}``, or bare) as Anthropic's."""
    out = []
    for tool in tools:
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ValueError(f"tools: expected OpenAI-style tool definitions with a name, got {tool!r}"[:200])
        out.append({"name": function["name"], "description": function.get("description") or "",
                    "input_schema": function.get("parameters") or {"type": "object", "properties": {}}})
    return out


class AnthropicApiCounter(ApiCounter):
    """Claude's exact counts from Anthropic's count_tokens endpoint; see the module docstring."""

    provider = "anthropic-api"

    def __init__(self, model: str, **kwargs: Any) -> None:
        try:
            import anthropic
        except ImportError:
            raise TokenizerDataError(f"the anthropic-api counter needs the anthropic SDK. Fix: {ANTHROPIC_FIX}") \
                from None
        super().__init__(model, **kwargs)
        key = os.environ.get("ANTHROPIC_API_KEY")
        if not key and not os.environ.get("ANTHROPIC_BASE_URL"):
            raise ValueError("the anthropic-api counter needs an API key: set ANTHROPIC_API_KEY")
        self._anthropic = anthropic
        self.client = anthropic.Anthropic(api_key=key or NO_KEY, timeout=self.timeout, max_retries=0)

    def request(self, messages: list[dict[str, Any]], tools: Sequence[dict[str, Any]] | None) -> dict[str, Any]:
        system, converted = anthropic_messages(messages)
        request: dict[str, Any] = {"model": self.model, "messages": converted}
        if system:
            request["system"] = system
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
            raise ValueError(f"{self.name}: Anthropic refused the request: {exc.message}") from None
        except errors.APIStatusError as exc:
            raise CountRequestError(f"{self.name}: Anthropic answered HTTP {exc.status_code}: {exc.message}") \
                from None
        except errors.APIResponseValidationError as exc:
            raise CountRequestError(f"{self.name}: malformed response: {exc.message}") from None
        except ValueError as exc:  # a body that is not JSON
            raise CountRequestError(f"{self.name}: malformed response: {exc}") from None
        return checked_tokens(getattr(result, "input_tokens", None), self.name)
