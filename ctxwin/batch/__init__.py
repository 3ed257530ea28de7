"""Dataset-scale fitting: ``fit_many`` fits a stream of conversations on all cores, in input order.

The planning is ``ctxwin.fit``'s, so results are identical to calling ``fit`` on each conversation; see
``docs/batch.md``. ``ctxwin.integrations.ray`` does the same on a Ray Dataset.
"""

from ctxwin.batch._item import FitResult
from ctxwin.batch._progress import Progress
from ctxwin.batch._run import fit_many

__all__ = ["FitResult", "Progress", "fit_many"]
