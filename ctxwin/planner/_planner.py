"""``Planner`` and ``fit``: compose strategies until a conversation fits a model's input budget, and report every step.
A plan tokenizes what its decisions need and no more (docs/planner.md).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Awaitable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from operator import is_not
from typing import Any, Generic, Literal, overload

from typing_extensions import Unpack

from ctxwin import _tracing as tracing
from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin._plural import plural
from ctxwin.counters import get_counter, get_model
from ctxwin.counters._base import TokenCounter, estimates, require_counter
from ctxwin.messages import BaseMessage
from ctxwin.messages._convert import is_request, request_tools
from ctxwin.messages._forms import CallerForms, Output
from ctxwin.messages._request_forms.form import CALLER, RequestForm
from ctxwin.messages._request_forms.registry import AS_GIVEN, form_of, get_form, request_limit
from ctxwin.messages._sdk_types import AnthropicMessage, OpenAIMessage, ResponsesItem
from ctxwin.messages._tool_forms import check_tool_choice, openai_tools
from ctxwin.planner._cache_marks import check_cache_control
from ctxwin.planner._chain import build_chain, default_chain, later_keeps
from ctxwin.planner._config import DEFAULT_MODEL, FitConfig, FitOptions
from ctxwin.planner._driving import adrive, drive
from ctxwin.planner._no_room import MustStay, no_room
from ctxwin.planner._option_error import OptionError
from ctxwin.planner._planning import ONE_OFF, Planned, SessionTurn
from ctxwin.planner._report import BudgetExceeded, Figures, Labels, M, Plan, StepReport, Touched, verbatim_turns
from ctxwin.planner._session import PlanSession
from ctxwin.planner._spans import plan_attributes, start_attributes, step_attributes
from ctxwin.recall._inject import Recalled
from ctxwin.recall._step import RecallStep, record_recall, without_newest_recall
from ctxwin.strategies._base import (
    BaseStrategy,
    Budget,
    StepContext,
    StepResult,
    Strategy,
    last_turn,
    last_user_index,
    leading_system_count,
    must_keep,
    must_keep_with_partners,
    working_set_start,
)
from ctxwin.strategies._ledger import KINDS, Ledger, ledger_message
from ctxwin.strategies._ledger_block import LedgerReport, carried, placed_block, report, without_blocks
from ctxwin.strategies._meter import Meter
from ctxwin.strategies._pairs import BrokenPairs, RepairToolPairs, find_broken_pairs
from ctxwin.strategies._placement import PlaceMedia
from ctxwin.strategies._summarize import is_summary
from ctxwin.strategies._truncate import TruncateToolOutput, cap_tool_outputs
from ctxwin.strategies._walk import suffix_start, within

# Tool-definition variants a planner remembers (with_tools) before it starts over.
_MAX_TOOL_VARIANTS = 64

# The reply's default reserve: a model's max output is what it may write, not what a reply needs, and models whose
# max output equals their window (Llama 3.x, gpt-oss) would give half of it away. The default is the max output,
# at most an eighth of the window (but 8,192 when the window allows: replies, with reasoning, need a few thousand),
# and never more than half the window.
RESERVE_SHARE = 8
RESERVE_FLOOR = 8_192
LEDGER_STEP = "ledger"
NAMED_LEFT = 8  # entries a ledger note names when its share left them out


def _sendable(form: RequestForm, model: str | None, reserve: int) -> int:
    """A default reserve no larger than the reply limit the ``form``'s SDK sends without streaming (Anthropic's:
    ``RequestForm.nonstreaming_limit``), so the request is sendable as built."""
    limit = form.nonstreaming_limit(model)
    return reserve if limit is None else min(reserve, limit)


def default_reserve(max_output: int, window: int) -> int:
    """``min(max_output, max(window // 8, 8_192), window // 2)``: 16,000 of gpt-4o's 128,000 (max output 16,384),
    16,384 of llama-3.1-8b-instruct's 131,072, 25,000 of a 200k Claude's, 4,096 of gpt-4's 8,192."""
    return min(max_output, max(window // RESERVE_SHARE, RESERVE_FLOOR), window // 2)


_Strategies = Sequence[Strategy | str] | str | None


# A step the planning routine asks for: a strategy, the messages to apply it to and its context.
_Step = tuple[BaseStrategy, list[BaseMessage], StepContext]


def _apply(step: _Step) -> StepResult:
    strategy, messages, context = step
    return strategy.apply(messages, context)


def _aapply(step: _Step) -> Awaitable[StepResult]:
    strategy, messages, context = step
    return strategy.aapply(messages, context)


class Planner(Generic[M]):
    """Fits conversations for one model/budget; build it once and call ``plan`` (or ``aplan``) per conversation, or
    keep a ``session()`` per growing conversation (a chat loop).

    Its options are a ``FitConfig`` (``config``, documented there), or keyword arguments that build one
    (``FitConfig.of(config, **options)``); ``model`` and ``strategies`` may be given first, by position.
    ``planner.config`` is what it was built with. The chain of strategies is built once (``ctxwin.planner._chain``);
    a provider output runs ``place_media`` first. ``Plan.request`` is the whole request body for a provider output
    (the output's ``RequestForm``, ``ctxwin.messages._request_forms``).
    """

    @overload
    def __init__(
        self: Planner[OpenAIMessage], model: str | None = None, strategies: _Strategies = None, *,
        output: Literal["openai"], config: FitConfig | None = None, **options: Unpack[FitOptions],
    ) -> None: ...

    @overload
    def __init__(
        self: Planner[ResponsesItem], model: str | None = None, strategies: _Strategies = None, *,
        output: Literal["responses"], config: FitConfig | None = None, **options: Unpack[FitOptions],
    ) -> None: ...

    @overload
    def __init__(
        self: Planner[AnthropicMessage], model: str | None = None, strategies: _Strategies = None, *,
        output: Literal["anthropic"], config: FitConfig | None = None, **options: Unpack[FitOptions],
    ) -> None: ...

    @overload
    def __init__(
        self: Planner[Any], model: str | None = None, strategies: _Strategies = None, *,
        output: Output = "messages", config: FitConfig | None = None, **options: Unpack[FitOptions],
    ) -> None: ...

    def __init__(
        self,
        model: str | None = None,
        strategies: _Strategies = None,
        *,
        output: Output | None = None,
        config: FitConfig | None = None,
        **options: Any,
    ) -> None:
        given = {"model": model, "strategies": strategies, "output": output}
        self.config = config = FitConfig.of(config, **{k: v for k, v in given.items() if v is not None}, **options)
        spec = get_model(config.model) if config.model is not None else None
        counter = config.counter
        if counter is None and spec is None:
            raise InvalidInputError("Planner needs a model name or a counter (and then a context_window)")
        if isinstance(counter, str) or counter is None:
            self.counter: TokenCounter = get_counter(counter or spec.counter)  # type: ignore[union-attr]
        else:
            self.counter = require_counter(counter)
        window = config.context_window if config.context_window is not None else (
            spec.context_window if spec else None)
        if window is None:
            raise InvalidInputError("context_window is required when no model is given")
        reserve = config.reserve_output
        form = get_form(config.output)
        if reserve is None:
            reserve = _sendable(form, spec.name if spec else None,
                                default_reserve(spec.max_output_tokens if spec else 0, window))
        if reserve >= window:
            raise InvalidInputError(f"reserve_output ({reserve}) must be smaller than the context window ({window})")
        check_cache_control(bool(config.cache_control), config.output, spec.caching if spec else None, config.model)
        self.tools = openai_tools(config.tools)
        self.output: Output = config.output
        self.form = form  # before the tools are counted: in the form this output sends them
        self.request_model = config.request_model or config.model
        self.tool_choice = config.tool_choice
        self._variants: dict[str, Planner] = {}  # for_request's planners, by the JSON of what differs
        error = float(self.counter.max_relative_error or 0.0)
        margin = config.safety_margin if config.safety_margin is not None else math.ceil(error * (window - reserve))
        self.budget = Budget(window, reserve, self._tools_tokens(), margin)
        self.model = spec.name if spec else None
        self.caching = spec.caching if spec else None
        chain = build_chain(config.strategies, config.summarizer, config.keep_last)
        self.strategies = chain or default_chain(config.summarizer, config.keep_last)
        self._later_keeps = later_keeps(self.strategies)
        self.summarizes = any(step.summarizes for step in self.strategies)
        self.truncates = any(isinstance(step, TruncateToolOutput) for step in self.strategies)
        self._recall = RecallStep(config.recall_share, self.strategies)
        # Every figure is an estimate of the provider's count (the report says so).
        self.estimated = estimates(self.counter)
        self._model_window = spec.context_window if spec else None
        self._drops_turns = any(s.keeps in ("first", "last") for s in self.strategies)
        self.ledger_share = config.ledger_share

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
        """The planner of this one's configuration with other tools, output, tool_choice or reserve, built once
        (remembered by their JSON, in a cache every variant shares) on this one's counter."""
        key = json.dumps([tools, output, tool_choice, reserve], sort_keys=True, ensure_ascii=False, default=repr)
        other = self._variants.get(key)
        if other is None:
            if len(self._variants) >= _MAX_TOOL_VARIANTS:
                self._variants.clear()
            changes: dict[str, Any] = {"tools": tools, "output": output, "tool_choice": tool_choice,
                                       "counter": self.counter}
            if reserve != self.budget.reserve_output:
                changes["reserve_output"] = reserve
            other = Planner(config=self.config.replace(**changes))
            other._variants = self._variants
            self._variants[key] = other
        return other

    def for_request(self, request: Any, *, limit_floor: bool = False) -> Planner[M]:
        """This planner for ``request`` (a message list, or a whole request ``{"messages"|"input", "tools",
        "tool_choice", "max_tokens", ...}``): the request's tools and tool_choice replace the planner's, as they
        are what is sent, its reply limit is the reserve unless ``reserve_output`` was given (``limit_floor``: the
        reserve is at least it, for a proxy forwarding a client's body, whose reply must not be cut), and
        ``output="request"`` becomes the form the request is in (``registry.form_of``)."""
        output: Output = form_of(request).name if self.output == AS_GIVEN else self.output  # type: ignore[assignment]
        tools, choice, reserve = self.tools, self.tool_choice, self.budget.reserve_output
        limit = None
        if is_request(request):
            found = request_tools(request)
            tools = found if found is not None else tools
            if request.get("tool_choice") is not None:
                check_tool_choice(request["tool_choice"])
                choice = request["tool_choice"]
            limit = request_limit(request)
        if limit is not None and (self.config.reserve_output is None or limit_floor):
            if limit >= self.budget.context_window:
                raise InvalidInputError(f"the request's reply limit ({limit}: its max_tokens, max_completion_tokens or "
                                        "max_output_tokens) must be smaller than the context window "
                                        f"({self.budget.context_window})")
            reserve = limit if self.config.reserve_output is None else max(limit, self.config.reserve_output)
        elif self.config.reserve_output is None:  # the default reserve, for this request's form
            reserve = _sendable(get_form(output), self.model, reserve)
        if (tools, output, choice, reserve) == (self.tools, self.output, self.tool_choice, self.budget.reserve_output):
            return self
        return self._variant(tools, output, choice, reserve)

    def _tools_tokens(self) -> int:
        tools = self.form.tools_as_sent(self.tools)  # counted as the request sends them
        if not tools:
            return 0
        return int(self.counter.count_tools(tools))

    def _context(self, meter: Meter, budget: Budget) -> StepContext:
        return StepContext(budget, meter, pinned=meter.pinned, head=meter.head)

    def _check_pairs(self, run: _Run, meter: Meter) -> None:
        """No broken tool pair goes out: those of the fitted conversation are repaired (a step of its own) and
        reported as the input's or as a step's. Only the fitted conversation is scanned (the input only when it has
        some), so a plan far over budget does not read the history it drops. Stray media (moved out of a tool round a
        step dropped) is looked for only where a step changed the messages."""
        inputs = run.lists[0]
        broken = find_broken_pairs(run.current, strays=run.current is not inputs)
        if not broken:
            return
        known = broken if run.current is inputs else find_broken_pairs(inputs)
        inherited = {*known.orphan_ids(inputs), *known.unanswered_ids()}
        current = run.current
        from_input, from_steps = broken.split(current, inherited)
        if from_input and self.config.broken_tool_pairs == "keep":
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
        run.record(repair.name, repair.apply(run.current, self._context(meter, run.budget)))
        run.repaired_pairs = True

    def _finish(self, run: _Run, meter: Meter, forms: CallerForms | None, top: Any) -> Plan[M]:
        self._check_pairs(run, meter)
        messages, budget = run.current, run.budget
        after = self._request_tokens(messages, meter)
        run.figures.known(len(run.lists) - 1, after)
        fits = after <= budget.max_input_tokens
        steps = run.steps
        warnings = [f"{s.name}: {note}" for s in steps if s.skipped for note in s.notes] + run.warnings
        if not fits:
            warnings.append(no_room(after, budget, self._must_stay(messages, meter), model_window=self._model_window,
                                    drops_turns=self._drops_turns, estimated=self.estimated))
        if last_user_index(messages) is None:
            warnings.append("the conversation has no user message")
        warnings += self.form.refusals(messages, self.tools, self.budget.reserve_output, self.model)
        inputs = run.lists[0]
        keep_last = self.config.keep_last
        if keep_last and messages is not inputs:
            present = set(map(id, messages))
            lost = sum(id(m) not in present for m in inputs[-keep_last :])
            if lost:
                warnings.append(
                    f"keep_last={keep_last}: {lost} of the last {min(keep_last, len(inputs))} messages "
                    "could not be kept verbatim within the budget (shortened or dropped; see the steps)"
                )
        name = self.counter.name
        out, top_system = self.form.write(messages, forms)
        system = sum(meter.each(messages[: leading_system_count(messages)]))
        plan = Plan(
            out, fits, budget, after, steps, warnings, name, self.model, system,
            verbatim_turns(inputs, messages), figures=run.figures, system=top_system, output=self.output,
            tools=self.tools, tool_choice=self.tool_choice, request_model=self.request_model,
            cache_breakpoints=(-1,) if self.config.cache_control else None, recalled=run.recalled,
            estimated=self.estimated, ledger=run.ledger,
        )
        if top is not None:
            top.set_attributes(plan_attributes(plan, inputs, messages))
        if self.config.strict and not fits:
            raise BudgetExceeded(plan)
        return plan

    def _must_stay(self, messages: list[BaseMessage], meter: Meter) -> MustStay:
        """What no step may remove from ``messages``, in tokens, part by part."""
        system = leading_system_count(messages)
        kept = must_keep(messages, meter.pinned)
        last = last_user_index(messages)
        pinned = [i for i in kept if i >= system and i != last]
        return MustStay(
            system=sum(meter.each(messages[:system])),
            tools=self.budget.tools_tokens,
            pinned=sum(meter.each([messages[i] for i in pinned])),
            last_user=meter.count(messages[last]) if last is not None and last >= system else 0,
            total=self._request_tokens([messages[i] for i in kept], meter),
        )

    def _request_tokens(self, messages: list[BaseMessage], meter: Meter) -> int:
        """What a plan reports for ``messages``: the request as the counter counts it (the sum of the cached counts
        where that is the count exactly, ``exact_sum``; a chat template's sum is only an upper bound)."""
        if not messages:
            return meter.exact(messages)  # an empty request still has the reply priming (and the tools)
        if meter.overhead is not None and self.counter.exact_sum:
            return meter.total(messages) + self.budget.tools_tokens  # the same in every budget of this planner
        return meter.exact(messages)

    def _fits(self, messages: list[BaseMessage], meter: Meter, budget: Budget) -> bool:
        """Whether the request fits ``budget``, tokenizing from the newest message back only until it does not."""
        if messages and meter.overhead is not None:
            return within(meter, messages, budget.messages_budget)
        return meter.exact(messages) <= budget.max_input_tokens

    def plan(self, messages: Any, *, ledger: Ledger | None = None) -> Plan[M]:
        """Apply the strategies in order until the conversation fits; never mutates the input. LangChain messages
        in give LangChain messages in ``Plan.messages`` (``ctxwin.messages._forms``) unless ``output="openai"``.
        ``ledger``: a ``Ledger`` a user steered (entries added, pinned, edited, dropped): the plan reads the
        conversation into a copy of it (it is not changed), and its block always holds its pinned entries."""
        planner = self.for_request(messages)
        items, forms = planner.form.read(messages)
        items = list(items) if items is messages else items
        plan = planner.plan_run(items, planner._meter(), forms, turn=_one_off(items, ledger)).plan
        return planner._passing(plan, messages)

    async def aplan(self, messages: Any, *, ledger: Ledger | None = None) -> Plan[M]:
        """``plan`` for async code: the steps' ``aapply`` are awaited (async summarizers)."""
        planner = self.for_request(messages)
        items, forms = planner.form.read(messages)
        items = list(items) if items is messages else items
        plan = (await planner.aplan_run(items, planner._meter(), forms, turn=_one_off(items, ledger))).plan
        return planner._passing(plan, messages)

    def _passing(self, plan: Plan[M], request: Any) -> Plan[M]:
        """``plan`` with the options of ``request`` its form sends as given (``RequestForm.passes``: the providers'
        context editing and compaction options), for ``plan.request``; a request of another provider's form keeps
        none (their shapes differ between providers), which a warning says (the caller's own form has no request to
        keep them in: ``output="messages"``)."""
        if not is_request(request) or self.form is CALLER:
            return plan
        given = form_of(request)
        options = given.passed_options(request)
        if options is None:
            return plan
        if given is self.form:
            return dataclasses.replace(plan, request_options=options)
        left = ", ".join(options)
        return dataclasses.replace(plan, warnings=[*plan.warnings, (
            f"the request's {left} (a {given.name} request option) is left out of the {self.form.name} request: "
            "its form has none")])

    def _meter(self) -> Meter:
        """A plan's meter: the counter, with the tool definitions as the request sends them."""
        return Meter(self.counter, self.form.tools_as_sent(self.tools))

    def session(
        self, messages: Any = None, *, history: Any = None, **options: Unpack[FitOptions]
    ) -> PlanSession[M]:
        """A ``PlanSession`` for a conversation that grows turn by turn (a chat loop), starting with ``messages``;
        its options are this planner's ``config``, with the session options given here instead (``cache_stable``,
        ``low_water``, ``tool_output_cap``, ``keep_first``, ``head_fill``, ``cache_control``: ``FitConfig``).
        ``history``: a chat history (``ctxwin.history``: in memory, JSONL file, SQLite) the session starts from
        and appends to, so that it (and what recall finds in it) survives a restart."""
        if self.output == AS_GIVEN:
            raise InvalidInputError("output='request' is the form of a whole request given to plan(); a session is "
                                    "given "
                                    "turns: name the output ('openai', 'responses', 'anthropic' or 'messages')")
        session: PlanSession[M] = PlanSession(self, history=history, **options)
        if messages is not None:
            session.add_messages(messages)
        return session

    def plan_run(
        self, messages: list[BaseMessage], meter: Meter, forms: CallerForms | None = None, *,
        budget: Budget | None = None, turn: SessionTurn = ONE_OFF,
    ) -> Planned[M]:
        """``plan`` of ctxwin ``messages`` with ``meter`` (a session's): the plan, the ctxwin messages it sends and
        whether it repaired a tool pair (``Planned``).

        ``budget``: what the plan fits to and reports (default: the planner's; a session's corrected by the usage it
        observed). ``turn``: what a session asks of the run (``SessionTurn``: a target below the budget, its fixed
        head, the pins it knows, where recall searches)."""
        return drive(self._planning(messages, meter, forms, budget, turn), _apply)

    async def aplan_run(
        self, messages: list[BaseMessage], meter: Meter, forms: CallerForms | None = None, *,
        budget: Budget | None = None, turn: SessionTurn = ONE_OFF,
    ) -> Planned[M]:
        """``plan_run`` for async code (see ``aplan``)."""
        return await adrive(self._planning(messages, meter, forms, budget, turn), _aapply)

    def _planning(
        self, messages: list[BaseMessage], meter: Meter, forms: CallerForms | None, budget: Budget | None,
        turn: SessionTurn,
    ) -> Generator[_Step, StepResult, Planned[M]]:
        """``plan_run``, once for sync and async (``driving``): yields each step to apply, is sent its result."""
        budget = budget or self.budget
        with tracing.span("ctxwin.plan", start_attributes(self.counter, self.model, budget, messages)) as top:
            self._take_turn(messages, meter, turn)
            messages, told = self._ledger_input(messages, meter, turn, budget.aiming_at(turn.target))
            knows_pins = turn.pinned is not None or bool(turn.head)  # a session's run
            messages, source = self._recall.source(messages, meter, turn.recall, knows_pins, budget)
            if turn.recalled is None:
                run = self._start(messages, meter, budget)
            else:  # a session's recall between cuts, already placed: reported as the recall step
                run = self._start(without_newest_recall(messages), meter, budget)
                record_recall(run, messages, turn.recalled)
            run.ledger = report(told) if told is not None else None
            goal = budget.aiming_at(self._cut_target(run.current, meter, budget, turn.target))
            steps_goal, in_block = self._ledger_goal(run.current, meter, told, goal, budget)
            for strategy, step_context in self._steps(run, meter, steps_goal, in_block):
                with tracing.span(f"ctxwin.step {strategy.name}") as span:
                    run.record(strategy.name, (yield strategy, run.current, step_context), span)
            stale = run.ledger.stale_values if run.ledger is not None and run.ledger.superseded else ()
            self._recall.apply(run, source, steps_goal, budget, stale)  # (it may drop more: the block comes after it)
            self._carry_ledger(run, meter, told, budget, turn.head)
            plan = self._finish(run, meter, forms, top)
            return Planned(plan, run.current, run.repaired_pairs)

    @staticmethod
    def _cut_target(messages: list[BaseMessage], meter: Meter, budget: Budget, target: int | None) -> int | None:
        """A session cut's ``target``, raised to what must stay with the agent's working set (its newest tool rounds,
        ``working_set_start``), up to the budget: a cut sized for the bill does not cut what the agent works from,
        and cuts it only by what the budget lacks. A single round counts too: with a large head, a cut to the low
        water would otherwise drop the round the model must answer while the request could hold it."""
        start = None if target is None else working_set_start(messages)
        if target is None or start is None:
            return target
        keep = must_keep_with_partners(messages, meter.pinned) | set(range(start, len(messages)))
        need = meter.total([messages[i] for i in sorted(keep)]) + budget.tools_tokens
        return max(target, min(need, budget.max_input_tokens))

    @staticmethod
    def _take_turn(messages: list[BaseMessage], meter: Meter, turn: SessionTurn) -> None:
        """Give the meter what the session knows: the pins of ``messages``, then its head (a new head makes the
        meter find the pins again, the head's among them)."""
        if turn.pinned is not None:
            meter.follow(messages, turn.pinned)
        if len(turn.head) != len(meter.head) or any(map(is_not, turn.head, meter.head)):
            meter.head = turn.head

    def is_summary(self, message: BaseMessage) -> bool:
        """Whether ``message`` is a summary this planner's chain wrote (it changes at every cut that summarizes)."""
        return is_summary(message)

    def cap_tool_outputs(self, messages: Sequence[BaseMessage], max_tokens: int, meter: Meter) -> list[BaseMessage]:
        """``messages`` with each unpinned tool output over ``max_tokens`` shortened to about that (head, marker,
        tail, as the chain's truncation shortens them); the others are the same objects."""
        return cap_tool_outputs(messages, max_tokens, meter)

    def _ledger_input(
        self, messages: list[BaseMessage], meter: Meter, turn: SessionTurn, goal: Budget
    ) -> tuple[list[BaseMessage], Ledger | None]:
        """The messages to plan (without an earlier ledger block: a new one replaces it) and what the conversation
        told; None when the ledger is off, the request keeps its block (a session between cuts), or a one-off plan
        leaves nothing out (it is then not read)."""
        if not self.ledger_share or turn.ledger is False:
            return messages, None
        if isinstance(turn.ledger, Ledger):
            return without_blocks(messages), turn.ledger
        if self._fits(messages, meter, goal):
            return messages, None
        return without_blocks(messages), Ledger().read(messages)

    def _ledger_goal(
        self, messages: list[BaseMessage], meter: Meter, told: Ledger | None, goal: Budget, budget: Budget
    ) -> tuple[Budget, Ledger | None]:
        """``goal`` less the room the ledger's block will take (the entries that the newest messages filling half
        the room beside it do not say, a summary may take the rest, within ``ledger_share`` of the ``budget``: a
        session's cut aims lower, and what it was told must not get less room for that), and the ledger of what the
        block will hold (what a summary need not say again)."""
        if told is None or not len(told) or self._fits(messages, meter, goal):
            return goal, None
        share = math.floor(self.ledger_share * budget.max_input_tokens)
        kept = messages[suffix_start(meter, messages, (goal.messages_budget - share) / 2):]
        entries = carried(told, kept)
        if not entries:
            return goal, None
        # never the room of what must stay: the last turn (and the system prompt, pins, their tool partners)
        must = sorted(must_keep_with_partners(messages, meter.pinned) | last_turn(messages))
        room = goal.max_input_tokens - self._request_tokens([messages[i] for i in must], meter)
        text, left = told.render(entries, min(share, room), meter.text)
        tokens = min(share, room, meter.count(ledger_message(text, ())))
        if tokens <= 0 or not text:
            return goal, None
        gone = set(map(id, left))
        return goal.aiming_at(goal.max_input_tokens - tokens), told.holding(e for e in entries if id(e) not in gone)

    def _carry_ledger(
        self, run: _Run, meter: Meter, told: Ledger | None, budget: Budget, head: Sequence[BaseMessage]
    ) -> None:
        """The block of what the request no longer says, placed after the system prompt and the head, within
        ``ledger_share`` of ``budget`` and the room left under it (a session's cut aims below it: a block
        larger than planned brings the next cut closer rather than losing what it carries); reported as the
        ``ledger`` step."""
        if told is None:
            return
        entries = carried(told, run.current)
        room = min(math.floor(self.ledger_share * budget.max_input_tokens),
                   budget.max_input_tokens - self._request_tokens(run.current, meter))
        if not entries:
            return
        placed = placed_block(told, entries, run.current, head, room, meter.count)
        if placed is None or not self._fits(placed[0], meter, budget):
            run.ledger = report(told, (), entries)
            note = f"no room for the ledger: {plural(len(entries), 'entry', 'entries')} left to recall"
            run.record(LEDGER_STEP, StepResult(run.current, [note]))  # (the report says it; no warning: nothing broke)
            return
        messages, kept, left, tokens = placed
        run.ledger = report(told, kept, left, tokens)
        kinds = ", ".join(f"{plural(n, kind)}" for kind in KINDS if (n := sum(e.kind == kind for e in kept)))
        notes = [f"carried {plural(len(kept), 'entry', 'entries')} ({kinds}) in {plural(tokens, 'token')}"]
        if left:
            notes.append(f"over its share: {plural(len(left), 'entry', 'entries')} left to recall ("
                         + "; ".join(f"{e.kind} from {e.source}" for e in left[:NAMED_LEFT])
                         + ("; …" if len(left) > NAMED_LEFT else "") + ")")
        with tracing.span(f"ctxwin.step {LEDGER_STEP}") as span:
            run.record(LEDGER_STEP, StepResult(messages, notes), span)

    def _steps(
        self, run: _Run, meter: Meter, goal: Budget, told: Ledger | None
    ) -> Iterator[tuple[BaseStrategy, StepContext]]:
        """The strategies still to apply, each with its context, stopping as soon as the conversation fits
        ``goal``."""
        context = dataclasses.replace(self._context(meter, goal), ledger=told)
        for strategy, keeps in zip(self.strategies, self._later_keeps, strict=True):
            if self._fits(run.current, meter, goal):
                return
            yield strategy, dataclasses.replace(context, later_keeps=keeps)

    def _start(self, messages: list[BaseMessage], meter: Meter, budget: Budget) -> _Run:
        """The plan's run (fitting ``budget``), and for a provider output its first step: media moved to where that
        API takes it (``place_media``, reported when it changed anything)."""
        lists = [messages]
        figures = Figures(lambda listed: self._request_tokens(listed, meter), lists)
        run = _Run(budget, lists, Labels(messages), figures, meter, self)
        if self.form.media is not None:
            placing = PlaceMedia(self.form)
            result = placing.apply(messages, self._context(meter, budget))
            if result.messages is not messages:
                run.record(placing.name, result)
        return run

def _one_off(messages: list[BaseMessage], ledger: Ledger | None) -> SessionTurn:
    """A one-off plan's turn: the planner's own ledger, or a copy of ``ledger`` that has read ``messages``."""
    if ledger is None:
        return ONE_OFF
    if not isinstance(ledger, Ledger):
        raise InvalidTypeError(f"ledger must be a ctxwin.strategies.Ledger, got {type(ledger).__name__}")
    return SessionTurn(ledger=ledger.copy().read(messages))


@dataclass
class _Run:
    """One plan in progress: the budget it fits, the message list after each step so far (``lists``, shared with
    ``figures``), and what the steps reported; counted with its ``meter`` as its ``planner`` counts (what recall asks
    of it: ``recall._step.PlanRun``)."""

    budget: Budget
    lists: list[list[BaseMessage]]
    labels: Labels
    figures: Figures
    meter: Meter
    planner: Planner[Any]
    steps: list[StepReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what the steps said the caller must know
    results: list[StepResult] = field(default_factory=list)
    recalled: Recalled | None = None
    repaired_pairs: bool = False
    ledger: LedgerReport | None = None

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

    def fits(self, messages: list[BaseMessage], budget: Budget) -> bool:
        return self.planner._fits(messages, self.meter, budget)

    def tokens(self, messages: list[BaseMessage]) -> int:
        return self.planner._request_tokens(messages, self.meter)

    def context(self, budget: Budget) -> StepContext:
        return self.planner._context(self.meter, budget)


@overload
def fit(
    messages: Any, model: str | None = DEFAULT_MODEL, *, output: Literal["openai"], strategies: _Strategies = None,
    config: FitConfig | None = None, ledger: Ledger | None = None, **options: Unpack[FitOptions],
) -> Plan[OpenAIMessage]: ...


@overload
def fit(
    messages: Any, model: str | None = DEFAULT_MODEL, *, output: Literal["responses"], strategies: _Strategies = None,
    config: FitConfig | None = None, ledger: Ledger | None = None, **options: Unpack[FitOptions],
) -> Plan[ResponsesItem]: ...


@overload
def fit(
    messages: Any, model: str | None = DEFAULT_MODEL, *, output: Literal["anthropic"], strategies: _Strategies = None,
    config: FitConfig | None = None, ledger: Ledger | None = None, **options: Unpack[FitOptions],
) -> Plan[AnthropicMessage]: ...


@overload
def fit(
    messages: Any, model: str | None = DEFAULT_MODEL, *, output: Output = "messages", strategies: _Strategies = None,
    config: FitConfig | None = None, ledger: Ledger | None = None, **options: Unpack[FitOptions],
) -> Plan[Any]: ...


def fit(
    messages: Any, model: str | None = DEFAULT_MODEL, *, output: Output | None = None, strategies: _Strategies = None,
    config: FitConfig | None = None, ledger: Ledger | None = None, **options: Any,
) -> Plan:
    """Fit ``messages`` (any shape ``convert_to_messages`` accepts) to ``model``; the options are ``FitConfig``'s,
    see ``Planner``. A ``config`` is taken whole: its model (maybe none) unless ``model`` names another.
    ``ledger``: a steered ``Ledger`` (see ``Planner.plan``)."""
    if config is not None and model == DEFAULT_MODEL:
        model = config.model
    if output is not None:
        options["output"] = output
    try:
        planner: Planner[Any] = Planner(model, strategies, config=config, **options)
    except OptionError as exc:
        if exc.option != "context_window" or model != DEFAULT_MODEL or options.get("counter") is None:
            raise
        raise OptionError(exc.option, f"{exc} (fit's default model; model=None fits for the counter alone)") from None
    return planner.plan(messages, ledger=ledger)
