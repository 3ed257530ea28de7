"""Bridges to the frameworks users run; each module imports its framework itself (``import ctxwin`` never does).

``ctxwin.integrations.langchain``: LangChain v1 agent middleware, a LangGraph ``pre_model_hook``, a chat model as
summarizer (the ``langchain`` extra; docs/integrations.md).
``ctxwin.integrations.ray``: fit a Ray Dataset of conversations (the ``ray`` extra).
"""
