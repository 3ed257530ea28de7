"""Several users of one agent at once, without conversation ids: what every stack's isolation test shares. Each user
opens with the same system prompt and first message, tells the agent a PIN of their own, makes the agent read logs
(some over the window, one a large paste; with ``oversize`` every log is half the window to three windows long, as
files an agent reads are), then asks for the PIN, which the scripted model looks up with the recall
tool. The checks: no request and no recall answer holds another user's PIN, every request fits the window by an
independent recount with its tool pairs whole, at most one cut in three calls, and the user's own PIN comes back in
the request or from the tool."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from agent_checks import check_pairs, filler

from ctxwin import get_counter
from ctxwin.messages import BaseMessage, HumanMessage, ToolMessage, message_to_dict

MODEL = "gpt-4o"
WINDOW = 8_000
USERS = 3
TURNS = 9  # 2 + TURNS + 1 user messages each: about 20 model calls per user
OVERSIZE = 100  # the turns of an oversize scenario are numbered from here: each reads a log of 0.5-3 windows
SYSTEM = "You are a support assistant. Read the account logs with the tools before answering."
OPENING = "Hello, I need help with my account."
ASK_PIN = "what was my PIN code? Look it up."
RECALL_QUERY = "PIN code"
USER = re.compile(r"\bUser (\d+)\b")
PINS = re.compile(r"PIN-\d\d-\d{4}")


def secret(user: int) -> str:
    return f"PIN-{user:02d}-{(7919 * (user + 3)) % 10_000:04d}"


def messages(user: int, *, oversize: bool = False) -> list[str]:
    """What ``user`` says, in order: the shared opening, log requests (one with a large paste; with ``oversize``
    each of an oversize log) with the PIN told after the first two, then the question the recall tool answers."""
    said = [OPENING]
    for turn in range(TURNS):
        paste = f" Here is the error I got:\n{paste_text(user)}" if turn == 3 else ""
        said.append(f"User {user} turn {turn + OVERSIZE * oversize}: read the account log.{paste}")
        if turn == 1:  # after the first turns, which a session keeps as its head
            said.append(f"User {user}: remember my PIN code {secret(user)} for later, I will need it.")
    said.append(f"User {user}: {ASK_PIN}")
    return said


def paste_text(user: int) -> str:
    """A pasted error dump of about 1,500 tokens."""
    return "\n".join(f"  at frame {i} " + filler(user * 100 + i, 14) for i in range(30))


def log(user: int, turn: int) -> str:
    """A tool output of 600 to 1,400 tokens, every fourth one over the window; from turn ``OVERSIZE`` on, of half
    the window to three windows (about 37 tokens a line)."""
    if turn >= OVERSIZE:
        lines = 110 + (user * 151 + turn * 97) % 540
    else:
        lines = 2_000 if turn % 4 == 2 else 25 + (user * 37 + turn * 11) % 30
    return "\n".join(f"[u{user} t{turn} {i:04d}] " + filler(user * 10_000 + turn * 1000 + i, 9) for i in range(lines))


def in_threads(chat: Callable[[int], object]) -> None:
    """Every user's ``chat`` at once, each in a thread of its own."""
    with ThreadPoolExecutor(USERS) as pool:
        list(pool.map(chat, range(USERS)))


def in_tasks(chat: Callable[[int], Awaitable[object]]) -> None:
    """Every user's ``chat`` at once, each an asyncio task."""

    async def everyone() -> None:
        await asyncio.gather(*(chat(user) for user in range(USERS)))

    asyncio.run(everyone())


def users_at_once(start: Callable[[Checked], Callable[[int], Awaitable[object]]], *, threads: bool) -> None:
    """Every user's conversation at once through the one agent ``start`` builds (given the checks, it returns a
    user's chat): each an asyncio task, or with ``threads`` each in a thread of its own with its own event loop;
    then ``Checked.done``."""
    checked = Checked()
    chat = start(checked)
    if threads:
        in_threads(lambda user: asyncio.run(chat(user)))
    else:
        in_tasks(chat)
    checked.done()


@dataclass(frozen=True)
class Step:
    """What the scripted model does next: call ``tool`` with ``args`` (call id ``id``), or answer ``text``."""

    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    text: str = ""


