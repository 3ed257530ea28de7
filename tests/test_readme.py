"""The README and the docs pages: the demo transcript is what the demo prints, and every link stays inside the
repository (a clone has nothing beside it)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("benchmarks/*.md"),
                *ROOT.glob("examples/**/*.md")])
LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.slow
def test_the_demo_transcript_is_what_the_demo_prints() -> None:
    done = subprocess.run([sys.executable, "examples/readme_demo.py", "--check"], cwd=ROOT, timeout=300)
    assert done.returncode == 0, "README's demo transcript is stale: run `python examples/readme_demo.py`"


def outside_links(page: Path, root: Path = ROOT) -> list[str]:
    """The relative links of a page that lead to no file under ``root``, and any mention of the folder beside the
    checkout (``../shared``)."""
    text = page.read_text(encoding="utf-8")
    found = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        if not path.is_relative_to(root) or not path.exists():
            found.append(target)
    found += re.findall(r"\.\./shared[^\s)`]*", text)
    return found


def test_pages_link_only_inside_the_repository() -> None:
    outside = {str(page.relative_to(ROOT)): links for page in PAGES if (links := outside_links(page))}
    assert outside == {}


def test_a_link_out_of_the_repository_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "page.md"
    page.write_text("[design](../../shared/DESIGN.md) [gone](missing.md) [ok](https://example.org) [here](#top) "
                    "[readme](../README.md) [self](page.md#top)")
    (tmp_path / "README.md").write_text("")
    assert outside_links(page, tmp_path) == ["../../shared/DESIGN.md", "missing.md", "../shared/DESIGN.md"]
