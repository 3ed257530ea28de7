"""LlamaIndex agents and chat engines whose every LLM call fits the model's budget: ``ContextWindowLLM`` wraps the LLM,
not the memory, which never sees a run's tool rounds. docs/stacks/llama-index.md is the guide.
This module imports LlamaIndex (the ``llama-index`` extra); ``import ctxwin`` never does.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Generator, Sequence
from typing import Any

from ctxwin._install import install_hint

try:
    import llama_index.core
    from llama_index.core.base.llms.types import (
        ChatMessage,
        ChatResponse,
        CompletionResponse,
        LLMMetadata,
        TextBlock,
        ThinkingBlock,
        ToolCallBlock,
    )
    from llama_index.core.bridge.pydantic import Field, PrivateAttr
    from llama_index.core.llms.function_calling import FunctionCallingLLM
    from llama_index.core.tools import BaseTool, ToolSelection
    from llama_index.core.utils import set_global_tokenizer
    from llama_index.core.workflow import Context, WorkflowRuntimeError
except ImportError as exc:  # pragma: no cover - the dev environment has LlamaIndex
    raise ImportError(f"ctxwin.integrations.llama_index needs LlamaIndex: {install_hint('llama-index')}") from exc

from ctxwin.counters import TokenCounter, get_counter
from ctxwin.integrations._conversations import ConversationFitter, Fitted, recall, require_sessions
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner._config import FitConfig
from ctxwin.recall._tool import DESCRIPTION

__all__ = ["ContextWindowLLM", "to_messages", "tokenizer"]


def tokenizer(model: str | TokenCounter = "gpt-4o") -> Callable[[str], list[int]]:
    """ctxwin's counter for ``model`` (a model name, a counter spec or a counter) as a LlamaIndex tokenizer:
    ``Settings.tokenizer = tokenizer("gpt-4o")``. LlamaIndex reads only the length of what a tokenizer returns, so
    this returns a list as long as the text's tokens (its items are not token ids); nothing is downloaded."""
    count = (get_counter(model) if isinstance(model, str) else model).count_text

    def tokens(text: str) -> list[int]:
        return [0] * count(text)

    return tokens


