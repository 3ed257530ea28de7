"""A LangGraph ReAct agent whose every model call fits gpt-4o's budget: ctxwin's ``pre_model_hook``.

Offline: the chat model is a small fake that calls the tool once per user turn and then answers; one tool output is
a 4,000-line build log (about 70,000 tokens). The hook is given the agent's prompt and tools so that they are
counted; it hands the model ``llm_input_messages`` and leaves the graph's stored history alone. Run:
``python examples/langgraph_agent.py``.
"""

from __future__ import annotations

import warnings

# The fake model and the tool are the LangChain example's (this folder is on sys.path when run as a script).
from langchain_agent import BUDGET, FakeModel, read_build_log
from langchain_core.messages import BaseMessage, HumanMessage

from ctxwin import get_counter
from ctxwin.integrations.langchain import pre_model_hook

with warnings.catch_warnings():  # LangGraph 1.0 points to langchain.agents.create_agent; this one still works
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

PROMPT = "You are a build assistant. Read the logs before answering."


def main() -> None:
    tools = [read_build_log]
    hook = pre_model_hook("gpt-4o", tools=tools, prompt=PROMPT, context_window=BUDGET, reserve_output=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(FakeModel(), tools, prompt=PROMPT, pre_model_hook=hook)
    history: list[BaseMessage] = []
    for night in range(12):
        print(f"turn {night}")
        history = agent.invoke({"messages": [*history, HumanMessage(f"Did the build pass on night {night}?")]})[
            "messages"
        ]
    stored = get_counter("gpt-4o").count_messages(history)
    print(f"the graph's state keeps all {len(history)} messages ({stored} tokens); each call was fitted to {BUDGET}")


if __name__ == "__main__":
    main()
