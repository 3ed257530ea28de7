"""``gemini-api:<model>``: Gemini's counts from Google's countTokens endpoint (extra ``gemini``).
The endpoint takes contents only, so system messages and tool definitions are counted as a first user turn
(docs/counters.md).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ctxwin._errors import InvalidInputError
from ctxwin._install import install_hint
from ctxwin.counters._api.counter import TIMEOUT_ENV, ApiCounter, checked_tokens, transport_errors
from ctxwin.counters._errors import CountRequestError, TokenizerDataError
from ctxwin.messages._data_url import parse_data_url

# Sent when GOOGLE_GEMINI_BASE_URL points elsewhere and no key is set (the SDK refuses to start without one).
NO_KEY = "none"


def _part(block: Any, where: str) -> dict[str, Any]:
    """An OpenAI-form content block (or string) as a Gemini part."""
    if isinstance(block, str):
        return {"text": block}
    kind = block.get("type")
    if kind == "text":
        return {"text": block.get("text", "")}
    if kind == "image_url":
        url = block["image_url"]["url"] if isinstance(block.get("image_url"), dict) else block.get("image_url")
        inline = parse_data_url(url) if isinstance(url, str) else None
        if inline is not None:
            return {"inline_data": {"mime_type": inline.media_type, "data": inline.data}}
    raise InvalidInputError(f"{where}: a {kind!r} content block has no Gemini form ctxwin can send for counting "
                            f"(images "
                            "must be base64 data URLs, 'data:<media type>;base64,<data>')")


def _parts(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    return [_part(block, where) for block in content or []]


def gemini_contents(items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """OpenAI-form messages as Gemini's ``(system parts, contents)``: tool calls as ``function_call`` parts of a
    ``model`` turn, tool results as ``function_response`` parts named after their call."""
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    call_names: dict[str, str] = {}
    for index, item in enumerate(items):
        where = f"messages[{index}]"
        role = item["role"]
        parts = _parts(item.get("content"), where)
        if role in ("system", "developer"):
            system.extend(parts)
            continue
        if role == "tool":
            text = "".join(part.get("text", "") for part in parts)
            name = item.get("name") or call_names.get(item.get("tool_call_id") or "", "tool")
            parts = [{"function_response": {"name": name, "response": {"result": text}}}]
        for call in item.get("tool_calls") or [] if role == "assistant" else []:
            function = call.get("function") or {}
            call_names[call.get("id") or ""] = function.get("name") or ""
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except json.JSONDecodeError:
                arguments = {"arguments": function.get("arguments")}  # counted as the text it is
            args = arguments if isinstance(arguments, dict) else {"value": arguments}
            parts.append({"function_call": {"name": function.get("name") or "", "args": args}})
        contents.append({"role": "model" if role == "assistant" else "user", "parts": parts or [{"text": ""}]})
    return system, contents


class GeminiApiCounter(ApiCounter):
    """Gemini's counts from the countTokens endpoint; see docs/counters.md."""

    provider = "gemini-api"

    def __init__(self, model: str, **kwargs: Any) -> None:
        try:
            from google import genai
            from google.genai import errors, types
        except ImportError:
            raise TokenizerDataError(
                f"the gemini-api counter needs google-genai. Fix: {install_hint('gemini')}"
            ) from None
        super().__init__(model, **kwargs)
        self._errors, self._types = errors, types
        options = types.HttpOptions(timeout=int(self.timeout * 1000), retry_options=types.HttpRetryOptions(attempts=1))
        key = os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
        if not key and not os.environ.get("GOOGLE_GEMINI_BASE_URL"):
            raise InvalidInputError("the gemini-api counter needs an API key: set GEMINI_API_KEY (or GOOGLE_API_KEY)")
        self.client = genai.Client(api_key=key or NO_KEY, http_options=options)

    def request(self, messages: list[dict[str, Any]], tools: Sequence[dict[str, Any]] | None) -> dict[str, Any]:
        system, contents = gemini_contents(messages)
        extra = [{"text": json.dumps(list(tools), ensure_ascii=False)}] if tools else []
        if system or extra:
            contents = [{"role": "user", "parts": [*system, *extra]}, *contents]
        return {"model": self.model, "contents": contents}

    def send(self, request: Mapping[str, Any]) -> int:
        errors, types = self._errors, self._types
        timeouts, transport = transport_errors()
        contents = [types.Content.model_validate(_decoded(content)) for content in request["contents"]]
        try:
            result = self.client.models.count_tokens(model=request["model"], contents=contents)
        except errors.ClientError as exc:
            raise InvalidInputError(f"{self.name}: Google refused the request (HTTP {exc.code}): "
                                    f"{exc.message}") from None
        except errors.APIError as exc:
            raise CountRequestError(f"{self.name}: Google answered HTTP {exc.code}: {exc.message}") from None
        except timeouts:
            raise CountRequestError(f"{self.name}: no answer within {self.timeout} s (set {TIMEOUT_ENV} to wait "
                                    "longer)") from None
        except transport as exc:
            raise CountRequestError(f"{self.name}: cannot reach the Gemini API ({exc}): exact Gemini counts need "
                                    "the network; offline, use 'approximate:safe'") from None
        except ValueError as exc:  # a body that is not JSON, or not a CountTokensResponse
            raise CountRequestError(f"{self.name}: malformed response: {exc}") from None
        return checked_tokens(getattr(result, "total_tokens", None), self.name)


def _decoded(content: dict[str, Any]) -> dict[str, Any]:
    """A content with inline data as bytes, as the SDK takes it (the request keeps base64 text, for its key)."""
    parts = []
    for part in content["parts"]:
        inline = part.get("inline_data")
        if inline is not None:
            try:
                data = base64.b64decode(inline["data"], validate=False)
            except (binascii.Error, ValueError) as exc:
                raise InvalidInputError(f"an image data URL is not valid base64: {exc}") from None
            part = {"inline_data": {"mime_type": inline["mime_type"], "data": data}}
        parts.append(part)
    return {**content, "parts": parts}
