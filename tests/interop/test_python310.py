"""ctxwin runs on Python 3.10 (requires-python >= 3.10): import it and trim, in a fresh 3.10 venv built from the
package index.

Building that venv installs every dependency (minutes), so the test runs only when asked: ``CTXWIN_TEST_PY310=1``,
with ``python3.10`` on PATH or its path in ``CTXWIN_PYTHON310``. It skips, saying why, otherwise and when the venv
cannot be built (no index reachable). mypy checks ctxwin as Python 3.10 on every run (``[tool.mypy]``), which catches
a 3.11-only standard library name without this test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import sys
import ctxwin
assert sys.version_info[:2] == (3, 10), sys.version
history = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "old " * 500},
           {"role": "assistant", "content": "ok"}, {"role": "user", "content": "What now?"}]
kept = ctxwin.trim_messages(history, max_tokens=40, token_counter="gpt-4o", include_system=True)
assert [m.type for m in kept] == ["system", "ai", "human"], kept
plan = ctxwin.fit(history, "gpt-4o", context_window=200, reserve_output=50, output="anthropic")
assert plan.fits and plan.system == "Be brief.", plan
# The approximate counter's C accelerator is built for 3.10 too (where there is a compiler) and counts as Python does.
import shutil
from ctxwin.counters._approximate.counter import ApproximateCounter
from ctxwin.counters._approximate.accelerator import MODEL
assert MODEL is not None or shutil.which("cc") is None
# Latin words of other languages and Hindi's are cut into the packaged pieces (both files must be installed).
for text in ("The quick brown fox, Съешь же ещё, 我们今天去公园散步 " * 20,
             "Wszyscy ludzie rodzą się wolni i równi pod względem swej godności i swych praw. " * 5,
             "सभी मनुष्यों को गौरव और अधिकारों के मामले में जन्मजात स्वतन्त्रता प्राप्त है। " * 5):
    for counter in (ApproximateCounter(), ApproximateCounter(safe=True)):
        assert counter.count_text(text) == (counter.py_safe_count if counter.safe else counter.py_count)(text)
print("ok")
"""


def test_import_and_trim_on_python_310(tmp_path: Path) -> None:
    if not os.environ.get("CTXWIN_TEST_PY310"):
        pytest.skip("building a Python 3.10 venv takes minutes; set CTXWIN_TEST_PY310=1 to run this test")
    python = os.environ.get("CTXWIN_PYTHON310") or shutil.which("python3.10")
    if python is None:
        pytest.skip("no python3.10 on PATH (set CTXWIN_PYTHON310 to its path)")
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    bin_python = str(venv / ("Scripts" if sys.platform == "win32" else "bin") / "python")
    install = subprocess.run(
        [bin_python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(ROOT)],
        capture_output=True, text=True, check=False,
    )
    if install.returncode != 0:
        pytest.skip(f"could not build a Python 3.10 venv from the package index: {install.stderr[-500:]}")
    run = subprocess.run([bin_python, "-c", SCRIPT], capture_output=True, text=True, check=False, cwd=tmp_path)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr
