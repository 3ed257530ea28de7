"""The planner: compose strategies until a conversation fits a model's input budget, and report every step.

``Budget`` comes from the model (context window, default reserved output) or explicit numbers, less the tool
definitions (counted with the model's counter) and a safety margin that is zero for exact counters and, for an
estimating counter, its measured relative error (the counter's ``max_relative_error``) times the input budget.

A plan tokenizes what its decisions need and no more: whether a conversation fits is answered counting from the
newest message back until it is over, and a shrinking step leaves alone what a later trim drops anyway. The token
figures of its report are exact, and those that involve messages the plan dropped without reading are counted when
first read (once), so a chat loop that only sends ``plan.messages`` never tokenizes the history it drops.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, overload

from typing_extensions import TypedDict, Unpack

from ctxwin import tracing
from ctxwin.counters import get_counter, get_model
from ctxwin.counters.base import TokenCounter
from ctxwin.messages import AIMessage, BaseMessage, SystemMessage
from ctxwin.messages.convert import is_request, request_tools
from ctxwin.messages.forms import OUTPUTS, CallerForms, Output, give_back, read_for
from ctxwin.messages.request_body import request_form, request_limit
from ctxwin.messages.sdk_types import AnthropicMessage, OpenAIMessage, ResponsesItem
from ctxwin.messages.tool_forms import check_tool_choice, openai_tools
from ctxwin.planner.chain import build_chain, default_chain, later_keeps
from ctxwin.planner.report import BudgetExceeded, Figures, Labels, M, Plan, StepReport, Touched, verbatim_turns
from ctxwin.planner.session import PlanSession, SessionOptions
from ctxwin.planner.spans import plan_attributes, start_attributes, step_attributes
from ctxwin.plural import plural
from ctxwin.recall.inject import (
    MAX_EXCERPTS,
    MIN_SCORE,
    InputRecall,
    Recalled,
    RecallSource,
    choose,
    is_recalled,
    placed,
    recall_query,
)
from ctxwin.strategies.base import (
    BaseStrategy,
    Budget,
    StepContext,
    StepResult,
    Strategy,
    last_user_index,
    leading_system_count,
    must_keep,
)
from ctxwin.strategies.meter import Meter
from ctxwin.strategies.pairs import BrokenPairs, RepairToolPairs, find_broken_pairs
from ctxwin.strategies.placement import PlaceMedia
from ctxwin.strategies.trim import TrimToBudget
from ctxwin.strategies.walk import within

BrokenToolPairs = Literal["drop", "keep"]


# Tool-definition variants a planner remembers (with_tools) before it starts over.
_MAX_TOOL_VARIANTS = 64

# The reply's default reserve: a model's max output is what it may write, not what a reply needs, and models whose
# max output equals their window (Llama 3.x, gpt-oss) would give half of it away. The default is the max output,
# at most an eighth of the window (but 8,192 when the window allows: replies, with reasoning, need a few thousand),
# and never more than half the window.
RESERVE_SHARE = 8
RESERVE_FLOOR = 8_192
# The most of the input budget recall's excerpts may take (recall_share): docs/recall.md has the measurements.
DEFAULT_RECALL_SHARE = 0.1
RECALL_STEP = "recall"
RECALL_ROOM_STEP = "recall_room"


def default_reserve(max_output: int, window: int) -> int:
    """``min(max_output, max(window // 8, 8_192), window // 2)``: 16,000 of gpt-4o's 128,000 (max output 16,384),
    16,384 of llama-3.1-8b-instruct's 131,072, 25,000 of a 200k Claude's, 4,096 of gpt-4's 8,192."""
    return min(max_output, max(window // RESERVE_SHARE, RESERVE_FLOOR), window // 2)


class _Options(TypedDict, total=False):
    """The keyword options ``fit`` and ``Planner`` share (see ``Planner``), for their typed overloads on ``output``."""

    context_window: int | None
    reserve_output: int | None
    tools: Sequence[Any] | None
    tool_choice: Any
    summarizer: Any
    keep_last: int | None
    counter: TokenCounter | str | None
    strict: bool
    broken_tool_pairs: BrokenToolPairs
    recall_share: float


class FitOptions(_Options, total=False):
    strategies: Sequence[Strategy | str] | str | None


class PlannerOptions(_Options, total=False):
    safety_margin: int | None


_Strategies = Sequence[Strategy | str] | str | None


class Planner(Generic[M]):
    """Fits conversations for one model/budget; build it once and call ``plan`` (or ``aplan``) per conversation, or
    keep a ``session()`` per growing conversation (a chat loop).

    ``strategies`` are Strategy objects or registered names (or one name), built once (``ctxwin.planner.chain``); by
    default ``clear_reasoning``, ``filter``, ``truncate_tool_output``, ``summarize`` (only when a ``summarizer`` or
    ``keep_last`` is given) and ``trim``; a provider output runs ``place_media`` first. ``summarizer`` and
    ``keep_last`` are the summarize step's options: it is built with them (a ``Summarize`` in ``strategies`` takes
    them where it leaves its own unset).
    ``keep_last`` keeps at least the last N messages verbatim (a warning says when the budget could not).
    ``broken_tool_pairs``: ``"drop"`` repairs orphan tool results and unanswered calls in the input (the rule is in
    ``ctxwin.strategies.pairs``), ``"keep"`` sends them as they are; both warn, naming the ids.
    ``output`` is the form of ``Plan.messages`` (``ctxwin.messages.forms``, docs/interop.md): ``"messages"`` (the
    caller's: LangChain in, LangChain out; else ctxwin messages), ``"openai"``, ``"responses"`` or ``"anthropic"``,
    typed as the SDK's own request param types (``ctxwin.messages.sdk_types``); ``Plan.request`` is then the whole
    request body (``ctxwin.messages.request_body``).
    ``tools`` are OpenAI function tools, Responses or Anthropic tools, or LangChain tools (``tool_forms``), counted
    in the budget and sent in the output's form with ``tool_choice`` (any provider's form). ``reserve_output``
    defaults to ``default_reserve`` and is the request's reply limit. ``cache_control=True`` (with
    ``output="anthropic"``) marks Anthropic cache breakpoints in ``Plan.request`` (tools, system, the last
    message); sessions mark them by default (``ctxwin.planner.session``).
    """

    @overload
    def __init__(
        self: Planner[OpenAIMessage], model: str | None = None, strategies: _Strategies = None, *,
        output: Literal["openai"],
        **options: Unpack[PlannerOptions],
    ) -> None: ...

    @overload
    def __init__(
        self: Planner[ResponsesItem], model: str | None = None, strategies: _Strategies = None, *,
        output: Literal["responses"],
        **options: Unpack[PlannerOptions],
    ) -> None: ...

    @overload
    def __init__(
        self: Planner[AnthropicMessage], model: str | None = None, strategies: _Strategies = None, *,
        output: Literal["anthropic"],
        **options: Unpack[PlannerOptions],
    ) -> None: ...

    @overload
    def __init__(
        self: Planner[Any], model: str | None = None, strategies: _Strategies = None, *,
        output: Output = "messages", **options: Unpack[PlannerOptions],
    ) -> None: ...

    def __init__(
        self,
        model: str | None = None,
        strategies: Sequence[Strategy | str] | str | None = None,
        *,
        context_window: int | None = None,
        reserve_output: int | None = None,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        counter: TokenCounter | str | None = None,
        summarizer: Any = None,
        keep_last: int | None = None,
        safety_margin: int | None = None,
        strict: bool = False,
        output: Output = "messages",
        broken_tool_pairs: BrokenToolPairs = "drop",
        cache_control: bool = False,
        recall_share: float = DEFAULT_RECALL_SHARE,
    ) -> None:
        spec = get_model(model) if model is not None else None
        if counter is None and spec is None:
            raise ValueError("Planner needs a model name or a counter (and then a context_window)")
        if isinstance(counter, str) or counter is None:
            self.counter: TokenCounter = get_counter(counter or spec.counter)  # type: ignore[union-attr]
        else:
            self.counter = counter
        window = context_window if context_window is not None else (spec.context_window if spec else None)
        if window is None:
            raise ValueError("context_window is required when no model is given")
        reserve = reserve_output if reserve_output is not None else (spec.max_output_tokens if spec else 0)
        for label, value in (("context_window", window), ("reserve_output", reserve), ("keep_last", keep_last)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{label} must be a non-negative int, got {value!r}")
        if reserve_output is None:
            reserve = default_reserve(reserve, window)
        if reserve >= window:
            raise ValueError(f"reserve_output ({reserve}) must be smaller than the context window ({window})")
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {', '.join(map(repr, OUTPUTS))}, got {output!r}")
        if broken_tool_pairs not in ("drop", "keep"):
            raise ValueError(f"broken_tool_pairs must be 'drop' or 'keep', got {broken_tool_pairs!r}")
        if not isinstance(cache_control, bool) or (cache_control and output != "anthropic"):
            raise ValueError(f"cache_control=True marks Anthropic cache breakpoints: it needs output='anthropic' "
                             f"(got cache_control={cache_control!r}, output={output!r})")
        if isinstance(recall_share, bool) or not isinstance(recall_share, (int, float)) or not 0 <= recall_share < 1:
            raise ValueError(f"recall_share must be a share of the input budget, 0 <= recall_share < 1 (0: no "
                             f"recall), got {recall_share!r}")
        if summarizer is not None and not callable(summarizer):
            raise TypeError(f"summarizer must be callable (list[BaseMessage] -> str), got {summarizer!r}")
        self.tools = openai_tools(tools)
        if tool_choice is not None:
            check_tool_choice(tool_choice)
        self.tool_choice = tool_choice
        self._variants: dict[str, Planner] = {}  # for_request's planners, by the JSON of what differs
        self._error = float(getattr(self.counter, "max_relative_error", 0.0) or 0.0)
        self._margin_given = safety_margin is not None
        self._reserve_given = reserve_output is not None
        margin = safety_margin if safety_margin is not None else math.ceil(self._error * (window - reserve))
        self.budget = Budget(window, reserve, self._tools_tokens(), margin)
        self.model = spec.name if spec else None
        self.strict = strict
        self.output = output
        self.broken_tool_pairs = broken_tool_pairs
        self.cache_control = cache_control
        self.caching = spec.caching if spec else None
        self.keep_last = keep_last
        self.recall_share = float(recall_share)
        chain = build_chain(strategies, summarizer, keep_last)
        self.strategies = chain or default_chain(summarizer, keep_last)
        self._later_keeps = later_keeps(self.strategies)
        self._room_trim = TrimToBudget()

    def with_tools(self, tools: Sequence[Any] | None) -> Planner[M]:
        """This planner for requests that send ``tools`` instead (the budget changes, nothing else).

        ``self`` for the same tools. Variants are remembered by the tools' JSON, so a dataset whose conversations
        all carry the same tool definitions counts them once, not once per conversation.
        """
        wanted = openai_tools(tools)
        if wanted == self.tools:
            return self
        return self._variant(wanted, self.output, self.tool_choice, self.budget.reserve_output)

    def _variant(
        self, tools: list[dict[str, Any]] | None, output: Output, tool_choice: Any, reserve: int
    ) -> Planner[M]:
        """This planner with other tools, output, tool_choice or reserve (remembered by their JSON)."""
        key = json.dumps([tools, output, tool_choice, reserve], sort_keys=True, ensure_ascii=False, default=repr)
        other = self._variants.get(key)
        if other is None:
            if len(self._variants) >= _MAX_TOOL_VARIANTS:
                self._variants.clear()
            other = copy.copy(self)  # shares _variants: every variant derives from the same settings
            other.tools, other.output, other.tool_choice = tools, output, tool_choice
            budget = self.budget
            margin = budget.safety_margin if self._margin_given else math.ceil(self._error * (budget.context_window
                                                                                               - reserve))
            other.budget = Budget(budget.context_window, reserve,
                                  other._tools_tokens() if tools != self.tools else budget.tools_tokens, margin)
            self._variants[key] = other
        return other

    def for_request(self, request: Any) -> Planner[M]:
        """This planner for ``request`` (a message list, or a whole request ``{"messages"|"input", "tools",
        "tool_choice", "max_tokens", ...}``): the request's tools and tool_choice replace the planner's, as they
        are what is sent, its reply limit is the reserve unless ``reserve_output`` was given, and
        ``output="request"`` becomes the form the request is in (``request_body.request_form``)."""
        output: Output = request_form(request) if self.output == "request" else self.output
        tools, choice, reserve = self.tools, self.tool_choice, self.budget.reserve_output
        if is_request(request):
            found = request_tools(request)
            tools = found if found is not None else tools
            if request.get("tool_choice") is not None:
                check_tool_choice(request["tool_choice"])
                choice = request["tool_choice"]
            limit = request_limit(request)
            if limit is not None and not self._reserve_given:
                if limit >= self.budget.context_window:
                    raise ValueError(f"the request's reply limit ({limit}) must be smaller than the context window "
                                     f"({self.budget.context_window})")
                reserve = limit
        if (tools, output, choice, reserve) == (self.tools, self.output, self.tool_choice, self.budget.reserve_output):
            return self
        return self._variant(tools, output, choice, reserve)

    def _tools_tokens(self) -> int:
        if not self.tools:
            return 0
        count_tools = getattr(self.counter, "count_tools", None)
        if callable(count_tools):
            return int(count_tools(self.tools))
        probe = [SystemMessage("x")]
        return self.counter.count_messages(probe, tools=self.tools) - self.counter.count_messages(probe)

    def _context(self, meter: Meter) -> StepContext:
        return StepContext(self.budget, meter, pinned=meter.pinned, head=meter.head)

    def _check_pairs(self, run: _Run, meter: Meter) -> None:
        """No broken tool pair goes out: those of the fitted conversation are repaired (a step of its own) and
        reported as the input's or as a step's. Only the fitted conversation is scanned (the input only when it has
        some), so a plan far over budget does not read the history it drops."""
        broken = find_broken_pairs(run.current)
        if not broken:
            return
        inputs = run.lists[0]
        known = broken if run.current is inputs else find_broken_pairs(inputs)
        inherited = {*known.orphan_ids(inputs), *known.unanswered_ids()}
        current = run.current
        from_input, from_steps = broken.split(current, inherited)
        if from_input and self.broken_tool_pairs == "keep":
            run.warnings.append(
                f"the input has {from_input.describe(current)}, which providers reject; kept (broken_tool_pairs='keep')"
            )
            from_input = BrokenPairs()
        if from_input:
            self._repair(run, meter, from_input, "the input has")
            if from_steps:  # indexes moved: find the rest again in the repaired list
                from_steps = find_broken_pairs(run.current)
        if from_steps:
            self._repair(run, meter, from_steps, "the fitting steps left")

    def _repair(self, run: _Run, meter: Meter, broken: BrokenPairs, reason: str) -> None:
        repair = RepairToolPairs(broken=broken, reason=reason)
        run.record(repair.name, repair.apply(run.current, self._context(meter)))

    def _finish(self, run: _Run, meter: Meter, forms: CallerForms | None, top: Any) -> Plan[M]:
        self._check_pairs(run, meter)
        messages = run.current
        after = self._request_tokens(messages, meter)
        run.figures.known(len(run.lists) - 1, after)
        fits = after <= self.budget.max_input_tokens
        steps = run.steps
        warnings = [f"{s.name}: {note}" for s in steps if s.skipped for note in s.notes] + run.warnings
        if not fits:
            kept = [messages[i] for i in must_keep(messages, meter.pinned)]
            warnings.append(
                f"does not fit: {after} tokens for a budget of {self.budget.max_input_tokens}; the must-keep part "
                f"(system, pinned, last user message) alone needs {self._request_tokens(kept, meter)}"
            )
        if last_user_index(messages) is None:
            warnings.append("the conversation has no user message")
        if self.output == "anthropic" and not self.tools and any(isinstance(m, AIMessage) and m.tool_calls
                                                                 for m in messages):
            warnings.append("the conversation has tool calls but no tools were given: Anthropic rejects tool_use "
                            "blocks in a request without tools (pass tools=)")
        inputs = run.lists[0]
        if self.keep_last and messages is not inputs:
            present = set(map(id, messages))
            lost = sum(id(m) not in present for m in inputs[-self.keep_last :])
            if lost:
                warnings.append(
                    f"keep_last={self.keep_last}: {lost} of the last {min(self.keep_last, len(inputs))} messages "
                    "could not be kept verbatim within the budget (shortened or dropped; see the steps)"
                )
        name = getattr(self.counter, "name", type(self.counter).__name__)
        out, top_system = give_back(messages, self.output, forms)
        system = sum(meter.each(messages[: leading_system_count(messages)]))
        plan = Plan(
            out, fits, self.budget, after, steps, warnings, name, self.model, system,
            verbatim_turns(inputs, messages), figures=run.figures, system=top_system, output=self.output,
            tools=self.tools, tool_choice=self.tool_choice,
            cache_breakpoints=(-1,) if self.cache_control else None, recalled=run.recalled,
        )
        if top is not None:
            top.set_attributes(plan_attributes(plan, inputs, messages))
        if self.strict and not fits:
            raise BudgetExceeded(plan)
        return plan

    def _request_tokens(self, messages: list[BaseMessage], meter: Meter) -> int:
        if not messages:
            return meter.exact(messages)  # an empty request still has the reply priming (and the tools)
        if meter.overhead is not None:
            return meter.total(messages) + self.budget.tools_tokens
        return meter.exact(messages)

    def _fits(self, messages: list[BaseMessage], meter: Meter) -> bool:
        """Whether the request fits, tokenizing from the newest message back only until it does not."""
        if messages and meter.overhead is not None:
            return within(meter, messages, self.budget.max_input_tokens - self.budget.tools_tokens)
        return meter.exact(messages) <= self.budget.max_input_tokens

    def plan(self, messages: Any) -> Plan[M]:
        """Apply the strategies in order until the conversation fits; never mutates the input. LangChain messages
        in give LangChain messages in ``Plan.messages`` (``ctxwin.messages.forms``) unless ``output="openai"``."""
        planner = self.for_request(messages)
        items, forms = read_for(messages, planner.output)
        return planner._plan(list(items) if items is messages else items, Meter(planner.counter, planner.tools), forms)

    async def aplan(self, messages: Any) -> Plan[M]:
        """``plan`` for async code: the steps' ``aapply`` are awaited (async summarizers)."""
        planner = self.for_request(messages)
        items, forms = read_for(messages, planner.output)
        return await planner._aplan(
            list(items) if items is messages else items, Meter(planner.counter, planner.tools), forms
        )

    def session(self, messages: Any = None, **options: Unpack[SessionOptions]) -> PlanSession[M]:
        """A ``PlanSession`` for a conversation that grows turn by turn (a chat loop), starting with ``messages``;
        cache-stable unless ``cache_stable=False`` (``ctxwin.planner.session`` has the options)."""
        if self.output == "request":
            raise ValueError("output='request' is the form of a whole request given to plan(); a session is given "
                             "turns: name the output ('openai', 'responses', 'anthropic' or 'messages')")
        session: PlanSession[M] = PlanSession(self, **options)
        if messages is not None:
            session.add_messages(messages)
        return session

    def plan_run(
        self, messages: list[BaseMessage], meter: Meter, forms: CallerForms | None = None, *, target: int | None = None,
        recall: RecallSource | bool = True,
    ) -> tuple[Plan[M], list[BaseMessage]]:
        """``plan`` of ctxwin ``messages`` with ``meter`` (a session's), and the ctxwin messages the plan sends.

        ``target``: the steps fit the messages to that many input tokens instead of the budget (a session's cut to
        its low-water mark); the plan still reports, and ``fits`` means, the budget. ``recall``: where recall searches
        (a session's store), True for the input itself, False for no recall (a session between cuts)."""
        with tracing.span("ctxwin.plan", start_attributes(self.counter, self.model, self.budget, messages)) as top:
            messages, source = self._recall_input(messages, recall)
            run = self._start(messages, meter)
            for strategy, step_context in self._runner(target)._steps(run, meter):
                with tracing.span(f"ctxwin.step {strategy.name}") as span:
                    run.record(strategy.name, strategy.apply(run.current, step_context), span)
            self._recall(run, meter, source, target)
            return self._finish(run, meter, forms, top), run.current

    async def aplan_run(
        self, messages: list[BaseMessage], meter: Meter, forms: CallerForms | None = None, *, target: int | None = None,
        recall: RecallSource | bool = True,
    ) -> tuple[Plan[M], list[BaseMessage]]:
        """``plan_run`` for async code (see ``aplan``)."""
        with tracing.span("ctxwin.plan", start_attributes(self.counter, self.model, self.budget, messages)) as top:
            messages, source = self._recall_input(messages, recall)
            run = self._start(messages, meter)
            for strategy, step_context in self._runner(target)._steps(run, meter):
                with tracing.span(f"ctxwin.step {strategy.name}") as span:
                    run.record(strategy.name, await strategy.aapply(run.current, step_context), span)
            self._recall(run, meter, source, target)
            return self._finish(run, meter, forms, top), run.current

    def _recall_input(
        self, messages: list[BaseMessage], recall: RecallSource | bool
    ) -> tuple[list[BaseMessage], RecallSource | None]:
        """The messages to plan (without an earlier recall message: a new one replaces it) and where recall
        searches; None when recall is off."""
        if not self.recall_share or recall is False:
            return messages, None
        if any(map(is_recalled, messages)):
            messages = [m for m in messages if not is_recalled(m)]
        return messages, InputRecall(messages) if recall is True else recall

    def _recall_search(self, run: _Run, meter: Meter, source: RecallSource | None) -> Recalled | None:
        """What recall would bring back, when a step left something out and the query relates to it; None else."""
        if source is None or not any(c.kind != "replaced" for step in run.results for c in step.changes):
            return None
        query = recall_query(run.current)
        if not query:
            return None
        excerpts = source.search(query, run.current, limit=MAX_EXCERPTS, min_score=MIN_SCORE)
        room = math.floor(self.recall_share * self.budget.max_input_tokens)
        chosen = choose(query, excerpts, room, meter.count) if excerpts else None
        return None if chosen is None else Recalled(query, chosen[1], chosen[2])

    def _recall(self, run: _Run, meter: Meter, source: RecallSource | None, target: int | None) -> None:
        """Query-aware recall after the steps: when they left something out that the query relates to, a trim
        makes the room the excerpts take (``recall_room``: the oldest kept messages go, as the last trim would have
        taken them), then the recall message of the excerpts still left out, within that room, is placed where the
        kept conversation starts (``placed``); not added when the request would no longer fit."""
        found = self._recall_search(run, meter, source)
        if found is None or source is None:
            return
        goal = self.budget.max_input_tokens if target is None else target
        lowered = self._runner(goal - found.tokens)
        room = found.tokens
        if not lowered._fits(run.current, meter):
            made = self._room_trim.apply(run.current, lowered._context(meter))
            if self._keeps_last_turn(run.current, made.messages):
                run.record(RECALL_ROOM_STEP, made)
            else:  # the room would cost the current turn: recall in the room left
                room = goal - self._request_tokens(run.current, meter)
        excerpts = source.search(found.query, run.current, limit=MAX_EXCERPTS, min_score=MIN_SCORE)
        chosen = choose(found.query, excerpts, room, meter.count) if excerpts and room > 0 else None
        if chosen is None:
            return
        message, kept, tokens = chosen
        messages = placed(run.current, message, meter.head)
        if not self._fits(messages, meter):
            return
        run.recalled = Recalled(found.query, kept, tokens)
        labels = ", ".join(run.recalled.labels)
        note = f"recalled {plural(len(kept), 'excerpt')} of {labels} ({tokens} tokens) for {found.query[:80]!r}"
        run.record(RECALL_STEP, StepResult(messages, notes=[note]))

    @staticmethod
    def _keeps_last_turn(messages: list[BaseMessage], trimmed: list[BaseMessage]) -> bool:
        """Whether ``trimmed`` still holds the last user message of ``messages`` and all that follows it."""
        start = last_user_index(messages)
        if start is None:
            return True
        kept = set(map(id, trimmed))
        return all(id(m) in kept for m in messages[start:])

    def _runner(self, target: int | None) -> Planner[M]:
        """The planner whose steps run: this one, or for a ``target`` below the budget this one with an input
        budget of ``target`` tokens (the difference taken as safety margin)."""
        budget = self.budget
        if target is None or target >= budget.max_input_tokens:
            return self
        lowered = copy.copy(self)
        lowered.budget = dataclasses.replace(
            budget, safety_margin=budget.safety_margin + budget.max_input_tokens - max(target, 0)
        )
        return lowered

    def _steps(self, run: _Run, meter: Meter) -> Iterator[tuple[BaseStrategy, StepContext]]:
        """The strategies still to apply, each with its context, stopping as soon as the conversation fits."""
        context = self._context(meter)
        for strategy, keeps in zip(self.strategies, self._later_keeps, strict=True):
            if self._fits(run.current, meter):
                return
            yield strategy, dataclasses.replace(context, later_keeps=keeps)

    def _start(self, messages: list[BaseMessage], meter: Meter) -> _Run:
        """The plan's run, and for a provider output its first step: media moved to where that API takes it
        (``place_media``, reported when it changed anything)."""
        lists = [messages]
        run = _Run(lists, Labels(messages), Figures(lambda listed: self._request_tokens(listed, meter), lists))
        if self.output != "messages":
            placing = PlaceMedia(self.output)
            result = placing.apply(messages, self._context(meter))
            if result.messages is not messages:
                run.record(placing.name, result)
        return run

    def _plan(self, messages: list[BaseMessage], meter: Meter, forms: CallerForms | None = None) -> Plan[M]:
        return self.plan_run(messages, meter, forms)[0]

    async def _aplan(self, messages: list[BaseMessage], meter: Meter, forms: CallerForms | None = None) -> Plan[M]:
        return (await self.aplan_run(messages, meter, forms))[0]


@dataclass
class _Run:
    """One plan in progress: the message list after each step so far (``lists``, shared with ``figures``), and what
    the steps reported."""

    lists: list[list[BaseMessage]]
    labels: Labels
    figures: Figures
    steps: list[StepReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what the steps said the caller must know
    results: list[StepResult] = field(default_factory=list)
    recalled: Recalled | None = None

    @property
    def current(self) -> list[BaseMessage]:
        return self.lists[-1]

    def record(self, name: str, result: StepResult, span: Any = None) -> None:
        self.labels.copies_of(result)
        index = len(self.lists) - 1
        report = StepReport(
            name, list(result.notes), result.skipped, touched=Touched(self.labels, result), figures=self.figures,
            index=index,
        )
        self.steps.append(report)
        self.results.append(result)
        self.warnings.extend(f"{name}: {warning}" for warning in result.warnings)
        if span is not None:
            span.set_attributes(step_attributes(report, result, self.labels, len(self.current)))
        self.lists.append(result.messages)


@overload
def fit(
    messages: Any, model: str | None = "gpt-4o", *, output: Literal["openai"], **options: Unpack[FitOptions]
) -> Plan[OpenAIMessage]: ...


@overload
def fit(
    messages: Any, model: str | None = "gpt-4o", *, output: Literal["responses"], **options: Unpack[FitOptions]
) -> Plan[ResponsesItem]: ...


@overload
def fit(
    messages: Any, model: str | None = "gpt-4o", *, output: Literal["anthropic"], **options: Unpack[FitOptions]
) -> Plan[AnthropicMessage]: ...


@overload
def fit(
    messages: Any, model: str | None = "gpt-4o", *, output: Output = "messages", **options: Unpack[FitOptions]
) -> Plan[Any]: ...


def fit(
    messages: Any,
    model: str | None = "gpt-4o",
    *,
    context_window: int | None = None,
    reserve_output: int | None = None,
    tools: Sequence[Any] | None = None,
    tool_choice: Any = None,
    strategies: Sequence[Strategy | str] | str | None = None,
    summarizer: Any = None,
    keep_last: int | None = None,
    counter: TokenCounter | str | None = None,
    strict: bool = False,
    output: Output = "messages",
    broken_tool_pairs: BrokenToolPairs = "drop",
    recall_share: float = DEFAULT_RECALL_SHARE,
) -> Plan:
    """Fit ``messages`` (any shape ``convert_to_messages`` accepts) to ``model``; see ``Planner``."""
    return Planner(
        model,
        strategies,
        context_window=context_window,
        reserve_output=reserve_output,
        tools=tools,
        tool_choice=tool_choice,
        counter=counter,
        summarizer=summarizer,
        keep_last=keep_last,
        strict=strict,
        output=output,
        broken_tool_pairs=broken_tool_pairs,
        recall_share=recall_share,
    ).plan(messages)
