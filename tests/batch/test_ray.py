"""fit_dataset on a local Ray instance: rows fitted exactly as fit() fits them, bad rows reported in a column.

One Ray instance (2 CPUs) serves the whole module; each pipeline run starts its own actors, so runs are few.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batch_support import EXPLODE, TOOLS, Exploding, conversations, expected, openai_conversations
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.planner import Plan

FIT = {"model": "gpt-4o", "context_window": 2500, "reserve_output": 500, "output": "openai"}


# Every test here starts Ray (seconds) or a subprocess: all are left out of `make check`.
pytestmark = pytest.mark.slow

# Ray Data is ray and pyarrow; found without importing them (ray alone takes most of a second), so collecting stays
# cheap. An installed but broken Ray fails these tests instead of skipping them.
needs_ray = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in ("ray", "pyarrow")),
    reason="Ray Data is not installed (pip install -e '.[ray]')",
)


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[Any]:
    import ray
    import ray.data

    saved = os.environ.get("PYTHONPATH")
    # Ray's worker processes inherit it from the local instance started here: they import batch_support too.
    os.environ["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent), *filter(None, [saved])])
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    finally:
        os.environ.pop("PYTHONPATH") if saved is None else os.environ.update(PYTHONPATH=saved)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()


def with_tools(item: Any) -> Any:
    """An item as sent with the tools column's definitions (a request with them, as fit_dataset makes it)."""
    return {**item, "tools": TOOLS} if isinstance(item, dict) else {"messages": item, "tools": TOOLS}


def check_rows(rows: list[dict[str, Any]], items: list[Any], **fit_kwargs: Any) -> None:
    assert len(rows) == len(items)
    for row, item in zip(rows, items, strict=True):
        want = expected(item, **fit_kwargs) if item is not None else "the row has no conversation (null)"
        if isinstance(want, Plan):
            assert row["fit_error"] is None, row["fit_error"]
            assert json.loads(row["fitted_messages"]) == want.messages
            assert row["fit_plan"] == want.summary()
        else:
            assert row["fitted_messages"] is None and row["fit_plan"] is None
            assert row["fit_error"] == want


@pytest.mark.ray
@needs_ray
def test_arrow_struct_rows_equal_fit(ray_instance: Any) -> None:
    """Lists of message dicts with differing keys: Arrow null-fills them; the results are still fit's."""
    from ctxwin.integrations.ray import fit_dataset

    items = openai_conversations(120, seed=21)
    ds = ray_instance.data.from_items([{"id": i, "messages": c} for i, c in enumerate(items)])
    assert str(ds.schema().base_schema.field("messages").type).startswith("list<item: struct<")
    rows = fit_dataset(ds, concurrency=2, batch_size=16, **FIT).take_all()  # two actors, and still in input order
    assert [row["id"] for row in rows] == list(range(len(items)))
    check_rows(rows, items, **FIT)
    assert any(row["fit_plan"]["dropped"] for row in rows)


@pytest.mark.ray
@needs_ray
def test_json_rows_with_tools_and_bad_rows(ray_instance: Any) -> None:
    from ctxwin.integrations.ray import fit_dataset

    items = conversations(60, seed=22, bad_every=9)
    texts = [json.dumps(item, ensure_ascii=False) if item is not None else None for item in items]
    texts += ["{not json"]
    tools = [json.dumps(TOOLS) if i % 2 else None for i in range(len(texts))]
    ds = ray_instance.data.from_items([{"i": i, "text": texts[i], "tools": tools[i]} for i in range(len(texts))])
    fitted = fit_dataset(ds, column="text", tools_column="tools", concurrency=1, batch_size=8, **FIT)
    rows = fitted.take_all()
    assert [row["i"] for row in rows] == list(range(len(texts)))
    sent = [with_tools(item) if i % 2 else item for i, item in enumerate(items)]
    check_rows(rows[: len(items)], sent, **FIT)
    assert rows[-1]["fit_error"].startswith("not valid JSON")
    odd = next(i for i, item in enumerate(items) if i % 2 and isinstance(item, list) and rows[i]["fit_plan"])
    without_tools = expected(items[odd], **FIT)
    assert isinstance(without_tools, Plan)  # the tools column's definitions are counted in the request:
    assert rows[odd]["fit_plan"]["tokens_before"] > without_tools.tokens_before


