"""What every agent integration shares (``ConversationFitter``): conversations keyed by the framework's ids, or by
what their calls continue when it has none, so that two conversations opening alike keep their own sessions; and a
recall tool's conversation found by what the framework hands the tool (a key, a run object, the run's messages),
never another conversation's, in threads, thread pools and asyncio tasks."""

from __future__ import annotations

import asyncio
import gc
import random
import re
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxwin.integrations import _conversations
from ctxwin.integrations._conversations import ConversationFitter, Unbound, recall
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import FitConfig

BUDGET = 1_500
SYSTEM = SystemMessage("You are a support assistant. Answer from the account logs.")
OPENING = HumanMessage("Hello, I need help with my account.")  # every conversation opens with these two


def read(items: Sequence[Any]) -> list[tuple[Any, BaseMessage]]:
    return [(item, item) for item in items]


def secret(user: int) -> str:
    return f"PIN-{user:02d}-{7919 * (user + 3) % 10_000:04d}"


def log(user: int, turn: int) -> str:
    words = ["gateway", "retry", "ledger", "timeout", "shard", "refund", "audit", "token"]
    return f"account log u{user} t{turn}: " + " ".join(
        f"{words[(user * 5 + turn * 3 + i) % len(words)]}{(user * 31 + turn * 7 + i) % 97}" for i in range(150))


def turn_items(user: int, turn: int) -> list[BaseMessage]:
    """One user turn: a question (the second one pastes the user's PIN), a tool call, its long output, an answer."""
    ask = f"Remember my PIN code {secret(user)} for later." if turn == 1 else f"User {user} turn {turn}: read the log."
    call = {"name": "account_log", "args": {"turn": turn}, "id": f"call_{user}_{turn}", "type": "tool_call"}
    return [HumanMessage(ask), AIMessage("", tool_calls=[call]),
            ToolMessage(log(user, turn), tool_call_id=f"call_{user}_{turn}"),
            AIMessage(f"Turn {turn} for user {user}: nothing unusual.")]


class Conversation:
    """One user's growing history, the way an agent without conversation ids hands it to its model calls."""

    def __init__(self, user: int) -> None:
        self.user = user
        self.items: list[BaseMessage] = [SYSTEM, OPENING, AIMessage("Happy to help: what is the matter?")]
        self.turn = 0
        self.cuts = 0
        self.calls = 0

    def step(self, fitter: ConversationFitter, key: Any = None) -> None:
        """The next turn's two model calls (the question, then the tool output)."""
        items = turn_items(self.user, self.turn)
        for end in (1, 3):
            fitted = fitter.fit([*self.items, *items[:end]], read, key=key)
            self.calls += 1
            self.cuts += bool(fitted.plan.cache and fitted.plan.cache.cut)
        self.items.extend(items)
        self.turn += 1


def fitter() -> ConversationFitter:
    # ledger_share=0: the secrets each user stated would be carried in the ledger's block, not left out to recall
    return ConversationFitter("test", FitConfig(counter="tiktoken:o200k_base", context_window=BUDGET,
                                                reserve_output=0, ledger_share=0))


def foreign(answer: str, user: int, users: int) -> list[str]:
    return [secret(other) for other in range(users) if other != user and secret(other) in answer]


def test_conversations_opening_alike_keep_their_own_sessions() -> None:
    """Two conversations with one system prompt and one first message, their calls interleaved, no ids: each
    continues its own session (before, each call evicted the other's session and cut)."""
    fit = fitter()
    users = [Conversation(0), Conversation(1)]
    for _ in range(8):
        for user in users:
            user.step(fit)
    for user in users:
        assert user.cuts <= user.calls // 3, f"{user.cuts} cuts in {user.calls} calls"
    assert len(fit._conversations) == 2


def test_a_conversation_named_by_the_framework_is_found_by_its_key_alone() -> None:
    fit = fitter()
    users = [Conversation(0), Conversation(1)]
    for _ in range(6):
        for user in users:
            user.step(fit, key=("app", f"user-{user.user}", "session"))
    for user in users:
        answer = recall(lambda u=user: fit.find(key=("app", f"user-{u.user}", "session")), "PIN code", "", "no key")
        assert secret(user.user) in answer and not foreign(answer, user.user, 2)
    nothing = recall(lambda: fit.find(key="unknown"), "PIN code", "", "")
    assert nothing == "Nothing has been left out of this conversation."


@pytest.mark.slow
@given(users=st.integers(2, 6), order=st.randoms(use_true_random=False), workers=st.integers(1, 3))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_recall_answers_from_the_callers_conversation_only(users: int, order: random.Random, workers: int) -> None:
    """Many conversations opening alike, fitted in a few worker threads (a thread fits one conversation, then
    another: its context keeps the last one) and recalled from other threads (a job queue): every answer comes from
    the conversation whose messages the tool was handed, and holds that user's PIN once it left the requests."""
    fit = fitter()
    conversations = [Conversation(user) for user in range(users)]
    steps = [user for user in range(users) for _ in range(5)]
    order.shuffle(steps)
    with ThreadPoolExecutor(workers) as fitting, ThreadPoolExecutor(workers) as recalling:
        for user in steps:
            fitting.submit(conversations[user].step, fit).result()
        for conversation in conversations:
            history = list(conversation.items)
            answer = recalling.submit(recall, lambda h=history: fit.find(history=h), "PIN code", "", "?").result()
            assert not foreign(answer, conversation.user, users), answer
            assert secret(conversation.user) in answer
            # the thread that fitted last, asked with another user's messages, answers from that user's conversation
            other = conversations[(conversation.user + 1) % users]
            answer = fitting.submit(recall, lambda o=other: fit.find(history=o.items), "PIN code", "", "?").result()
            assert not foreign(answer, other.user, users), answer