def decide(sent: Sequence[BaseMessage]) -> Step:
    """The script, from the request: a tool result gets a short answer, a log request a ``read_log`` call, the PIN
    question a recall call, anything else a short answer."""
    if isinstance(sent[-1], ToolMessage):
        return Step(text="Done.")
    last = next(m.text for m in reversed(sent) if isinstance(m, HumanMessage))
    asked = re.match(r"User (\d+) turn (\d+):", last)
    if asked:
        user, turn = int(asked.group(1)), int(asked.group(2))
        return Step("read_log", {"user": user, "turn": turn}, f"log-{user}-{turn}")
    if last.endswith(ASK_PIN):
        return Step("recall_conversation", {"query": RECALL_QUERY}, f"recall-{user_of([last])}")
    return Step(text="Noted.")


def user_of(texts: Sequence[str]) -> int | None:
    """The user a request belongs to: the one its messages name (None: the shared opening only)."""
    named = {int(match) for text in texts for match in USER.findall(text)}
    assert len(named) <= 1, f"one request holds the messages of users {sorted(named)}"
    return next(iter(named), None)


@dataclass
class Checked:
    """Per user: the calls seen, the cuts among them (a request that does not start with the user's previous one),
    the recall answers, and whether the PIN was in a request that asked for it."""

    calls: dict[int, int] = field(default_factory=dict)
    cuts: dict[int, int] = field(default_factory=dict)
    recalled: dict[int, list[str]] = field(default_factory=dict)
    pin_sent: dict[int, bool] = field(default_factory=dict)
    previous: dict[int, list[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)  # users call from several threads

    def request(self, sent: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> None:
        """One request as the model got it (read back into ctxwin messages): within the window by the model's
        counter, tool pairs whole, no other user's PIN."""
        assert get_counter(MODEL).count_messages(list(sent), tools=list(tools) or None) <= WINDOW
        check_pairs(sent)
        texts = [m.text for m in sent]
        user = user_of(texts)
        if user is None:
            return
        pins = {pin for text in texts for pin in PINS.findall(text)}
        assert pins <= {secret(user)}, f"user {user}'s request holds {pins}"
        written = [json.dumps(message_to_dict(m), sort_keys=True) for m in sent]
        before = self.previous.get(user)
        self.calls[user] = self.calls.get(user, 0) + 1
        self.cuts[user] = self.cuts.get(user, 0) + (before is not None and written[: len(before)] != before)
        self.previous[user] = written
        if any(isinstance(m, HumanMessage) and m.text.endswith(ASK_PIN) for m in sent):
            self.pin_sent[user] = self.pin_sent.get(user, False) or secret(user) in "\n".join(texts)

    def respond(self, sent: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> Step:
        """A model call: the request checked (``request``), a recall answer it carries checked (``answer``), and
        the scripted model's next step."""
        with self.lock:
            self.request(sent, tools)
            last = sent[-1]
            if isinstance(last, ToolMessage) and last.tool_call_id.startswith("recall-"):
                self.answer(int(last.tool_call_id.removeprefix("recall-")), last.text)
        return decide(sent)

    def answer(self, user: int, text: str) -> None:
        """A recall tool's answer for ``user``: no other user's PIN."""
        pins = set(PINS.findall(text))
        assert pins <= {secret(user)}, f"user {user}'s recall answered {pins}: {text[:300]}"
        self.recalled.setdefault(user, []).append(text)

    def done(self, users: int = USERS, *, recalled: bool = True) -> None:
        """Every user made their calls with at most one cut in three and (``recalled``) asked the recall tool, and
        got their PIN back from it or in the request."""
        assert sorted(self.calls) == list(range(users)), self.calls
        for user in range(users):
            cuts, calls = self.cuts[user], self.calls[user]
            assert cuts <= calls // 3, f"user {user}: {cuts} cuts in {calls} calls"
            if not recalled:
                continue
            assert self.recalled.get(user), f"user {user} never got a recall answer"
            found = any(secret(user) in text for text in self.recalled[user])
            assert found or self.pin_sent.get(user), f"user {user}'s PIN came back neither way: {self.recalled[user]}"
