"""The planner: compose strategies until a conversation fits a model's input budget, and report every step.

``config.py`` holds ``FitConfig``, every option of the planner and its sessions, documented once; ``planner.py``
holds ``Planner`` and ``fit``, ``session.py`` the cache-stable ``PlanSession`` (``cut_policy.py`` when it cuts and
what a cut keeps, ``cache_policy.py`` how it marks the cache and reads usage, ``planning.py`` what it needs of a
planner, asks of a run and gets back, ``usage.py`` reading a provider's usage); ``chain.py`` builds the chain of
strategies; ``report.py`` holds what a plan reports (``Plan``, ``StepReport``, ``BudgetExceeded``); ``spans.py``
what its trace spans say.
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