def test_recall_answers_from_the_callers_conversation_only_on_two_runs() -> None:
    inner = test_recall_answers_from_the_callers_conversation_only.hypothesis.inner_test  # type: ignore[attr-defined]
    inner(users=3, order=random.Random(1), workers=2)
    inner(users=2, order=random.Random(2), workers=1)


def test_without_anything_that_tells_the_tool_answers_with_an_error_not_another_conversation() -> None:
    fit = fitter()
    conversations = [Conversation(0), Conversation(1)]
    for _ in range(5):
        for conversation in conversations:
            conversation.step(fit)
    # the main thread fitted conversation 1 last: a tool handed nothing, or a stranger's messages, learns nothing
    stranger = [SYSTEM, OPENING, HumanMessage("User 9: what is my PIN?")]
    for answer in (recall(lambda: fit.find(), "PIN code", "", "nothing handed over"),
                   recall(lambda: fit.find(history=stranger), "PIN code", "", "nothing handed over")):
        assert "cannot tell which conversation" in answer and "nothing handed over" in answer
        assert "PIN-" not in answer
    # a new user's first call, fitted in another thread: asked here (where conversation 1 was fitted last) with the
    # opening it shares with everyone, the tool answers from the new conversation, not from conversation 1
    opening = [SYSTEM, OPENING]
    other = threading.Thread(target=lambda: fit.fit(opening, read))
    other.start()
    other.join()
    answer = recall(lambda: fit.find(history=opening), "PIN code", "", "?")
    assert "PIN-" not in answer and "Nothing left out" in answer
    # a new thread has no conversation of its own: asked for the current one, it cannot tell
    answers: list[str] = []
    thread = threading.Thread(target=lambda: answers.append(recall(lambda: fit.find(current=True), "PIN code", "", "")))
    thread.start()
    thread.join()
    assert "cannot tell" in answers[0]


def test_asyncio_tasks_each_find_the_conversation_their_own_run_fitted() -> None:
    """Runs as asyncio tasks (a framework's run makes its model calls and runs its tools in one task): the tool of
    each finds the conversation its own task fitted, with the run's messages or without them."""
    fit = fitter()
    conversations = [Conversation(user) for user in range(6)]

    async def run(conversation: Conversation) -> list[str]:
        answers = []
        for _ in range(5):
            items = turn_items(conversation.user, conversation.turn)
            await fit.afit([*conversation.items, *items[:3]], read)
            await asyncio.sleep(0)  # the other runs' calls come in between
            conversation.items.extend(items)
            conversation.turn += 1
            answers.append(recall(lambda: fit.find(current=True), "PIN code", "", "?"))
            answers.append(recall(lambda: fit.find(history=conversation.items), "PIN code", "", "?"))
        return answers

    async def everyone() -> list[list[str]]:
        return await asyncio.gather(*(run(conversation) for conversation in conversations))

    for conversation, answers in zip(conversations, asyncio.run(everyone()), strict=True):
        assert not any(foreign(answer, conversation.user, 6) for answer in answers)
        assert secret(conversation.user) in answers[-1]


def test_a_run_object_names_its_conversation_while_it_lives() -> None:
    class Run:
        """A framework's per-run object (a workflow run's state)."""

    fit = fitter()
    conversations = [Conversation(0), Conversation(1)]
    runs = [Run(), Run()]
    for _ in range(5):
        for conversation, run in zip(conversations, runs, strict=True):
            conversation.step(fit)
            fit.bind(run, fit.fit(conversation.items, read))
    for conversation, run in zip(conversations, runs, strict=True):
        answer = recall(lambda r=run: fit.find(run=r), "PIN code", "", "?")
        assert secret(conversation.user) in answer and not foreign(answer, conversation.user, 2)
    runs.pop()
    gc.collect()
    with pytest.raises(Unbound):
        fit.find(run=Run())


def test_unnamed_conversations_dropped_first_when_too_many(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_conversations, "MAX_CONVERSATIONS", 3)
    fit = fitter()
    conversations = [Conversation(user) for user in range(5)]
    for conversation in conversations:
        conversation.step(fit)
    assert len(fit._conversations) == 3
    assert sum(len(keys) for keys in fit._openings.values()) == 3
    with pytest.raises(Unbound):  # the oldest was dropped: its messages continue nothing kept
        fit.find(history=conversations[0].items)


STACK_PAGES = Path(__file__).resolve().parents[2] / "docs" / "stacks"
FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "agents", "pydantic_ai", "google", "llama_index",
              "agent_framework", "litellm")


def stack_page_errors() -> set[str]:
    """The exception classes the stack pages name (``BudgetExceeded``, ``TurnDoesNotFit``...)."""
    names = {name for page in STACK_PAGES.glob("*.md")
             for name in re.findall(r"`(?:ctxwin\.)?(\w+(?:Error|Exceeded|DoesNotFit))`", page.read_text("utf-8"))}
    assert {"BudgetExceeded", "TurnDoesNotFit"} <= names
    return names


@pytest.mark.slow
def test_every_error_a_stack_page_names_imports_from_ctxwin_with_no_framework_installed() -> None:
    """In a process where no agent framework can be imported, ``from ctxwin import <error>`` works for each error
    the stack pages name, and it is the class the integrations raise."""
    code = f"""
import importlib.abc, sys
class NoFrameworks(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {FRAMEWORKS!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}")
sys.meta_path.insert(0, NoFrameworks())
from ctxwin import {", ".join(sorted(stack_page_errors()))}
from ctxwin.integrations._conversations import TurnDoesNotFit as raised
assert TurnDoesNotFit is raised and issubclass(TurnDoesNotFit, BudgetExceeded)
try:
    import langchain
except ImportError:
    print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
