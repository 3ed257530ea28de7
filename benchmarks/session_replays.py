"""The session replays behind docs/sessions-measurements.md's defaults: each set replayed turn by turn
(``ctxwin.cli._bench.replay``) through a sliding trim (what LangChain's ``trim_messages(strategy="last",
start_on="human")`` sends), the issue's naive policy (append until the next request would overflow, then cut back to
65% of the budget and leave the rest alone) and ``Planner(...).session()`` with the options given, at a 20,000-token
input budget (``--budget``), gpt-4o's counter and the reference billing (``--billing MODEL``: as that model's
provider bills). Prints one line per set and policy: cache hits, billed input and mean tokens sent as ratios to the
sliding trim, recent turns kept verbatim, time per request, requests over budget / with a broken tool pair / without
the last user message; for sessions, ``whole=W/F``: of the F requests whose budget holds the newest three tool
outputs with the system prompt and the last user message, the W that send all three whole (an agent's working set).

Sets (4 conversations of 400 messages each, ``benchmarks/conversations.py``): ``agent``, ``multilingual``, ``code``
(``KIND:SEED`` for another seed); ``agent*3`` / ``agent/3`` (every tool output three times longer / cut to its first
third); ``steered/F/K``: agent runs whose tool outputs are cut to 1/F and where the user says a word after every
K-th tool round (a user who steers the agent: a sliding trim hits the cache on 74-78% of their requests).

    .venv/bin/python benchmarks/session_replays.py agent,steered/2/3,multilingual '{"default": {}}'

A session's options may also hold the planner's ``strategies`` and ``recall_share`` (docs/recall.md's masking rows:
``{"mask": {"strategies": ["clear_reasoning", "filter", "mask_tool_outputs", "truncate_tool_output", "trim"]}}``).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from conversations import generate

from ctxwin.cli._bench.billing import STANDARD_RULES
from ctxwin.cli._bench.replay import SessionResult, make_policy, replay_policy
from ctxwin.cli._bench.session import rules_for
from ctxwin.counters import get_counter
from ctxwin.counters._caching import CachingRules
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage, convert_to_messages
from ctxwin.planner import Planner
from ctxwin.trim import trim_messages

BUDGET = 20_000
NAIVE_LOW_WATER = 0.65


class Naive:
    """Append until the request would overflow, then cut back to ``NAIVE_LOW_WATER`` of the budget (a sliding trim
    to that size), and send everything from that cut on until the next overflow."""

    def __init__(self, planner: Planner) -> None:
        self.counter, self.limit = planner.counter, planner.budget.messages_budget
        self.history: list[BaseMessage] = []
        self.start: int | None = None

    def add(self, messages: list[BaseMessage]) -> None:
        self.history += messages

    def request(self) -> list[BaseMessage]:
        system = [m for m in self.history[:1] if isinstance(m, SystemMessage)]
        request = system + self.history[len(system) if self.start is None else self.start :]
        if self.counter.count_messages(request) <= self.limit:
            return request
        kept = trim_messages(self.history, max_tokens=int(NAIVE_LOW_WATER * self.limit), token_counter=self.counter,
                             strategy="last", include_system=True, start_on="human")
        self.start = len(self.history) - sum(not isinstance(m, SystemMessage) for m in kept)
        return system + self.history[self.start :]

    def marks(self) -> tuple[int, ...]:
        return ()  # the last message, the usual pattern


class Session:
    """A session; ``options`` are ``Planner.session``'s, and the planner's ``strategies`` and ``recall_share``."""

    def __init__(self, planner: Planner, options: dict[str, Any]) -> None:
        options = dict(options)
        planning = {key: options.pop(key) for key in ("strategies", "recall_share") if key in options}
        if planning:
            budget = planner.budget
            planner = Planner(planner.model, counter=planner.counter, context_window=budget.context_window,
                              reserve_output=budget.reserve_output, tools=planner.tools, **planning)
        self.session = planner.session(**options)
        self.history: list[BaseMessage] = []
        self.limit = planner.budget.messages_budget
        self.counter = planner.counter
        self.working_set = [0, 0]  # requests sending the newest three outputs whole, requests whose budget holds them

    def add(self, messages: list[BaseMessage]) -> None:
        self.history += messages
        self.session.add_messages(messages)

    def request(self) -> list[BaseMessage]:
        sent = list(self.session.plan().messages)
        outputs = [m for m in self.history if isinstance(m, ToolMessage)][-3:]
        if len(outputs) == 3:
            first = self.history.index(outputs[0])
            start = max(i for i in range(first) if isinstance(self.history[i], AIMessage)
                        and any(call["id"] == outputs[0].tool_call_id for call in self.history[i].tool_calls))
            user = max((i for i, m in enumerate(self.history) if isinstance(m, HumanMessage)), default=start)
            needed = [m for m in self.history[:start] if isinstance(m, SystemMessage) or m is self.history[user]]
            if self.counter.count_messages(needed + self.history[start:]) <= self.limit:
                whole = {m.tool_call_id: m.content for m in sent if isinstance(m, ToolMessage)}
                self.working_set[0] += all(whole.get(o.tool_call_id) == o.content for o in outputs)
                self.working_set[1] += 1
        return sent

    def marks(self) -> tuple[int, ...]:
        return self.session.cache_prefixes


def conversations(name: str) -> list[list[BaseMessage]]:
    """The set ``name`` (module docstring)."""
    kind, _, seed_text = name.partition(":")
    seed = int(seed_text or 7)
    if kind.startswith("steered/"):
        _, shorter, every = kind.split("/")
        return [steered(convert_to_messages(generate("agent", 400, seed + i)), float(shorter), int(every))
                for i in range(4)]
    base = kind[:5] if kind[5:6] in ("*", "/") else kind
    convs = [convert_to_messages(generate(base, 400, seed + i)) for i in range(4)]
    if base != kind:
        factor, longer = float(kind[6:]), kind[5] == "*"
        convs = [[resized(m, factor, longer) for m in conv] for conv in convs]
    return convs


def resized(message: BaseMessage, factor: float, longer: bool) -> BaseMessage:
    if not isinstance(message, ToolMessage) or not isinstance(message.content, str):
        return message
    text = message.content
    text = (text * int(factor + 1))[: int(len(text) * factor)] if longer else text[: int(len(text) / factor)]
    return message.model_copy(update={"content": text})


def steered(messages: list[BaseMessage], shorter: float, every: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    rounds = 0
    for i, message in enumerate(messages):
        out.append(resized(message, shorter, False))
        following = messages[i + 1] if i + 1 < len(messages) else None
        if isinstance(message, ToolMessage) and not isinstance(following, ToolMessage):
            rounds += 1
            if rounds % every == 0 and not isinstance(following, HumanMessage):
                out.append(HumanMessage("Looks good, keep going; tell me what you find."))
    return out


def run(convs: list[list[BaseMessage]], policies: dict[str, Any], budget: int = BUDGET,
        rules: CachingRules = STANDARD_RULES) -> tuple[dict[str, SessionResult], dict[str, list[int]]]:
    """Each policy's result, and for sessions the working set's whole/fitting requests (``Session.working_set``)."""
    counter = get_counter("gpt-4o")
    results, working_sets = {}, {}
    for label, make in policies.items():
        results[label] = SessionResult(label, budget, rules)
        made: list[Any] = []

        def keep(planner: Planner, make: Any = make, made: list[Any] = made) -> Any:
            made.append(make(planner))
            return made[-1]

        for conv in convs:
            replay_policy(conv, keep, results[label], counter=counter, model="gpt-4o", reserve_output=4000)
        if made and isinstance(made[0], Session):
            working_sets[label] = [sum(p.working_set[k] for p in made) for k in (0, 1)]
    return results, working_sets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", help="comma-separated sets, e.g. agent,agent:101,steered/2/3,multilingual")
    parser.add_argument("sessions", nargs="?", default='{"default": {}}',
                        help="JSON: label -> Planner.session options")
    parser.add_argument("--budget", type=int, default=BUDGET, help="the input budget in tokens")
    parser.add_argument("--billing", default="standard",
                        help="'standard' (the reference billing) or a model whose provider's billing to use "
                        "(ctxwin bench --session --billing)")
    args = parser.parse_args()
    rules = rules_for(None, args.billing)
    sessions = json.loads(args.sessions)
    for name in args.sets.split(","):
        policies: dict[str, Any] = {"sliding": lambda p: make_policy("sliding", p), "naive": Naive}
        policies.update({label: functools.partial(Session, options=o) for label, o in sessions.items()})
        results, working_sets = run(conversations(name), policies, args.budget, rules)
        base = results["sliding"]
        for label, r in results.items():
            whole = f" whole={working_sets[label][0]}/{working_sets[label][1]}" if label in working_sets else ""
            print(f"{name:16} {label:10} requests={r.requests} hits={r.hit_rate:.1%} "
                  f"billed={r.billed_tokens / base.billed_tokens:.3f}x sent={r.mean_tokens / base.mean_tokens:.3f}x "
                  f"turns={r.recent_turns:.1f} ms={r.seconds_per_turn * 1000:.2f} "
                  f"over/broken/nouser={r.over_budget}/{r.broken_pairs}/{r.missing_last_user}{whole}", flush=True)


if __name__ == "__main__":
    main()
