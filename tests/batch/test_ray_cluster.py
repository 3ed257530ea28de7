"""fit_dataset on a two-node Ray cluster (two local nodes on 127.0.0.1, started with ``ray start`` as in the recipe of
docs/batch.md): a JSONL file read in ranges, fitted on both nodes, written by a sink; every row equals fit, in input
order, and a row 5,000 levels deep is that row's error. The driver is a subprocess, as a job would be."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from batch_support import conversations, expected
from ray_cluster import _ours, cluster_env, local_cluster
from test_ray import needs_ray

from ctxwin.planner import Plan

FIT = {"model": "gpt-4o", "context_window": 2500, "reserve_output": 500, "output": "openai"}
DRIVER = """
import json, sys, time
import ray, ray.data
from ctxwin.integrations.ray import fit_dataset, read_jsonl

ray.init(address=sys.argv[1], _node_ip_address=sys.argv[1].split(":")[0], log_to_driver=False, logging_level="ERROR")
deadline = time.monotonic() + 60
while len([n for n in ray.nodes() if n["Alive"]]) < 2:
    assert time.monotonic() < deadline, "the second node never joined"
    time.sleep(0.2)
ray.data.DataContext.get_current().enable_progress_bars = False
fit = json.loads(sys.argv[4])
fit_dataset(read_jsonl(sys.argv[2], shard_bytes=20_000), column="text", **fit).write_json(sys.argv[3])
nodes = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
print(json.dumps({"nodes": len(nodes), "cpus": ray.cluster_resources().get("CPU")}))
"""


@pytest.mark.slow
@pytest.mark.ray
@needs_ray
def test_two_nodes_fit_a_file_in_order_and_a_deep_row_is_its_error(tmp_path: Path) -> None:
    items = [c for c in conversations(120, seed=31) if isinstance(c, list)]
    lines = [json.dumps([list(m) if isinstance(m, tuple) else m for m in c], ensure_ascii=False) for c in items]
    lines[7] = "[" * 5_000 + "]" * 5_000
    source = tmp_path / "chats.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(DRIVER), encoding="utf-8")
    out = tmp_path / "out"
    env = cluster_env({**os.environ, "CTXWIN_LOAD_PLUGINS": ""})
    with local_cluster(nodes=2, cpus_per_node=1, env=env) as (address, folder):
        done = subprocess.run(
            [sys.executable, str(driver), address, str(source), str(out), json.dumps(FIT)],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"nodes": 2, "cpus": 2.0}
    rows = [json.loads(line) for path in sorted(out.iterdir()) for line in path.read_text().splitlines()]
    assert [row["offset"] for row in rows] == sorted(row["offset"] for row in rows)  # input order
    assert len(rows) == len(lines)
    assert rows[7]["fit_error"].startswith("nested too deeply") and rows[7]["fitted_messages"] is None
    for row, item in zip(rows[8:], items[8:], strict=True):
        want = expected(item, **FIT)
        assert isinstance(want, Plan) and row["fit_error"] is None
        assert json.loads(row["fitted_messages"]) == want.messages and row["fit_plan"] == want.summary()
    assert _ours(folder) == []  # the cluster stopped every process it started
