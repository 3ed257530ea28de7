"""A session sits above the planner: what it needs of a plan (a target, its fixed head, the pins it knows, where
recall searches) is an input of the planning call (``SessionTurn``), what it needs to know of a run comes back with
it (``Planned``), and the plan the planner returns is final: the session builds its own from it and knows no
strategy by name."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path
from typing import Any

import pytest

from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import Planner
from ctxwin.planner._planning import Planned, SessionTurn
from ctxwin.strategies._base import BaseStrategy
from ctxwin.strategies._meter import Meter

from .test_cache_session import replay
from .test_planner import WORDS, conversation
from .test_session_head import agent_run

PLANNER = Path(__file__).resolve().parents[2] / "ctxwin" / "planner"
# The session and the policies it is made of.
SESSION = [PLANNER / name for name in ("_session.py", "_cut_policy.py", "_cache_policy.py")]
GPT4O = get_counter("gpt-4o")
# The one attribute of a plan a session writes: ``observe`` puts the provider's measured bill on the plan the caller
# holds (docs/sessions.md); every plan a session returns was built whole.
MEASURED = {("observe", "last.cache")}


def _strategies_imports(tree: ast.AST) -> list[tuple[str, list[str]]]:
    return [(node.module, [alias.name for alias in node.names]) for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ctxwin.strategies")]


def _steps_in(module_name: str) -> list[str]:
    """The steps (``BaseStrategy`` subclasses) a module defines."""
    module = importlib.import_module(module_name)
    return [name for name, obj in vars(module).items() if inspect.isclass(obj) and issubclass(obj, BaseStrategy)
            and obj is not BaseStrategy and obj.__module__ == module_name]


def _foreign_attribute_writes(tree: ast.AST) -> set[tuple[str, str]]:
    """``(function, target)`` of each assignment to an attribute of anything but ``self``, and each ``setattr``."""
    found: set[tuple[str, str]] = set()
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
                found.add((function.name, ast.unparse(node)))
            for target in targets:
                for part in ast.walk(target):
                    if isinstance(part, ast.Attribute) and ast.unparse(part.value) != "self":
                        found.add((function.name, ast.unparse(part)))
    return found


@pytest.mark.parametrize("path", SESSION, ids=lambda path: path.name)
def test_the_session_imports_no_step_of_the_strategies(path: Path) -> None:
    imports = _strategies_imports(ast.parse(path.read_text()))
    assert imports  # it does use the strategies layer's vocabulary (the meter, pins, the system prompt's extent)
    for module, names in imports:
        assert _steps_in(module) == [], f"{path.name} imports from {module}, a module of steps"
        imported = [getattr(importlib.import_module(module), name) for name in names]
        assert not any(inspect.isclass(obj) and issubclass(obj, BaseStrategy) for obj in imported)


def test_the_session_writes_no_attribute_of_a_plan() -> None:
    assert set().union(*(_foreign_attribute_writes(ast.parse(path.read_text())) for path in SESSION)) == MEASURED


def test_the_scans_find_what_they_look_for() -> None:
    tree = ast.parse("from ctxwin.strategies._pairs import RepairToolPairs\n"
                     "def f(self, plan):\n    plan.cache = 1\n    self.x = plan\n    setattr(plan, 'k', 2)\n")
    assert _strategies_imports(tree) == [("ctxwin.strategies._pairs", ["RepairToolPairs"])]
    assert _steps_in("ctxwin.strategies._pairs") == ["RepairToolPairs"]
    assert _foreign_attribute_writes(tree) == {("f", "plan.cache"), ("f", "setattr(plan, 'k', 2)")}


class RecordingPlanner(Planner[Any]):
    """A planner that keeps what each of its runs returned."""

    runs: list[tuple[Planned[Any], dict[str, Any]]]

    def plan_run(self, *args: Any, **kwargs: Any) -> Planned[Any]:
        planned = super().plan_run(*args, **kwargs)
        fields = {name: getattr(planned.plan, name) for name in (
            "cache", "cache_key", "cache_ttl", "cache_breakpoints", "recent_turns_verbatim", "recalled")}
        self.runs.append((planned, fields))
        return planned


def test_the_planners_plan_is_final_as_returned() -> None:
    planner = RecordingPlanner("gpt-4o", context_window=9_000, reserve_output=1_000, output="anthropic")
    planner.runs = []
    plans = [plan for plan, _ in replay(planner.session(), agent_run(3, rounds=30))]
    assert any(plan.cache is not None and plan.cache.cut for plan in plans[1:])  # the replay cuts
    returned = {id(planned.plan): planned for planned, _ in planner.runs}
    for planned, fields in planner.runs:  # as the planner made them, then: nothing wrote on them
        assert {name: getattr(planned.plan, name) for name in fields} == fields
        assert planned.plan.cache is None and planned.plan.cache_key is None
    for plan in plans:
        assert id(plan) not in returned and plan.cache is not None
        assert any(plan.messages is planned.plan.messages for planned in returned.values())


def _tool_round(call_id: str) -> list[BaseMessage]:
    return [AIMessage("", tool_calls=[{"name": "search", "args": {"q": WORDS[0]}, "id": call_id}]),
            ToolMessage(" ".join(WORDS[:40]), tool_call_id=call_id)]


def test_a_run_reports_whether_it_repaired_a_tool_pair() -> None:
    planner = Planner("gpt-4o")
    whole = [SystemMessage("You help."), HumanMessage(" ".join(WORDS[:30])), *_tool_round("c1")]
    clean = planner.plan_run(whole, Meter(GPT4O))
    assert not clean.repaired_pairs and clean.sent == whole
    broken = planner.plan_run([*whole[:3], HumanMessage(" ".join(WORDS[30:50]))], Meter(GPT4O))
    assert broken.repaired_pairs
    assert not any(isinstance(m, AIMessage) and m.tool_calls for m in broken.sent)


def test_the_head_given_to_a_run_is_kept_as_pinned() -> None:
    messages = conversation(5, turns=30, tool_every=4, big_tool=120)
    head = (messages[1],)  # the first user message: right after the system prompt
    planner = Planner("gpt-4o", context_window=GPT4O.count_messages(messages) // 3, reserve_output=0)
    without = planner.plan_run(messages, Meter(GPT4O))
    assert without.plan.fits and not any(m is head[0] for m in without.sent)  # a trim drops the oldest turns
    meter = Meter(GPT4O)
    kept = planner.plan_run(messages, meter, turn=SessionTurn(head=head))
    assert kept.plan.fits and kept.sent[1] is head[0] and meter.head == head
    assert kept.sent[-1] is messages[-1] and len(kept.sent) < len(messages)
    later = planner.plan_run(messages, meter)  # a run that gives no head has none
    assert meter.head == () and not any(m is head[0] for m in later.sent)
