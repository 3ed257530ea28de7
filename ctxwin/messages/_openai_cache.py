"""``mark_prompt_cache``: OpenAI's prompt-cache breakpoints on a Chat Completions or Responses request, and
``OpenAIPromptCache``, the caching both OpenAI request forms share (docs/sessions.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxwin._errors import InvalidInputError
from ctxwin.messages._request_forms.form import CacheRules, RequestForm

MAX_BREAKPOINTS = 4  # writes per request, as OpenAI documents them
_CHAT_PARTS = frozenset({"text", "image_url", "input_audio", "file"})
_RESPONSES_PARTS = frozenset({"input_text", "input_image", "input_file"})
_RESPONSES_ROLES = frozenset({"user", "system", "developer"})


def _breakpoint(ttl: str | None) -> dict[str, str]:
    return {"mode": "explicit", **({"ttl": ttl} if ttl else {})}


def _field(item: Mapping[str, Any], responses: bool) -> tuple[str, str, frozenset[str]] | None:
    """Where ``item`` holds markable blocks: the key, the type a string there becomes, the part types that take a
    mark; None when it holds none."""
    if not responses:
        return "content", "text", _CHAT_PARTS
    kind = item.get("type", "message")
    if kind == "function_call_output":
        return "output", "input_text", _RESPONSES_PARTS
    if kind == "message" and item.get("role") in _RESPONSES_ROLES:
        return "content", "input_text", _RESPONSES_PARTS
    return None


def _marked(item: Any, responses: bool, ttl: str | None) -> dict[str, Any] | None:
    """A copy of ``item`` with its last block marked, or None when that block takes no mark."""
    if not isinstance(item, Mapping):
        return None
    where = _field(item, responses)
    if where is None:
        return None
    key, text_type, kinds = where
    value = item.get(key)
    if isinstance(value, str):
        blocks: list[Any] = [{"type": text_type, "text": value}] if value else []
    elif isinstance(value, list):
        blocks = list(value)
    else:
        return None
    last = blocks[-1] if blocks else None
    if not isinstance(last, Mapping) or last.get("type") not in kinds or last.get("text") == "":
        return None
    blocks[-1] = {**last, "prompt_cache_breakpoint": _breakpoint(ttl)}
    return {**item, key: blocks}


def mark_prompt_cache(
    request: Mapping[str, Any], messages: Sequence[int] | None = (-1,), *, ttl: str | None = None,
    key: str | None = None,
) -> dict[str, Any]:
    """A copy of the chat or Responses ``request`` with a ``prompt_cache_breakpoint`` on the messages at the indexes
    ``messages`` (each moved back to the nearest message that takes one; at most ``MAX_BREAKPOINTS``, the earliest
    dropped first: the newest prefix is the one the next request reads) and ``prompt_cache_options`` in explicit
    mode; ``messages=None`` marks nothing and leaves the options out. ``ttl``: ``"12h"`` for the long lifetime,
    else the default 30 minutes. ``key``: the ``prompt_cache_key``. ValueError for an index outside the request."""
    out = dict(request)
    responses = "input" in out and "messages" not in out
    field = "input" if responses else "messages"
    listed = list(out.get(field) or [])
    if key is not None:
        out["prompt_cache_key"] = key
    if messages is None:
        return out
    out["prompt_cache_options"] = {"mode": "explicit"}
    chosen: set[int] = set()
    for index in messages:
        if not -len(listed) <= index < len(listed):
            raise InvalidInputError(f"mark_prompt_cache: message index {index} is outside the request's {len(listed)} "
                                    "messages")
        at = index % len(listed)
        while at >= 0 and _marked(listed[at], responses, ttl) is None:
            at -= 1
        if at >= 0:
            chosen.add(at)
    for at in sorted(chosen)[-MAX_BREAKPOINTS:]:
        listed[at] = _marked(listed[at], responses, ttl)
    out[field] = listed
    return out


class OpenAIPromptCache(RequestForm):
    """The prompt caching of OpenAI's request forms: automatic, routed by ``prompt_cache_key``, and marked
    (explicit mode) for the models that take marks."""

    marks_cache = True
    routes_by_cache_key = True

    def cache_marks_refusal(self, rules: CacheRules | None, model: str | None) -> str | None:
        if rules is not None and rules.mode == "automatic" and rules.max_breakpoints > 0:  # GPT-5.6 on
            return None
        return (f"cache_control=True with output={self.name!r} marks OpenAI's prompt_cache_breakpoint, which only "
                f"models from GPT-5.6 on take (got model={model!r}); leave cache_control unset (older models cache "
                "automatically), or use output='anthropic' for Claude")

    def mark_cache(
        self, body: dict[str, Any], breakpoints: tuple[int, ...] | None, *, ttl: str | None, key: str | None
    ) -> dict[str, Any]:
        if breakpoints is None and not key:
            return body
        return mark_prompt_cache(body, breakpoints if body[self.items_key] else None, ttl=ttl, key=key)
