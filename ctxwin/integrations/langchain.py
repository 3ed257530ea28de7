"""LangChain v1 and LangGraph agents whose every model call fits the model's budget: ``ContextWindowMiddleware``,
``pre_model_hook`` and ``ChatModelSummarizer``. docs/integrations.md is the guide.
This module imports LangChain (the ``langchain`` extra); ``import ctxwin`` never does.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from typing_extensions import Unpack

from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin._install import install_hint

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
    from langchain_core import messages as langchain_messages
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage, SystemMessage
    from langchain_core.messages import convert_to_messages as lc_convert_to_messages
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tools import BaseTool, StructuredTool
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langgraph.config import get_config
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
    from langgraph.prebuilt import ToolRuntime
except ImportError as exc:  # pragma: no cover - the dev environment has LangChain
    raise ImportError(
        f"ctxwin.integrations.langchain needs LangChain v1: {install_hint('langchain')} (langchain>=1)"
    ) from exc

from ctxwin.counters import TokenCounter
from ctxwin.counters._base import as_token_counter
from ctxwin.integrations._conversations import (
    ConversationFitter,
    Fitted,
    TurnDoesNotFit,
    recall,
    require_sessions,
)
from ctxwin.messages import BaseMessage, convert_to_messages, get_buffer_string
from ctxwin.planner import BudgetExceeded, FitConfig, Planner
from ctxwin.planner._config import FitOptions, known_options
from ctxwin.planner._session import PlanSession
from ctxwin.recall._tool import DESCRIPTION, RECALL_TOOL_NAME, RecallTool
from ctxwin.strategies import Ledger, Strategy
from ctxwin.strategies._ledger import render_block

__all__ = [
    "DEFAULT_SUMMARY_PROMPT",
    "LEDGER_SUMMARY_PROMPT",
    "ChatModelSummarizer",
    "ContextWindowMiddleware",
    "TurnDoesNotFit",
    "pre_model_hook",
    "recall_tool",
]

# Identifiers verbatim: a summary that writes "the ticket" for "INC-48213" loses what the user will ask about, and
# the summarize step names the facts a summary dropped (docs/bench.md, "Retention").
DEFAULT_SUMMARY_PROMPT = (
    "Summarise the conversation below for the assistant who continues it. Keep the user's goals, requests and "
    "constraints, decisions made, errors met, facts learned from tool results and open questions; drop "
    "pleasantries. Copy every identifier exactly as written, character for character: ticket, order and account "
    "numbers, ids, names, email addresses, dates and times, amounts and quantities with their units, file paths, "
    "URLs, hosts, versions, commit hashes and code symbols; never paraphrase, round or translate them. If it opens "
    "with an earlier summary, keep what still matters of it. Answer with the summary only."
)


# What a summarizer beside a ledger is told: the ledger travels in every request, so the summary keeps its sections
# for what the ledger does not hold yet, and says nothing twice.
LEDGER_SUMMARY_PROMPT = (
    "The ledger below is sent beside your summary in every request, entry for entry: do not repeat its entries. "
    "Write what else the assistant must know under the same sections, in this order, each only when it has "
    "something new: Rules, Limits, Facts, Goal and next steps, Preferences, then Other context (decisions, "
    "errors, open questions). A statement the conversation corrected is stated with its newest value only."
)


class ChatModelSummarizer:
    """A LangChain chat model as the planner's summarizer: it is given ``prompt`` and a transcript of the messages
    to summarise, and its answer's text is the summary (the summarize step cuts it to the room it has). When the
    plan carries a ledger (``ledger_share``), the model is given it too, with ``LEDGER_SUMMARY_PROMPT``: the
    summary keeps the ledger's typed sections and does not repeat them.

    The last ``remember`` summaries are kept by transcript: an agent's middleware fits every model call from the
    whole stored history, and the calls of one turn (its tool rounds) summarise the same span, so the model is asked
    once per span, not once per call.

    Called inside a running event loop (``Planner.aplan``, an agent's ``ainvoke``) it returns the awaitable of the
    model's ``ainvoke``; elsewhere it calls ``invoke``. A ``plan()`` made from synchronous code inside a running loop
    therefore gets an awaitable it cannot run: the summarize step is skipped, saying so (use ``aplan`` there).
    """

    def __init__(self, model: BaseChatModel, prompt: str = DEFAULT_SUMMARY_PROMPT, *, remember: int = 16) -> None:
        if not isinstance(model, BaseChatModel):
            raise InvalidTypeError(f"ChatModelSummarizer model must be a LangChain chat model, got "
                                   f"{type(model).__name__}")
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidInputError("ChatModelSummarizer prompt must be a non-empty string")
        if isinstance(remember, bool) or not isinstance(remember, int) or remember < 0:
            raise InvalidInputError(f"ChatModelSummarizer remember must be a non-negative int, got {remember!r}")
        self.model = model
        self.prompt = prompt
        self.remember = remember
        self._summaries: OrderedDict[str, str] = OrderedDict()  # prompt and transcript -> summary, oldest first
        self._lock = threading.Lock()  # one agent serves many conversations at once

    def request(self, transcript: str, ledger: Ledger | None = None) -> list[AnyMessage]:
        """What the model is asked: the prompt (with ``ledger``: ``LEDGER_SUMMARY_PROMPT`` and the ledger's block),
        then the transcript (``get_buffer_string``: roles, tool calls, results; an earlier summary first)."""
        prompt = self.prompt
        if ledger is not None and len(ledger):
            prompt = f"{prompt}\n\n{LEDGER_SUMMARY_PROMPT}\n\n{render_block(ledger.entries)}"
        return [SystemMessage(prompt), HumanMessage(transcript)]

    def __call__(self, messages: Sequence[Any], *, ledger: Ledger | None = None) -> str | Awaitable[str]:
        """The summary of ``messages`` (the planner's ctxwin messages, or anything ``convert_to_messages`` reads);
        ``ledger``: what the conversation told, carried beside the summary (the summarize step passes it)."""
        transcript = get_buffer_string(convert_to_messages(messages))
        request = self.request(transcript, ledger)
        key = request[0].text + "\x00" + transcript
        with self._lock:
            known = self._summaries.get(key)
            if known is not None:
                self._summaries.move_to_end(key)
                return known
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self._keep(key, self.model.invoke(request).text)
        return self._asummarize(key, request)

    async def _asummarize(self, key: str, request: list[AnyMessage]) -> str:
        return self._keep(key, (await self.model.ainvoke(request)).text)

    def _keep(self, key: str, summary: str) -> str:
        if self.remember and summary.strip():
            with self._lock:
                self._summaries[key] = summary
                while len(self._summaries) > self.remember:
                    self._summaries.popitem(last=False)
        return summary


def _summarizer(summarizer: Any) -> Any:
    """A chat model becomes a ``ChatModelSummarizer``; anything else is the planner's to check."""
    return ChatModelSummarizer(summarizer) if isinstance(summarizer, BaseChatModel) else summarizer


def _openai_tools(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """Tool definitions as the model is sent them (what a chat model's ``bind_tools`` converts them to)."""
    return [convert_to_openai_tool(tool) for tool in tools]


def _thread_id() -> Any:
    """The ``thread_id`` of the LangGraph run this is called in, or None (no run, or no thread id)."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # called outside a runnable context
        return None
    return configurable.get("thread_id")


class _RequestFitter:
    """The configuration a middleware or hook was given, and fitting one request with it (in the conversation's
    cache-stable session: ``ctxwin.integrations._conversations``)."""

    def __init__(
        self, owner: str, model: str | TokenCounter, config: FitConfig | None, options: dict[str, Any]
    ) -> None:
        if not isinstance(model, str) and as_token_counter(model) is None:
            raise InvalidTypeError(f"{owner}: model must be a ctxwin model name or a TokenCounter, got "
                                   f"{type(model).__name__}")
        if "output" in options:
            raise InvalidTypeError(f"{owner}: output is the agent's (LangChain messages)")
        known_options(options, f"{owner}: ")
        if not isinstance(model, str) and options.get("context_window", (config or FitConfig()).context_window) is None:
            raise InvalidInputError(f"{owner}: with a counter for model, context_window is required (no model to read)")
        if options.get("strategies") is None:
            del options["strategies"]  # the config's
        if "summarizer" in options:
            options["summarizer"] = _summarizer(options["summarizer"])
        chosen = {"model": model} if isinstance(model, str) else {"model": None, "counter": model}
        try:
            self.config = FitConfig.of(config, **chosen, **options)
        except ValueError as exc:
            raise InvalidInputError(f"{owner}: {exc}") from None
        self.conversations = ConversationFitter(owner, self.config)

    def fit(
        self, system: SystemMessage | None, messages: Sequence[Any], tools: Sequence[Any]
    ) -> tuple[SystemMessage | None, list[AnyMessage]]:
        """The fitted system message and history (``BudgetExceeded`` or ``TurnDoesNotFit`` when they cannot fit)."""
        items = [*([system] if system is not None else []), *lc_convert_to_messages(messages)]
        return _outcome(self.conversations.fit(items, _read, key=_thread_id(), tools=_openai_tools(tools)), system)

    async def afit(
        self, system: SystemMessage | None, messages: Sequence[Any], tools: Sequence[Any]
    ) -> tuple[SystemMessage | None, list[AnyMessage]]:
        items = [*([system] if system is not None else []), *lc_convert_to_messages(messages)]
        fitted = await self.conversations.afit(items, _read, key=_thread_id(), tools=_openai_tools(tools))
        return _outcome(fitted, system)


def _read(items: Sequence[Any]) -> list[tuple[Any, BaseMessage]]:
    return list(zip(items, convert_to_messages(items), strict=True))


def _outcome(fitted: Fitted, system: SystemMessage | None) -> tuple[SystemMessage | None, list[AnyMessage]]:
    """The fitted messages as LangChain messages (the caller's own for those kept unchanged), the system message
    apart."""
    out = fitted.given_back(lambda m: getattr(langchain_messages, type(m).__name__)(**m.model_dump()))
    head = out[0] if system is not None and out and isinstance(out[0], SystemMessage) else None
    return head, out[1:] if head is not None else out


def recall_tool(source: PlanSession[Any] | RecallTool) -> BaseTool:
    """The recall tool (``ctxwin.recall._tool``) as a LangChain tool: a search over what one session's requests left
    out. ``source``: a ``PlanSession`` or its ``recall_tool``. (``ContextWindowMiddleware(recall_tool=True)`` and
    ``pre_model_hook(recall_tool=True)`` make theirs over the conversation each call is in.)"""
    tool = source.recall_tool if isinstance(source, PlanSession) else source

    def recall_conversation(query: str = "", handle: str = "") -> str:
        try:
            return tool.run({"query": query, "handle": handle})
        except ValueError as error:
            return str(error)

    return StructuredTool.from_function(recall_conversation, name=RECALL_TOOL_NAME, description=DESCRIPTION)


def _conversation_recall_tool(fitter: _RequestFitter, owner: str) -> BaseTool:
    """The recall tool over the conversation of the run it is called in, told by what LangGraph hands the tool
    (``ToolRuntime``): the run's thread id, else the graph state's messages."""
    conversations = fitter.conversations
    require_sessions(owner, conversations.config, "recall_tool=True")

    def recall_conversation(runtime: ToolRuntime, query: str = "", handle: str = "") -> str:
        thread = (runtime.config.get("configurable") or {}).get("thread_id")
        history = _state_history(runtime.state)
        return recall(lambda: conversations.find(key=thread, history=history), query, handle,
                      f"{owner}: the run has no LangGraph thread_id, and its state's messages continue no "
                      "conversation fitted here")

    return StructuredTool.from_function(recall_conversation, name=RECALL_TOOL_NAME, description=DESCRIPTION)


def _state_history(state: Any) -> list[BaseMessage] | None:
    """The graph state's messages as ctxwin messages (None: a state without them)."""
    try:
        return convert_to_messages(_messages(state))
    except ValueError:
        return None


class ContextWindowMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Fit each model request of a LangChain v1 agent to the model's budget with ctxwin's planner.

    ``model``: a ctxwin model name (its counter and context window) or a ``TokenCounter`` (then ``context_window`` is
    required). The planner's options are a ``config`` (``FitConfig``, which documents them) or ``FitConfig``'s keyword
    options (``context_window``, ``reserve_output``, ``strategies``, ``summarizer``, which may also be a LangChain chat
    model, ``keep_last``, ``safety_margin``, the sessions' ``cache_stable``, ``tool_output_cap``, ``keep_first``,
    ``head_fill``...); the tools are each request's. When the part that must stay (the current turn included) cannot
    fit, the model is not called: the run ends with an AI message saying so, or with ``strict=True`` ``BudgetExceeded``
    (``TurnDoesNotFit`` for the current turn) is raised. With ``cache_stable`` (the default) each conversation keeps one
    cache-stable session (docs/integrations.md says how). ``recall_tool=True`` adds the recall tool to the agent's tools
    (a search over what the session of the conversation it is called in left out: the run's thread id, else the state's
    messages, say which).
    """

    def __init__(
        self,
        model: str | TokenCounter = "gpt-4o",
        *,
        strategies: Sequence[Strategy | str] | str | None = None,
        config: FitConfig | None = None,
        recall_tool: bool = False,
        **options: Unpack[FitOptions],
    ) -> None:
        super().__init__()
        if "tools" in options:
            raise InvalidTypeError("ContextWindowMiddleware: tools are each request's (the agent's), not an option")
        self.fitter = _RequestFitter("ContextWindowMiddleware", model, config, {**options, "strategies": strategies})
        self.strict = self.fitter.config.strict
        if recall_tool:
            self.tools = [_conversation_recall_tool(self.fitter, "ContextWindowMiddleware")]

    @property
    def planner(self) -> Planner:
        """The planner every request is fitted with (before its tools are counted)."""
        return self.fitter.conversations.planner

    def _ended(self, error: BudgetExceeded) -> AIMessage:
        """The AI message that ends the run when the request cannot fit (``strict``: the error is raised)."""
        if self.strict:
            raise error
        return AIMessage(
            f"The conversation no longer fits the model's context: {error}",
            response_metadata={"ctxwin": {"tokens": error.tokens, "limit": error.limit}},
        )

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage:
        """The fitted request to ``handler``; or, when it cannot fit, the AI message that ends the run."""
        try:
            system, history = self.fitter.fit(request.system_message, request.messages, request.tools)
        except BudgetExceeded as error:
            return self._ended(error)
        return handler(request.override(system_message=system, messages=history))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage:
        """``wrap_model_call`` for ``ainvoke``: an async summarizer is awaited."""
        try:
            system, history = await self.fitter.afit(request.system_message, request.messages, request.tools)
        except BudgetExceeded as error:
            return self._ended(error)
        return await handler(request.override(system_message=system, messages=history))


def pre_model_hook(
    model: str | TokenCounter = "gpt-4o",
    *,
    prompt: str | SystemMessage | None = None,
    rewrite_state: bool = False,
    strategies: Sequence[Strategy | str] | str | None = None,
    config: FitConfig | None = None,
    recall_tool: bool = False,
    **options: Unpack[FitOptions],
) -> RunnableLambda[Any, dict[str, Any]]:
    """A ``pre_model_hook`` for ``langgraph.prebuilt.create_react_agent`` fitting each model call to the budget.

    The hook cannot see what the agent adds to its messages, so give it the agent's ``tools`` and ``prompt`` (a string
    or a ``SystemMessage``): they are counted against the budget. ``model``, ``config`` and the keyword options
    (``FitConfig``'s) are as for ``ContextWindowMiddleware``. The hook returns ``{"llm_input_messages": fitted}``,
    leaving the stored history alone; ``rewrite_state=True`` also replaces the stored history by the fitted one (each
    call then planned on its own, as ``cache_stable=False`` does). When the part that must stay (the current turn
    included) cannot fit it raises ``BudgetExceeded`` or ``TurnDoesNotFit`` (which the graph's ``invoke`` raises): a
    hook cannot skip the model call, and an empty ``llm_input_messages`` would make the agent send the whole history.
    ``recall_tool=True``: the hook's ``recall_tool`` attribute is the recall tool over the conversation's session,
    to give ``create_react_agent`` with the agent's tools (a hook cannot add tools itself; it counts it in the budget).
    """
    if prompt is not None and not isinstance(prompt, (str, SystemMessage)):
        raise InvalidTypeError(
            f"pre_model_hook prompt must be a string or a SystemMessage (what is counted), got {type(prompt).__name__}"
        )
    if rewrite_state and recall_tool:
        raise InvalidInputError("pre_model_hook: rewrite_state=True forgets what each call drops, so recall_tool=True "
                                "would "
                                "have nothing to search")
    # A rewritten state never continues the request a session made of it: each call is planned on its own.
    alone = {"cache_stable": False} if rewrite_state else {}
    fitter = _RequestFitter("pre_model_hook", model, config, {**options, "strategies": strategies, **alone})
    system = SystemMessage(prompt) if isinstance(prompt, str) else prompt
    agent_tools: list[Any] = list(fitter.config.tools or ())
    tool = _conversation_recall_tool(fitter, "pre_model_hook") if recall_tool else None
    if tool is not None:
        agent_tools.append(tool)

    def update(history: list[AnyMessage]) -> dict[str, Any]:
        if not rewrite_state:
            return {"llm_input_messages": history}
        return {"llm_input_messages": history, "messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *history]}

    def hook(state: Any) -> dict[str, Any]:
        return update(fitter.fit(system, _messages(state), agent_tools)[1])

    async def ahook(state: Any) -> dict[str, Any]:
        return update((await fitter.afit(system, _messages(state), agent_tools))[1])

    runnable = RunnableLambda(hook, afunc=ahook, name="ctxwin_pre_model_hook")
    if tool is not None:
        runnable.recall_tool = tool  # type: ignore[attr-defined]
    return runnable


def _messages(state: Any) -> Sequence[Any]:
    """The messages of a graph state: a dict's ``"messages"`` or a pydantic state's ``messages``."""
    messages = state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", None)
    if messages is None:
        raise InvalidInputError(f"pre_model_hook: the graph state has no 'messages' (got {type(state).__name__})")
    return list(messages)