@pytest.mark.ray
@needs_ray
def test_any_failure_is_the_rows_error_and_the_order_is_kept_on_every_cpu(ray_instance: Any) -> None:
    """Default concurrency (tasks on both CPUs), many blocks: a row 5,000 levels deep, bad JSON, a strategy that
    raises; the job completes, every row in input order."""
    from ctxwin.integrations.ray import fit_dataset

    items = [c for c in conversations(300, seed=23) if isinstance(c, list)]
    texts = [json.dumps([list(m) if isinstance(m, tuple) else m for m in c], ensure_ascii=False) for c in items]
    texts[10] = "[" * 5_000 + "]" * 5_000
    texts[20] = "{not json"
    texts[30] = json.dumps([{"role": "user", "content": EXPLODE + " and more" * 3_000}])
    ds = ray_instance.data.from_items([{"i": i, "text": t} for i, t in enumerate(texts)], override_num_blocks=16)
    options = {**FIT, "strategies": [Exploding(), "trim"]}
    rows = fit_dataset(ds, column="text", batch_size=8, **options).take_all()
    assert [row["i"] for row in rows] == list(range(len(texts)))
    assert rows[10]["fit_error"].startswith("nested too deeply") and rows[10]["fit_plan"] is None
    assert rows[20]["fit_error"].startswith("not valid JSON")
    assert rows[30]["fit_error"] == f"RuntimeError: {EXPLODE}"
    kept = [i for i in range(len(texts)) if i not in (10, 20, 30)]
    check_rows([rows[i] for i in kept], [json.loads(texts[i]) for i in kept], **options)


@pytest.mark.ray
@needs_ray
def test_read_jsonl_reads_in_ranges_and_rejoins_by_offset(ray_instance: Any, tmp_path: Path) -> None:
    from ctxwin.integrations.ray import fit_dataset, read_jsonl

    items = openai_conversations(150, seed=24)
    lines = [json.dumps(c, ensure_ascii=False) for c in items]
    path = tmp_path / "chats.jsonl"
    path.write_text("\n".join(lines[:40]) + "\n\n" + "\n".join(lines[40:]) + "\n", encoding="utf-8")
    data = path.read_bytes()
    ds = read_jsonl(str(path), shard_bytes=len(data) // 12)
    assert ds.materialize().num_blocks() >= 12  # one block per range: no task holds the whole file
    out = tmp_path / "out"
    fit_dataset(ds, column="text", preserve_order=False, **FIT).write_json(str(out))
    rows = sorted(ray_instance.data.read_json(str(out)).take_all(), key=lambda row: row["offset"])
    assert [data[row["offset"]:].split(b"\n", 1)[0].decode() for row in rows] == lines  # the offset is the key
    check_rows(rows, items, **FIT)


@pytest.mark.ray
@needs_ray
def test_bad_arguments_fail_in_the_driver(ray_instance: Any) -> None:
    from ctxwin.integrations.ray import fit_dataset

    ds = ray_instance.data.from_items([{"messages": [{"role": "user", "content": "hi"}]}])
    with pytest.raises(ValueError, match="gpt-99-ultra"):
        fit_dataset(ds, model="gpt-99-ultra")
    for concurrency in (0, (2, 1), (1, 2, 3), True):
        with pytest.raises(ValueError, match="concurrency"):
            fit_dataset(ds, concurrency=concurrency)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size"):
        fit_dataset(ds, batch_size=0)
    with pytest.raises(ValueError, match="must differ"):
        fit_dataset(ds, plan_column="x", error_column="x")
    with pytest.raises(ValueError, match="output"):
        fit_dataset(ds, output="messages")
    with pytest.raises(TypeError, match=r"ray\.data\.Dataset"):
        fit_dataset([{"messages": []}])  # type: ignore[arg-type]


@pytest.mark.ray
@needs_ray
def test_a_missing_column_is_named(ray_instance: Any) -> None:
    from ctxwin.integrations.ray import fit_dataset

    ds = ray_instance.data.from_items([{"conversation": "[]"}])
    with pytest.raises(Exception, match="no column 'messages'"):
        fit_dataset(ds, concurrency=1).take_all()


def test_ray_is_imported_only_when_used_and_its_absence_is_explained() -> None:
    code = (
        "import sys; sys.modules['ray'] = None\n"  # makes `import ray` fail, as on a machine without the extra
        "import ctxwin, ctxwin.batch, ctxwin.integrations.ray as r\n"
        "try:\n    r.fit_dataset(None)\nexcept ImportError as e:\n    print(e)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "pip install 'ray[data]>=2.9' (ctxwin's 'ray' extra)" in result.stdout
    clean = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, ctxwin, ctxwin.batch, ctxwin.integrations.ray; print('ray' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert clean.stdout.strip() == "False", clean.stderr


message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"]), "content": st.none() | st.text(max_size=8)},
    optional={
        "name": st.text(min_size=1, max_size=5),
        "tool_call_id": st.text(min_size=1, max_size=5),
        "tool_calls": st.lists(
            st.fixed_dictionaries(
                {
                    "id": st.text(max_size=4),
                    "type": st.just("function"),
                    "function": st.fixed_dictionaries({"name": st.text(max_size=4), "arguments": st.just("{}")}),
                }
            ),
            max_size=2,
        ),
    },
)


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="pyarrow comes with the 'ray' extra")
@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(message, max_size=4), min_size=1, max_size=5))
def test_arrow_null_filling_is_undone(rows: list[list[dict[str, Any]]]) -> None:
    import pyarrow

    from ctxwin.integrations.ray import _arrow_filled

    through_arrow = pyarrow.array(rows).to_pylist()
    assert [_arrow_filled(row) for row in through_arrow] == rows
