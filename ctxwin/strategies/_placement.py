"""``place_media``: the step the planner runs first for a provider output, moving images, audio and files to where that
API takes them, so that the plan counts, reports and fits the request that is sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ctxwin.messages import BaseMessage
from ctxwin.messages._placement import place_media
from ctxwin.messages._request_forms.form import RequestForm
from ctxwin.strategies._base import BaseStrategy, Change, StepContext, StepKeeps, StepResult


@dataclass
class PlaceMedia(BaseStrategy):
    """Media parts moved to user messages right after the messages that cannot hold them (or, where the API takes
    them nowhere, replaced by a note, with a warning) for the request ``form``."""

    form: RequestForm
    name: str = field(default="place_media")

    @property
    def keeps(self) -> StepKeeps:
        return "all"

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        placed = place_media(messages, self.form)
        changes = [Change("replaced", [old for old, _ in placed.replaced], [new for _, new in placed.replaced])]
        return StepResult(placed.messages, placed.notes, changes if placed.replaced else [], warnings=placed.warnings)