class ContextWindowLLM(FunctionCallingLLM):
    """A LlamaIndex LLM that fits every chat call to the model's budget before the wrapped ``llm`` sees it.

    ``model`` and the options are ``ctxwin.FitConfig``'s (``context_window``, ``reserve_output``, ``strategies``,
    ``summarizer``, ``keep_last``, the sessions' options...), or a whole ``config``. When the part that must stay
    (system prompt, tools, the current turn) cannot fit, the call raises ``BudgetExceeded`` (or
    ``TurnDoesNotFit``) and the wrapped LLM is not called.
    """

    llm: Any = Field(description="The wrapped LlamaIndex LLM (a FunctionCallingLLM for agents).")
    _fitter: ConversationFitter = PrivateAttr()

    def __init__(
        self, llm: Any, model: str | None = "gpt-4o", *, config: FitConfig | None = None, **options: Any
    ) -> None:
        super().__init__(llm=llm)
        if model is not None:
            options.setdefault("model", model)
        self._fitter = ConversationFitter("ContextWindowLLM", FitConfig.of(config, **options))
        if llama_index.core.global_tokenizer is None:  # else tiktoken's, downloaded when first used
            set_global_tokenizer(tokenizer(self._fitter.planner.counter))

    @classmethod
    def class_name(cls) -> str:
        return "ContextWindowLLM"

    @property
    def fitter(self) -> ConversationFitter:
        return self._fitter

    @property
    def config(self) -> FitConfig:
        return self._fitter.config

    def recall_tool(self) -> Callable[..., str]:
        """The recall tool as a function for ``FunctionTool.from_defaults`` (an agent's tools): it searches what
        this wrapper's calls left out of the conversation of the workflow run it is called in, told by the
        ``Context`` the agent hands it, and answers with an error rather than search another conversation."""
        fitter = self._fitter
        require_sessions(fitter.owner, fitter.config, "recall_tool()")

        def recall_conversation(ctx: Context, query: str = "", handle: str = "") -> str:
            return recall(lambda: fitter.find(run=ctx.store), query, handle,
                          "no call of this workflow run went through this ContextWindowLLM")

        recall_conversation.__doc__ = DESCRIPTION
        # LlamaIndex injects the run's Context into the parameter annotated with the class itself (not its name).
        recall_conversation.__annotations__ = {"ctx": Context, "query": str, "handle": str, "return": str}
        return recall_conversation

    @property
    def metadata(self) -> LLMMetadata:
        return self.llm.metadata  # type: ignore[no-any-return]

    def _prepare_chat_with_tools(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        return self.llm._prepare_chat_with_tools(  # type: ignore[no-any-return]
            tools, user_msg=user_msg, chat_history=chat_history, verbose=verbose,
            allow_parallel_tool_calls=allow_parallel_tool_calls, tool_required=tool_required, **kwargs,
        )

    def get_tool_calls_from_response(
        self, response: ChatResponse, error_on_no_tool_call: bool = True, **kwargs: Any
    ) -> list[ToolSelection]:
        return self.llm.get_tool_calls_from_response(  # type: ignore[no-any-return]
            response, error_on_no_tool_call=error_on_no_tool_call, **kwargs
        )

    def _fitted(self, fitted: Fitted) -> list[ChatMessage]:
        """The fitted messages to send; the workflow run this call is made in is noted as in its conversation."""
        run = _workflow_run()
        if run is not None:
            self._fitter.bind(run, fitted)
        return fitted.given_back(_new)

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        fitted = self._fitter.fit(list(messages), _read, tools=_tools(kwargs))
        return self.llm.chat(self._fitted(fitted), **kwargs)  # type: ignore[no-any-return]

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        fitted = await self._fitter.afit(list(messages), _read, tools=_tools(kwargs))
        return await self.llm.achat(self._fitted(fitted), **kwargs)  # type: ignore[no-any-return]

    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Generator[ChatResponse, None, None]:
        fitted = self._fitter.fit(list(messages), _read, tools=_tools(kwargs))
        return self.llm.stream_chat(self._fitted(fitted), **kwargs)  # type: ignore[no-any-return]

    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> AsyncGenerator[ChatResponse, None]:
        fitted = await self._fitter.afit(list(messages), _read, tools=_tools(kwargs))
        return await self.llm.astream_chat(self._fitted(fitted), **kwargs)  # type: ignore[no-any-return]

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return self.llm.complete(prompt, formatted=formatted, **kwargs)  # type: ignore[no-any-return]

    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return await self.llm.acomplete(prompt, formatted=formatted, **kwargs)  # type: ignore[no-any-return]

    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> Generator[CompletionResponse, None, None]:
        return self.llm.stream_complete(prompt, formatted=formatted, **kwargs)  # type: ignore[no-any-return]

    async def astream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> AsyncGenerator[CompletionResponse, None]:
        return await self.llm.astream_complete(prompt, formatted=formatted, **kwargs)  # type: ignore[no-any-return]


def _workflow_run() -> Any:
    """The state of the workflow run whose step makes this call (what its tools' ``Context`` holds), or None."""
    try:
        return Context.get_step_context().store
    except WorkflowRuntimeError:  # not called from a workflow step
        return None


def _tools(kwargs: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The call's tools as OpenAI function tools: LlamaIndex tools by their metadata, provider dicts as given."""
    tools = kwargs.get("tools")
    if not tools:
        return None
    return [tool.metadata.to_openai_tool() if isinstance(tool, BaseTool) else tool for tool in tools]


def _text(message: ChatMessage) -> str:
    return "\n".join(block.text for block in message.blocks if isinstance(block, TextBlock))


def _calls(message: ChatMessage) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    for block in message.blocks:
        if isinstance(block, ToolCallBlock):
            args = block.tool_kwargs
            calls.append({"name": block.tool_name, "args": json.loads(args or "{}") if isinstance(args, str) else args,
                          "id": block.tool_call_id or "", "type": "tool_call"})
    for raw in message.additional_kwargs.get("tool_calls") or []:  # OpenAI-style, as OpenAI's LLM keeps them
        function = raw.get("function", {}) if isinstance(raw, dict) else {}
        if function:
            calls.append({"name": function.get("name", ""), "args": json.loads(function.get("arguments") or "{}"),
                          "id": raw.get("id", ""), "type": "tool_call"})
    return calls


def _read_message(message: ChatMessage) -> BaseMessage:
    role = str(message.role.value if hasattr(message.role, "value") else message.role)
    if role == "tool":
        return ToolMessage(_text(message), tool_call_id=str(message.additional_kwargs.get("tool_call_id", "")))
    if role == "assistant":
        blocks: list[Any] = [{"type": "reasoning", "reasoning": block.content or ""}
                             for block in message.blocks if isinstance(block, ThinkingBlock)]
        text = _text(message)
        blocks.extend([{"type": "text", "text": text}] if text else [])
        return AIMessage(blocks, tool_calls=_calls(message))
    if role in ("system", "developer"):
        return SystemMessage(_text(message))
    return HumanMessage(_text(message))


def _read(items: Sequence[Any]) -> list[tuple[Any, BaseMessage]]:
    return [(item, _read_message(item)) for item in items]


def _new(message: BaseMessage) -> ChatMessage:
    """A message a step made, as a ``ChatMessage``."""
    if isinstance(message, ToolMessage):
        return ChatMessage(role="tool", content=message.text, additional_kwargs={"tool_call_id": message.tool_call_id})
    if isinstance(message, AIMessage):
        calls = [ToolCallBlock(tool_call_id=call["id"], tool_name=call["name"], tool_kwargs=call["args"])
                 for call in message.tool_calls]
        text = [TextBlock(text=message.text)] if message.text else []
        return ChatMessage(role="assistant", blocks=[*text, *calls])
    role = "system" if isinstance(message, SystemMessage) else "user"
    return ChatMessage(role=role, content=message.text)


def to_messages(items: Sequence[Any]) -> list[BaseMessage]:
    """LlamaIndex ``ChatMessage`` list as ctxwin messages, as ctxwin counts and plans them (to count
    what a model call was sent)."""
    return [message for _, message in _read(items)]
