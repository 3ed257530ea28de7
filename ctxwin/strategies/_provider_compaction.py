"""``provider_compaction``: the provider's own compaction as the summariser at a cut (OpenAI's
``responses.compact``, Anthropic's on-demand ``compaction``), through the caller's SDK client; ctxwin's own
``summarize`` when the provider has none or the call fails."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ctxwin import _tracing as tracing
from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin._plural import plural
from ctxwin.counters._compaction import COMPACTION, holds_compaction
from ctxwin.messages import AIMessage, BaseMessage
from ctxwin.messages._request_forms.anthropic import convert_to_anthropic
from ctxwin.messages._request_forms.responses import convert_to_responses_items
from ctxwin.strategies._base import Change, StepContext, StepResult, leading_system_count, must_keep_with_partners
from ctxwin.strategies._summarize import Summarize

# Anthropic's on-demand compaction (``compaction={"type": "summarize"}``) is a beta; its reply is the block alone.
ANTHROPIC_BETA = "compact-2026-09-04"
_ANTHROPIC_REPLY_LIMIT = 1_024  # the call samples nothing after the block; the API still requires a limit
PROVIDERS = ("openai", "anthropic")


def provider_of(client: Any) -> str:
    """Which provider's SDK ``client`` belongs to (by its class's package); TypeError naming it for any other."""
    package = type(client).__module__.split(".")[0]
    if package not in PROVIDERS:
        raise InvalidTypeError(f"ProviderCompaction: client must be an openai.OpenAI or anthropic.Anthropic client, "
                               f"got "
                               f"{type(client).__module__}.{type(client).__name__}")
    return package


@dataclass
class ProviderCompaction(Summarize):
    """Summarise a cut's oldest turns with the provider's compaction: the span ``summarize`` would replace (the
    same choice: after the system prompt and a session's head, up to a user turn that leaves the newest messages
    verbatim) is sent with the head to ``client`` (an ``openai.OpenAI`` client: ``responses.compact``; an
    ``anthropic.Anthropic`` client: ``beta.messages.create`` with ``compaction={"type": "summarize"}``) for
    ``model``, and replaced by the opaque item it returns, held as an assistant message after the head. The head
    stays verbatim before it (the session's cached prefix and ctxwin's own record; the item stands for it too, since
    the provider reads from the item on), and an earlier item is compacted again with the span, so one item is
    ever sent. The call is made at a cut only (a session runs its steps there), with ``timeout`` seconds and no
    retry; when it fails (offline, timeout, an error answer) or its item leaves no room, the step is ``summarize``
    with this step's options (``summarizer``: ctxwin's own, the offline one by default), and its notes say why.
    ``aapply`` runs the SDK's sync call in a thread."""

    client: Any = None
    model: str | None = None
    timeout: float = 30.0
    name: str = field(default="provider_compaction")

    def __post_init__(self) -> None:
        super().__post_init__()
        provider_of(self.client)
        if not isinstance(self.model, str) or not self.model:
            raise InvalidInputError(f"ProviderCompaction: model must name the provider's model, got {self.model!r}")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) or self.timeout <= 0:
            raise InvalidInputError(f"ProviderCompaction: timeout must be a positive number of seconds, got "
                                    f"{self.timeout!r}")

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        compacted = self._compacted(messages, context)
        if isinstance(compacted, StepResult):
            return compacted
        fallback = super().apply(messages, context)
        return dataclasses.replace(fallback, notes=[compacted, *fallback.notes])

    async def aapply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        compacted = await asyncio.to_thread(self._compacted, messages, context)  # the SDK's sync call, off the loop
        if isinstance(compacted, StepResult):
            return compacted
        fallback = await super().aapply(messages, context)
        return dataclasses.replace(fallback, notes=[compacted, *fallback.notes])

    def _compacted(self, messages: list[BaseMessage], context: StepContext) -> StepResult | str:
        """The provider's compaction of the span, or why there is none (the fallback's first note)."""
        compactions = {i for i, m in enumerate(messages) if holds_compaction(m)}
        protected = must_keep_with_partners(messages, context.pinned) - compactions  # an earlier item goes in again
        span = self._span(messages, context, protected, 0)
        if span is None:
            return "nothing for the provider to compact"
        kept = set(span.kept)
        replaced = [m for i, m in enumerate(messages[span.start : span.end], span.start) if i not in kept]
        head = messages[leading_system_count(messages) : span.start]
        try:
            block = self._call_provider([*head, *replaced])
        except Exception as exc:  # offline, timeout, an error answer: the SDK's own exceptions
            tracing.fail_current(exc)
            return f"the provider's compaction failed ({type(exc).__name__}): ctxwin's summary instead"
        item = AIMessage([block], response_metadata={"compacted_ids": [m.id for m in replaced if m.id]})
        out = [*messages[: span.start], item, *(messages[i] for i in span.kept), *messages[span.end :]]
        counts = context.counts
        if counts.total(out) > context.budget.messages_budget:
            return "the provider's compaction item leaves no room: ctxwin's summary instead"
        note = (f"compacted {plural(len(replaced), 'message')} by the provider into an item of about "
                f"{plural(counts.count(item), 'token')}")
        return StepResult(out, [note], [Change("summarized", replaced)])

    def _call_provider(self, messages: list[BaseMessage]) -> dict[str, Any]:
        """The compaction block the provider returns for ``messages``, as received."""
        client = self.client.with_options(timeout=self.timeout, max_retries=0)
        if provider_of(self.client) == "openai":
            reply = client.responses.compact(model=self.model, input=convert_to_responses_items(messages))
            output = reply.output
        else:
            request = convert_to_anthropic(messages)
            reply = client.beta.messages.create(
                model=self.model, max_tokens=_ANTHROPIC_REPLY_LIMIT, messages=request["messages"],
                **({"system": request["system"]} if "system" in request else {}),
                compaction={"type": "summarize"}, betas=[ANTHROPIC_BETA])
            output = reply.content
        found = [part for part in output if part.type == COMPACTION]
        if len(found) != 1:
            raise InvalidInputError(f"the provider answered {len(found)} compaction items, expected one")
        block: dict[str, Any] = found[0].model_dump(mode="json", exclude_none=True)
        return block
