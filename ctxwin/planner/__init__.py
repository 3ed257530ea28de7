"""The planner: compose strategies until a conversation fits a model's input budget, and report every step;
``PlanSession`` plans a growing conversation turn by turn, keeping the provider's prompt cache.
"""

from ctxwin.planner._config import FitConfig
from ctxwin.planner._cut_policy import DEFAULT_LOW_WATER
from ctxwin.planner._planner import Planner, fit
from ctxwin.planner._report import BudgetExceeded, CacheReport, Plan, StepReport
from ctxwin.planner._session import PlanSession
from ctxwin.planner._usage import Usage
from ctxwin.strategies._base import Budget
from ctxwin.strategies._pins import is_pinned

__all__ = [
    "DEFAULT_LOW_WATER", "Budget", "BudgetExceeded", "CacheReport", "FitConfig", "Plan", "PlanSession", "Planner",
    "StepReport", "Usage", "fit", "is_pinned",
]
