"""README.md's install from a wheel: the wheel the checkout builds holds the package data and, where a C compiler
is found, the accelerators, and installed elsewhere it fits a conversation with them."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ACCELERATORS = ("counters/_approximate/speedups", "counters/_framing", "messages/_written", "trim/_pairscan",
                "strategies/_flagged", "recall/_termscan")


@pytest.mark.slow
def test_the_built_wheel_installs_and_fits_with_its_accelerators(tmp_path: Path) -> None:
    # No build isolation: the suite runs offline, and the dev extra has setuptools and wheel.
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp_path / "dist"), str(ROOT)], check=True, timeout=600, capture_output=True)
    wheel = next((tmp_path / "dist").glob("ctxwin-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "ctxwin/py.typed" in names and "ctxwin/counters/_approximate/calibration.json" in names
    compiled = shutil.which(sysconfig.get_config_var("CC").split()[0] if sysconfig.get_config_var("CC") else "cc")
    if compiled:
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        assert {f"ctxwin/{a}{suffix}" for a in ACCELERATORS} <= set(names)
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target",
                    str(site), str(wheel)], check=True, timeout=300, capture_output=True)
    script = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import ctxwin\n"
        "assert ctxwin.__file__.startswith(sys.argv[1]), ctxwin.__file__\n"
        "from ctxwin.messages._writer import C_WRITER\n"
        "plan = ctxwin.fit(['hello there'] * 50 + ['and now?'], model='gpt-4o', context_window=100, reserve_output=0)\n"
        "print(plan.fits, C_WRITER is not None)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(site)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    fits, c_writer = done.stdout.split()
    assert fits == "True"
    if compiled:
        assert c_writer == "True", "the installed wheel did not load its C writer"
