"""``SessionRecall``: a session's recall store: what its requests left out of its history, indexed as it leaves,
searched at a cut and between cuts, and answered by the recall tool.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ctxwin.messages import BaseMessage, HumanMessage
from ctxwin.recall._inject import (
    INPUT_CHARS,
    MAX_EXCERPTS,
    MIN_SCORE,
    RECALL_KEY,
    InputRecall,
    Recalled,
    before_newest_user,
    choose,
    find,
    is_recalled,
    recall_query,
    unseen,
)
from ctxwin.recall._store import Excerpt, RecallStore, as_position, message_excerpts, shared_ids
from ctxwin.recall._tool import RecallTool


class SessionRecall:
    """A session's source (``RecallSource``): its whole history (``messages``, the list the session appends to, and
    ``view``, what its plans are made of: the same messages, new tool outputs maybe capped), indexed incrementally:
    a message enters ``store`` the first time a search finds it missing from the request (newest first, at most
    ``INPUT_CHARS`` characters a search), and stays. ``note_request`` tells it what the last request sent, which is
    what ``recall`` and ``recalled_message`` search beside."""

    def __init__(self, messages: Sequence[BaseMessage], view: Sequence[BaseMessage],
                 store: RecallStore | None = None) -> None:
        self._messages = messages
        self._view = view
        self.store = store if store is not None else RecallStore()
        self._request: Sequence[BaseMessage] = ()

    def note_request(self, sent: Sequence[BaseMessage]) -> None:
        """The last request the session sent: what it left out is what the tool searches."""
        self._request = sent

    def search(
        self, query: str, fitted: Sequence[BaseMessage], *, limit: int, min_score: float, call: str = ""
    ) -> list[Excerpt]:
        kept = set(map(id, fitted))
        present = {i for i, m in enumerate(self._messages) if id(m) in kept or id(self._view[i]) in kept}
        room = INPUT_CHARS
        new: list[Excerpt] = []
        shared = shared_ids(self._messages)
        for index in range(len(self._messages) - 1, -1, -1):
            if index in present or index in self.store:
                continue
            excerpts = message_excerpts(self._messages[index], index, named=self._messages[index].id not in shared)
            new += excerpts
            room -= sum(len(e.text) for e in excerpts)
            if room <= 0:
                break
        self.store.add_excerpts(new)
        found = self.store.search(query, limit=limit, min_score=min_score, exclude=present, call=call)
        return unseen(found, fitted)

    def recall(self, query: str, *, limit: int = MAX_EXCERPTS, min_score: float = MIN_SCORE) -> list[Excerpt]:
        """The excerpts of what the last request left out (the whole history, less what it sent as it was)
        relevant to ``query``, best first: what the tool answers."""
        return self.search(query, self._request, limit=limit, min_score=min_score)

    def recalled_message(self, handle: str) -> list[Excerpt]:
        """The whole of one message of the history, in excerpts: ``handle`` is a tool call id (its result), a
        message id or ``#position`` (what a masked tool output names)."""
        self.search("", self._request, limit=0, min_score=1.0)  # indexes what left
        found = self.store.message(handle)
        position = as_position(handle)
        if not found and position is not None and position < len(self._messages):
            message = self._messages[position]
            return message_excerpts(message, position, named=message.id not in shared_ids(self._messages))
        return found

    def held(self, query: str, fitted: Sequence[BaseMessage], *, limit: int, min_score: float) -> list[str]:
        """Where ``fitted`` (the request the model saw) already holds what a search for ``query`` finds, each place
        once, best first, with the best excerpt found there: a message kept as it was (by its label in the history)
        or a recall message (by the labels of what it recalled). The newest user message is left out: it is the
        question, not an answer."""
        asking = next((i for i in range(len(fitted) - 1, -1, -1)
                       if isinstance(fitted[i], HumanMessage) and not is_recalled(fitted[i])), None)
        request = [m for i, m in enumerate(fitted) if i != asking]
        found = InputRecall(request).search(query, (), limit=limit, min_score=min_score)
        if not found:
            return []
        positions = {id(m): i for view in (self._view, self._messages) for i, m in enumerate(view)}
        places: list[str] = []
        for excerpt in found:
            message = request[excerpt.position]
            index = positions.get(id(message))
            if is_recalled(message):
                labels = ", ".join(message.response_metadata[RECALL_KEY].get("from", []))
                place = f"ctxwin's recall message (excerpts of {labels})"
            elif index is None:
                place = "a summary or a shortened copy ctxwin made of earlier messages"
            else:
                place = f"message {excerpt.message_id or f'#{index}'}, kept as it was"
            if not any(held.startswith(f"{place}:") for held in places):
                places.append(f"{place}:\n{excerpt.text.strip()}")
        return places

    @property
    def tool(self) -> RecallTool:
        """The recall tool over this store (its forms and the handler that answers a call: ``RecallTool``), which
        names where the last request already holds what a search finds (``held``) when nothing left out matches."""
        return RecallTool(self.recall, self.recalled_message,
                          lambda query: self.held(query, self._request, limit=3, min_score=MIN_SCORE))

    def between_cuts(
        self, candidate: list[BaseMessage], new: Sequence[BaseMessage], share: float, limit: int,
        tokens: Callable[[list[BaseMessage]], int], count: Callable[[BaseMessage], int],
    ) -> tuple[list[BaseMessage], Recalled | None] | None:
        """A request between cuts: ``candidate`` (the last request and what was appended, ``new``), with a recall
        message right before a new user message that relates to what was left out, within ``share`` of ``limit``
        (the input budget) and the room the request leaves (``tokens``: a request's; ``count``: a message's), and
        what it recalls; None when the recall found needs more room than is left (a cut makes it)."""
        if not share or not any(isinstance(m, HumanMessage) for m in new):
            return candidate, None
        query = recall_query(candidate)
        excerpts = find(self, candidate, limit=MAX_EXCERPTS, min_score=MIN_SCORE)
        if not excerpts:
            return candidate, None
        chosen = choose(query, excerpts, min(math.floor(share * limit), limit - tokens(candidate)), count)
        if chosen is None:
            return None
        message, kept, used = chosen
        with_recall = before_newest_user(candidate, message)
        if tokens(with_recall) > limit:
            return None
        return with_recall, Recalled(query, kept, used)
