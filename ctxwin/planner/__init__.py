"""The planner: compose strategies until a conversation fits a model's input budget, and report every step.

``planner.py`` holds ``Planner``, ``PlanSession`` and ``fit``; ``chain.py`` builds the chain of strategies;
``report.py`` holds what a plan reports (``Plan``, ``StepReport``, ``BudgetExceeded``); ``spans.py`` what its
trace spans say.
"""

from ctxwin.planner.planner import Planner, PlanSession, fit
from ctxwin.planner.report import BudgetExceeded, Plan, StepReport
from ctxwin.strategies.base import Budget
from ctxwin.strategies.pins import is_pinned

__all__ = ["Budget", "BudgetExceeded", "Plan", "PlanSession", "Planner", "StepReport", "fit", "is_pinned"]
