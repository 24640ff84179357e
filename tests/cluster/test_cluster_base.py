"""The base task's collectives across hosts: allreduce and allgather with one rank on each of two namespace hosts,
through the playbook, measured against the inter-node interconnect."""

from __future__ import annotations

import json
import math
from pathlib import Path

from cluster import Cluster, cases_arg, leftovers, round_record, run_on

# A larger message must reach at least this share of the bus bandwidth of a message 16 times smaller: bandwidth
# grows with the message, but two ranks sharing this machine's cores with everything else make single figures
# noisy, so only a halving counts as a fall.
NOISE = 0.5
STEP = 16


def test_collectives_across_two_hosts_use_the_inter_node_peak_and_grow_with_the_message(cluster: Cluster,
                                                                                        results: Path):
    run = run_on(cluster, results, "run_base_coll", "-e", "perfplay_task=base", "-e", cases_arg(
        {"case": "allreduce", "nnodes": 2, "nproc": 1}, {"case": "allgather", "nnodes": 2, "nproc": 1}))
    assert run.rc == 0, run.output[-5000:]

    for name in ("allreduce", "allgather"):
        record = round_record(results, "run_base_coll", f"{name}_base_CPUx2x1", 1)
        assert record["status"] == "success", record["reason"]
        assert [(n["host"], n["status"]) for n in record["per_node"]] == [("node1", "success"), ("node2", "success")]
        measurements = record["metrics"]["measurements"]
        assert len(measurements) >= 2
        busbw = {}
        for m in measurements:
            assert m["peak_key"].endswith(".inter"), m
            assert math.isfinite(m["achieved"]) and m["achieved"] > 0, m
            assert "n = 2 ranks" in m["note"]
            busbw[m["bytes"]] = m["achieved"]
        pairs = [(size, STEP * size) for size in busbw if STEP * size in busbw]
        assert pairs, f"{name}: no two sizes {STEP}x apart in {sorted(busbw)}"
        for small, large in pairs:
            assert busbw[large] >= NOISE * busbw[small], (name, small, busbw[small], large, busbw[large])
    summary = json.loads((results / "run_base_coll" / "summary.json").read_text())
    assert {"allreduce_base_CPUx2x1", "allgather_base_CPUx2x1"} <= {c["case_id"] for c in summary["cases"]}
    assert leftovers("run_base_coll") == []
