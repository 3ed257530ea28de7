"""What every agent-framework integration shares: one planner from the one ``FitConfig``, a cache-stable
``PlanSession`` per conversation (``ConversationFitter``), the check that the current turn was sent whole
(``must_send``), and finding the one conversation a recall tool is called in (``ConversationFitter.find``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ctxwin._errors import CtxwinError, InvalidInputError
from ctxwin.messages import BaseMessage, convert_to_messages, message_to_dict
from ctxwin.messages._convert import is_responses_assistant_item
from ctxwin.planner import BudgetExceeded, Plan, Planner, PlanSession
from ctxwin.planner._config import FitConfig
from ctxwin.recall._tool import RECALL_TOOL_NAME
from ctxwin.strategies._base import leading_system_count
from ctxwin.strategies._must_send import must_send, sends

# Conversations whose sessions an integration keeps, least recently used dropped first.
MAX_CONVERSATIONS = 1024

Read = Callable[[Sequence[Any]], list[tuple[Any, BaseMessage]]]
"""Reads framework items into ctxwin messages, each paired with the item it came from (an item may give several
messages, or none)."""

Identity = Callable[[Any], Any]
"""What makes two framework items the same message, for frameworks whose items have no value equality and are read
again as new objects on every call (None: the items' own ``==``)."""


class TurnDoesNotFit(BudgetExceeded):
    """The conversation fits only without the last user message or the newest tool round after it (``must_send``):
    sent so, the model would not see what it answers, or the results it asked for, and would call the tools again,
    so nothing is sent. ``plan`` is the plan that dropped them; ``tokens`` is what they need (with the system
    message and the tool definitions), not what the plan kept."""

    def __init__(self, plan: Plan[Any], what: str, tokens: int) -> None:
        super().__init__(plan)
        self.tokens = tokens
        self.args = (
            f"{what} needs {tokens} tokens with the system prompt and {plan.budget.tools_tokens} tokens of tool "
            f"definitions, over the budget of {self.limit} tokens, so it cannot be sent whole; without it the "
            "model would not see what it is answering (and would call its tools again), so nothing was sent; "
            + "; ".join(plan.warnings),
        )


class FittersByModel:
    """One ``ConversationFitter`` per model the requests name, for integrations whose requests carry their model
    (the configured model's fitter for all of them when the configuration names one, or a counter)."""

    def __init__(self, owner: str, config: FitConfig, name: Callable[[str | None], str] | None = None) -> None:
        """``name``: the ctxwin model name for a request's model (default: as written; None raises)."""
        self.owner, self.config, self._name = owner, config, name
        self._fitters: dict[str | None, ConversationFitter] = {}
        self._lock = threading.Lock()
        if config.model is not None or config.counter is not None:
            self._fitters[None] = ConversationFitter(owner, config)

    def __call__(self, model: str | None) -> ConversationFitter:
        with self._lock:
            fitter = self._fitters.get(None) or self._fitters.get(model)
            if fitter is None:
                named = self._name(model) if self._name is not None else model
                if named is None:
                    raise InvalidInputError(f"{self.owner}: the request names no model: give model= or counter=")
                fitter = ConversationFitter(self.owner, self.config.replace(model=named))
                self._fitters[model] = fitter
            return fitter

    def find(self, *, key: Hashable | None) -> _Conversation | None:
        """The conversation ``key`` names, in the fitter of whichever model its latest call went to (``Unbound``:
        no key)."""
        if key is None:
            raise Unbound
        with self._lock:
            fitters = list(self._fitters.values())
        found = [c for c in (fitter.find(key=key) for fitter in fitters) if c is not None]
        return max(found, key=lambda conversation: conversation.used, default=None)


def require_sessions(owner: str, config: FitConfig, what: str) -> None:
    """ValueError unless ``config`` keeps a session per conversation (``what`` searches one)."""
    if not config.cache_stable:
        raise InvalidInputError(f"{owner}: {what} searches the conversation's session: it needs cache_stable=True")


@dataclass
class Fitted:
    """A fitted model call: the plan (its ``messages`` are ctxwin messages) and, for each message kept unchanged,
    the framework item it was read from."""

    plan: Plan[Any]
    origins: dict[int, Any] = field(repr=False)
    conversation: _Conversation | None = field(default=None, repr=False)

    @property
    def messages(self) -> list[BaseMessage]:
        return list(self.plan.messages)

    def origin(self, message: BaseMessage) -> Any:
        """The framework item ``message`` was read from, or None for a message a step made (a summary, a shortened
        tool output, recalled text)."""
        return self.origins.get(id(message))

    def remember(self, message: BaseMessage, item: Any) -> None:
        """``item`` is the framework's object for ``message`` from now on (one the integration made for a message a
        step made), so the next call of the conversation gives back the same object."""
        self.origins[id(message)] = item
        if self.conversation is not None:
            self.conversation.made.append(message)

    def given_back(self, make: Callable[[BaseMessage], Any]) -> list[Any]:
        """The fitted messages as the framework's items: the item each was read from when the plan kept it
        unchanged, else ``make(message)``, remembered so the next call gives the same object back."""
        out: list[Any] = []
        for message in self.plan.messages:
            origin = self.origin(message)
            if origin is None:
                origin = make(message)
                self.remember(message, origin)
            out.append(origin)
        return out

    def persisted(self, items: Sequence[Any]) -> None:
        """The framework keeps ``items`` (the fitted history, as given back) as the conversation's history, in
        place of what it had: the next call continues them (frameworks whose history processors rewrite the
        stored history)."""
        if self.conversation is not None:
            self.conversation.items = list(items)


@dataclass
class _Conversation:
    """A conversation's session, the framework items it was given (and what makes each the same message), the
    messages they were read as, and the item each of its messages came from."""

    session: PlanSession[Any]
    planner: Planner[Any]
    key: Hashable
    items: list[Any] = field(default_factory=list)
    same: list[Any] = field(default_factory=list)
    origins: dict[int, Any] = field(default_factory=dict)
    read: list[BaseMessage] = field(default_factory=list)
    made: list[BaseMessage] = field(default_factory=list)  # keeps the keys of the origins of made messages alive
    used: int = 0

    def continues(self, planner: Planner[Any], items: Sequence[Any], identity: Identity | None) -> bool:
        seen = len(self.items)
        if planner is not self.planner or not len(items) >= seen > 0:
            return False
        if identity is None:
            return list(items[:seen]) == self.items
        return [identity(item) for item in items[:seen]] == self.same

    def follow(self, items: Sequence[Any]) -> None:
        """The framework gives the conversation's items as new objects (read again from its store): the messages
        they were read as now come from those."""
        moved = {id(old): new for old, new in zip(self.items, items, strict=False) if old is not new}
        if not moved:
            return

        def renamed(origin: Any) -> Any:
            if isinstance(origin, tuple):
                return tuple(renamed(part) for part in origin)
            return moved.get(id(origin), origin)

        self.origins = {key: renamed(origin) for key, origin in self.origins.items()}
        self.items[: len(items)] = items[: len(self.items)]

    def add(self, items: Sequence[Any], read: Read, identity: Identity | None) -> None:
        pairs = read(items)
        self.items.extend(items)
        if identity is not None:
            self.same.extend(identity(item) for item in items)
        self.read.extend(message for _, message in pairs)
        self.origins.update((id(message), item) for item, message in pairs)
        self.session.add_messages([message for _, message in pairs])

    def agrees(self, history: Sequence[BaseMessage]) -> int:
        """How far ``history`` (a run's messages, or their start) and what this conversation was given are one
        conversation, in messages (0: they differ; system messages apart: frameworks send their instructions beside
        it)."""
        seen, given = _unsystem(self.read), _unsystem(history)
        reach = min(len(seen), len(given))
        return reach if reach > 0 and seen[:reach] == given[:reach] else 0

    def within(self, history: Sequence[BaseMessage]) -> int:
        """How many messages of ``history`` this conversation holds when all it was given is their start (0
        otherwise): then everything it could answer with came from ``history``."""
        seen, given = _unsystem(self.read), _unsystem(history)
        return len(seen) if 0 < len(seen) <= len(given) and seen == given[: len(seen)] else 0


def _unsystem(messages: Sequence[BaseMessage]) -> Sequence[BaseMessage]:
    return messages[leading_system_count(messages):]


class Unbound(CtxwinError, LookupError):
    """A recall tool cannot tell which conversation it was called in (its answer says so instead of searching)."""


# The conversation the current task fitted last, for a recall tool run later in the same run: a candidate only,
# taken when the run's own messages agree with it (a thread that ran another conversation's fit keeps the value).
_current: ContextVar[tuple[ConversationFitter, _Conversation] | None] = ContextVar("ctxwin_conversation", default=None)
_uses = itertools.count(1)


class ConversationFitter:
    """A planner for one integration's ``FitConfig``, and the conversations it fits, each in its own cache-stable
    session (``config.cache_stable``; otherwise every call is planned on its own, as ``Planner.plan`` does).

    A call names its conversation by the framework's key (a session, thread or conversation id). A call with no
    key goes to the conversation whose items it continues among those opening with the same first items (the
    longest one), else to a new one: so the calls of one agent run, which extend each other, share a session, and
    two conversations that open alike (one system prompt, one first question) keep their own sessions instead of
    evicting each other's at every call. At most ``MAX_CONVERSATIONS`` are kept, the least recently used dropped
    first.
    """

    def __init__(self, owner: str, config: FitConfig) -> None:
        if config.output != "messages":
            raise InvalidInputError(f"{owner}: the framework's own messages go back to it; output={config.output!r} is "
                                    f"for "
                                    "requests built with ctxwin.fit or Planner")
        self.owner = owner
        self.config = config
        # ``strict`` is the integration's to act on: a session's planner gives back a plan that does not fit, to try
        # again without the head.
        self.planner: Planner[Any] = Planner(config=config.replace(strict=False))
        self._conversations: OrderedDict[Hashable, _Conversation] = OrderedDict()
        self._openings: dict[str, list[Hashable]] = {}  # the keys of the unnamed conversations, by first items
        self._runs: dict[int, tuple[weakref.ref[Any], _Conversation]] = {}  # run object -> its conversation
        self._serial = itertools.count()
        self._lock = threading.Lock()  # one agent serves many conversations at once

    def planner_for(self, tools: Sequence[Any] | None, request: Mapping[str, Any] | None = None) -> Planner[Any]:
        """The planner for a call that sends ``tools`` (counted against the budget; None: the configuration's), or
        for a whole ``request`` body a client sent (its tools and tool_choice; the reserve at least its reply
        limit: ``Planner.for_request``)."""
        if request is not None:
            return self.planner.for_request(request, limit_floor=True)
        return self.planner if tools is None else self.planner.with_tools(list(tools) or None)

    def bind(self, run: Any, fitted: Fitted) -> None:
        """``run`` (a framework object its tool calls are handed, e.g. a workflow run's state) is in the
        conversation ``fitted`` was fitted in: ``find(run=run)`` finds it while ``run`` lives."""
        if fitted.conversation is None:
            return
        try:
            ref = weakref.ref(run)
        except TypeError:  # not weakly referable: the tool will say it cannot tell
            return
        with self._lock:
            if len(self._runs) >= 4 * MAX_CONVERSATIONS:
                self._runs = {key: entry for key, entry in self._runs.items() if entry[0]() is not None}
                while len(self._runs) >= 4 * MAX_CONVERSATIONS:
                    del self._runs[next(iter(self._runs))]
            self._runs[id(run)] = (ref, fitted.conversation)

    def find(
        self, *, key: Hashable | None = None, run: Any = None, history: Sequence[BaseMessage] | None = None,
        current: bool = False,
    ) -> _Conversation | None:
        """The conversation a recall tool was called in, told by what its framework handed the tool: ``key`` (the
        framework's id of the conversation), ``run`` (an object ``bind`` saw), or ``history`` (the run's messages,
        or their start: the conversation this task fitted last when it is the only one they agree with, else the
        longest one that holds nothing but their start). ``current``: without ``history``, the conversation this
        task fitted last (for frameworks whose async run makes its model calls and runs its tools in one task, and
        hands the tool nothing else). None: that conversation has had no call fitted (nothing was left out of it).
        ``Unbound`` when none of them tells: no conversation another one's call went to is ever given."""
        with self._lock:
            if key is not None:
                return self._conversations.get(_Named(key))
            if run is not None:
                entry = self._runs.get(id(run))
                if entry is not None and entry[0]() is run:
                    return entry[1]
            last = _current.get()
            latest = last[1] if last is not None and last[0] is self else None
            if history:
                # A task's last conversation may be another run's (a worker that ran that run's fit): it is taken
                # only when no other conversation agrees with these messages as far. (Conversations that share
                # only the opening, such as another user's first call, agree less far.)
                reaches = [(c.agrees(history), c) for c in self._conversations.values()]
                best = max((reach for reach, _ in reaches), default=0)
                if latest is not None and best and [c for reach, c in reaches if reach == best] == [latest]:
                    return latest
                reach, found = max(((c.within(history), c) for c in self._conversations.values()),
                                   key=lambda pair: pair[0], default=(0, None))
                if reach:
                    return found
            elif current and latest is not None:
                return latest
        raise Unbound

    def _conversation(
        self, planner: Planner[Any], items: Sequence[Any], key: Hashable | None, identity: Identity | None
    ) -> _Conversation:
        """The conversation a call of ``items`` continues (``key``'s, or an unnamed one), or a new one; the lock
        held."""
        if key is not None:
            named: Hashable = _Named(key)
            conversation = self._conversations.get(named)
            if conversation is not None and not conversation.continues(planner, items, identity):
                conversation = None
        else:
            opening = fingerprint([identity(item) for item in items[:2]] if identity is not None else items[:2])
            keys = self._openings.setdefault(opening, [])
            going = [self._conversations[k] for k in keys if self._conversations[k].continues(planner, items, identity)]
            conversation = max(going, key=lambda c: len(c.items), default=None)
            named = _Opening(opening, next(self._serial)) if conversation is None else conversation.key
            if conversation is None:
                keys.append(named)
        if conversation is None:
            conversation = _Conversation(planner.session(), planner, named)
            self._conversations[named] = conversation
            while len(self._conversations) > MAX_CONVERSATIONS:
                self._forget(self._conversations.popitem(last=False)[1])
        self._conversations.move_to_end(named)
        return conversation

    def _forget(self, conversation: _Conversation) -> None:
        if isinstance(conversation.key, _Opening):
            keys = self._openings[conversation.key.opening]
            keys.remove(conversation.key)
            if not keys:
                del self._openings[conversation.key.opening]

    def _prepare(
        self, items: Sequence[Any], read: Read, key: Hashable | None, tools: Sequence[Any] | None,
        identity: Identity | None, request: Mapping[str, Any] | None = None,
    ) -> tuple[Planner[Any], list[BaseMessage], _Conversation | None, dict[int, Any]]:
        planner = self.planner_for(tools, request)
        if not self.config.cache_stable or not items:
            pairs = read(items)
            return planner, [m for _, m in pairs], None, {id(m): item for item, m in pairs}
        with self._lock:
            conversation = self._conversation(planner, items, key, identity)
            conversation.used = next(_uses)
            _current.set((self, conversation))
            conversation.follow(items)
            conversation.add(items[len(conversation.items) :], read, identity)
            return planner, conversation.session.messages, conversation, conversation.origins

    def fit(
        self, items: Sequence[Any], read: Read, *, key: Hashable | None = None, tools: Sequence[Any] | None = None,
        identity: Identity | None = None, request: Mapping[str, Any] | None = None,
    ) -> Fitted:
        """The fitted call of ``items`` (the framework's whole history for this model call, system prompt first);
        ``request``: the whole request body they come from (its tools and reply limit count), instead of
        ``tools``."""
        planner, messages, conversation, origins = self._prepare(items, read, key, tools, identity, request)
        plan = conversation.session.plan() if conversation is not None else planner.plan(messages)
        return self._checked(planner, plan, messages, origins, conversation)

    async def afit(
        self, items: Sequence[Any], read: Read, *, key: Hashable | None = None, tools: Sequence[Any] | None = None,
        identity: Identity | None = None, request: Mapping[str, Any] | None = None,
    ) -> Fitted:
        """``fit`` for async code: an async summarizer is awaited."""
        planner, messages, conversation, origins = self._prepare(items, read, key, tools, identity, request)
        plan = await (conversation.session.aplan() if conversation is not None else planner.aplan(messages))
        return self._checked(planner, plan, messages, origins, conversation)

    def _checked(
        self, planner: Planner[Any], plan: Plan[Any], inputs: list[BaseMessage], origins: dict[int, Any],
        conversation: _Conversation | None,
    ) -> Fitted:
        if not plan.fits:
            raise BudgetExceeded(plan)
        system = leading_system_count(inputs)
        needed, what = must_send(inputs[system:])
        if not sends(inputs[system:], needed, plan.messages[leading_system_count(plan.messages) :]):
            kept = [*inputs[:system], *(inputs[system + i] for i in needed)]
            tokens = planner.counter.count_messages(kept, tools=planner.tools)
            raise TurnDoesNotFit(plan, f"{self.owner}: {what}", tokens)
        return Fitted(plan, origins, conversation)


@dataclass(frozen=True)
class _Named:
    """The key of a conversation its framework names."""

    key: Hashable


@dataclass(frozen=True)
class _Opening:
    """The key of an unnamed conversation: the fingerprint of its first items, and which of those it is."""

    opening: str
    serial: int


def recall(find: Callable[[], _Conversation | None], query: str, handle: str, unbound: str) -> str:
    """A recall tool's answer: the search of the conversation ``find`` gives (``session.recall_tool``), or a
    sentence saying why there is none to search (``unbound``: what the framework did not tell)."""
    try:
        conversation = find()
    except Unbound:
        return (f"{RECALL_TOOL_NAME} error: cannot tell which conversation this call belongs to ({unbound}), so "
                "nothing was searched.")
    if conversation is None:
        return "Nothing has been left out of this conversation."
    try:
        return conversation.session.recall_tool.run(query=query, handle=handle)
    except ValueError as error:
        return str(error)


def read_responses(items: Sequence[Any]) -> list[tuple[Any, BaseMessage]]:
    """Responses items as ctxwin messages, each with the tuple of items it was read from: an assistant turn's
    reasoning, message and function-call items make one AIMessage, and go back together."""
    pairs: list[tuple[Any, BaseMessage]] = []
    group: list[Any] = []
    for item in [*items, None]:
        if item is not None and is_responses_assistant_item(item):
            group.append(item)
            continue
        if group:
            pairs.extend((tuple(group), message) for message in convert_to_messages(group))
            group = []
        if item is not None:
            pairs.extend(((item,), message) for message in convert_to_messages([item]))
    return pairs


def fingerprint(item: Any) -> str:
    """A key for a conversation told apart by nothing but its first items (their JSON, hashed)."""
    def plain(value: Any) -> Any:
        if isinstance(value, BaseMessage):
            return message_to_dict(value)
        if hasattr(value, "model_dump"):
            return value.model_dump(mode="json")
        if callable(getattr(value, "to_dict", None)):
            return value.to_dict()
        return repr(value)

    text = json.dumps(item, sort_keys=True, default=plain, ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
