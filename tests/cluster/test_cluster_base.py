"""The base task's collectives across hosts: allreduce and allgather with one rank on each of two namespace hosts,
through the playbook, measured against the inter-node interconnect."""

from __future__ import annotations

import json
import math
from pathlib import Path

from cluster import Cluster, cases_arg, leftovers, round_record, run_on

# nccl-tests' bus bandwidth factor of n = 2 ranks: allreduce 2(n-1)/n, allgather (n-1)/n. Whether bandwidth grows
# with the message is a measurement (bench/), not a test: two ranks sharing this machine's cores with another suite
# saw a 32 MiB allgather at half the bus bandwidth of a 2 MiB one.
BUS_FACTOR = {"allreduce": 1.0, "allgather": 0.5}
STEP = 16


def test_collectives_across_two_hosts_use_the_inter_node_peak_and_the_nccl_tests_convention(cluster: Cluster,
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
        for m in measurements:
            assert m["peak_key"].endswith(".inter"), m
            assert math.isfinite(m["achieved"]) and m["achieved"] > 0 and m["seconds"] > 0, m
            assert "n = 2 ranks" in m["note"]
            assert math.isclose(m["algbw"], m["bytes"] / m["seconds"], rel_tol=1e-9), m
            assert math.isclose(m["achieved"], BUS_FACTOR[name] * m["algbw"], rel_tol=1e-9), m
        sizes = {m["bytes"] for m in measurements}
        assert any(STEP * size in sizes for size in sizes), f"{name}: no two sizes {STEP}x apart in {sorted(sizes)}"
    summary = json.loads((results / "run_base_coll" / "summary.json").read_text())
    assert {"allreduce_base_CPUx2x1", "allgather_base_CPUx2x1"} <= {c["case_id"] for c in summary["cases"]}
    assert leftovers("run_base_coll") == []
