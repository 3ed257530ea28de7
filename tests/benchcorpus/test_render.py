"""benchmarks/render.py: the results region of the page is rewritten from a pytest-benchmark JSON, the rest stays."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "render.py"
PAGE = (
    "# Benchmarks\n\nProse quoting `<!-- results:start -->` and `<!-- results:end -->`.\n\n<!-- results:start -->\n"
    "stale figures\n<!-- results:end -->\n\nMore prose.\n"
)


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_render", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


render = _load()


def bench(fullname: str, params: dict[str, Any], minimum: float, **extra: Any) -> dict[str, Any]:
    name = fullname.split("::")[1]
    return {
        "fullname": fullname, "name": name, "group": None, "params": params, "extra_info": extra,
        "stats": {"min": minimum, "median": minimum * 1.1, "rounds": 3},
    }


def trim(library: str, kind: str, mode: str, size: int, minimum: float) -> dict[str, Any]:
    params = {"library": library, "kind": kind, "mode": mode, "size": size}
    return bench(f"benchmarks/bench_trim.py::test_trim[{library}-{kind}-{mode}-{size}]", params, minimum, kept=5)


def run_data() -> dict[str, Any]:
    return {
        "machine_info": {"cpu": {"brand_raw": "Test CPU", "count": 2}, "python_version": "3.11.7",
                         "libraries": {"ctxwin": "0.1.0", "langchain-core": "1.7.2"}, "load_average": [3.5, 3.0, 2.0]},
        "commit_info": {"id": "0123456789abcdef", "dirty": True},
        "datetime": "2026-01-02T03:04:05.000000+00:00",
        "benchmarks": [
            trim("ctxwin", "o200k", "cold", 100, 0.002),
            trim("langchain", "o200k", "cold", 100, 0.050),
            trim("ctxwin", "o200k", "warm", 100, 0.0001),  # langchain_core's warm run is missing: cold stands in
            bench("benchmarks/bench_trim.py::test_floor[100]", {"size": 100}, 0.0016),
            bench("benchmarks/bench_history.py::test_read_2000_messages[sqlite]", {"kind": "sqlite"}, 0.021),
        ],
    }


def rows_of(markdown: str, first_cell: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in markdown.splitlines()
        if line.startswith(f"| {first_cell} |")
    ]


def test_ratios_against_langchain_core_and_the_floor() -> None:
    markdown = render.render_markdown(render.Run(run_data()), None)
    cold, warm = (row for row in rows_of(markdown, "100") if row[1] == "o200k")
    assert cold[2:] == ["cold", "2.00", "50.00", "25.0x", "1.25"]
    assert warm[2:5] == ["warm", "0.100", "50.00 †"] and warm[5] == "500x"


def test_machine_and_unknown_suites_are_reported() -> None:
    markdown = render.render_markdown(render.Run(run_data()), None)
    assert "Test CPU, 2 cores" in markdown and "langchain-core 1.7.2" in markdown and "3.5, 3.0, 2.0" in markdown
    assert "commit 0123456789 + uncommitted changes" in markdown
    (history,) = rows_of(markdown, "`bench_history`")
    assert history[1] == "test_read_2000_messages[sqlite]" and history[3] == "21.00"


def write_inputs(tmp_path: Path, page: str = PAGE, data: Any = None) -> tuple[Path, Path, Path]:
    run, readme, chart = tmp_path / "run.json", tmp_path / "README.md", tmp_path / "results.png"
    run.write_text(json.dumps(run_data() if data is None else data), encoding="utf-8")
    readme.write_text(page, encoding="utf-8")
    return run, readme, chart


def cli(run: Path, readme: Path, chart: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(SCRIPT), str(run), "--readme", str(readme), "--chart", str(chart)]
    return subprocess.run(command, capture_output=True, text=True)


@pytest.mark.slow
def test_only_the_marked_region_changes_and_rendering_again_is_stable(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    run, readme, chart = write_inputs(tmp_path)
    assert cli(run, readme, chart).returncode == 0
    page = readme.read_text(encoding="utf-8")
    before, _, rest = page.partition("\n<!-- results:start -->\n")
    region, _, after = rest.partition("\n<!-- results:end -->\n")
    assert before == PAGE.partition("\n<!-- results:start -->\n")[0] and after == "\nMore prose.\n"
    assert "stale figures" not in region and "![" in region and "(results.png)" in region
    assert chart.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert cli(run, readme, chart).returncode == 0
    assert readme.read_text(encoding="utf-8") == page


@pytest.mark.parametrize(
    ("page", "data", "message"),
    [
        ("# no markers\n", None, "the page needs one line <!-- results:start --> and, after it, one line"),
        ("<!-- results:end -->\n<!-- results:start -->\n", None, "after it"),
        ("<!-- results:start -->\n<!-- results:end -->\n<!-- results:end -->\n", None, "one line"),
        ("text `<!-- results:start -->` and `<!-- results:end -->`\n", None, "one line"),
        (PAGE, {"results": []}, "not a pytest-benchmark JSON file"),
    ],
)
def test_bad_inputs_are_refused_before_anything_is_written(
    tmp_path: Path, page: str, data: Any, message: str
) -> None:
    run, readme, chart = write_inputs(tmp_path, page, data)
    result = cli(run, readme, chart)
    assert result.returncode == 2 and message in result.stderr
    assert readme.read_text(encoding="utf-8") == page and not chart.exists()


def test_missing_run_file(tmp_path: Path) -> None:
    _, readme, chart = write_inputs(tmp_path)
    result = cli(tmp_path / "absent.json", readme, chart)
    assert result.returncode == 2 and "absent.json" in result.stderr
