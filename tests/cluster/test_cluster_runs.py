"""Multi-host runs over SSH on the namespace cluster: real DDP across hosts, scaling, reruns, two runs at once."""

from __future__ import annotations

import json
from pathlib import Path

from cluster import Cluster, cases_arg, leftovers, round_record, run_on, start_on

DIGITS = {"case": "digits_cnn", "hardware": "CPU", "repeat": 1}


def test_two_hosts_two_ranks_each_converge_and_the_summary_scales(cluster: Cluster, results: Path):
    run = run_on(cluster, results, "run_scale", "-e", cases_arg(
        dict(DIGITS, nnodes=1, nproc=1), dict(DIGITS, nnodes=1, nproc=2), dict(DIGITS, nnodes=2, nproc=2)))
    assert run.rc == 0, run.output[-5000:]

    record = round_record(results, "run_scale", "digits_cnn_CPUx2x2", 1)
    assert record["status"] == "success", record["reason"]
    assert record["metrics"]["converged"] and record["metrics"]["final_metric"] >= 0.95
    assert [(n["host"], n["node_rank"], n["status"]) for n in record["per_node"]] == \
        [("node1", 0, "success"), ("node2", 1, "success")]
    assert [(r["rank"], r["host"]) for r in record["per_rank"]] == \
        [(0, "node1"), (1, "node1"), (2, "node2"), (3, "node2")]

    # Every node's rank logs and monitor logs came back to the controller.
    round_dir = results / "run_scale" / "digits_cnn_CPUx2x2" / "round1"
    for node, ranks in (("node1_noderank0", (0, 1)), ("node2_noderank1", (2, 3))):
        for rank in ranks:
            assert "[PerfLog]" in (round_dir / node / f"rank{rank}.out.log").read_text()
        for monitor in ("host", "cpu"):
            assert (round_dir / node / f"{monitor}_monitor.jsonl").stat().st_size > 0, (node, monitor)
    assert record["monitors"]["node2_noderank1"]["host"]
    # ... in the wait's last answer: a remote node that succeeded takes two module runs a round, start and wait.
    statuses = run.task_statuses()
    assert set(statuses.get("Finish this node of the round", [])) <= {"skipping"}, statuses
    assert "changed" in statuses["Wait for this node of the round"], "the wait brought the remote directory"

    # Per-node and total throughput, and the scaling table over 1x1, 1x2, 2x2.
    throughput = record["throughput"]
    assert set(throughput["per_node"]) == {"node1", "node2"}
    assert throughput["total"] > 0
    summary = json.loads((results / "run_scale" / "summary.json").read_text())
    (group,) = summary["scaling"]
    assert [row["case_id"] for row in group["rows"]] == \
        ["digits_cnn_CPUx1x1", "digits_cnn_CPUx1x2", "digits_cnn_CPUx2x2"]
    assert all(row["speedup"] is not None and row["efficiency"] is not None for row in group["rows"])
    assert "scaling" in run.output and "digits_cnn_CPUx2x2" in run.output
    assert leftovers("run_scale") == []


def test_a_second_run_changes_nothing_on_the_hosts(cluster: Cluster, results: Path):
    first = run_on(cluster, results, "run_first", "-e", cases_arg(dict(DIGITS, nnodes=2, nproc=1)))
    assert first.rc == 0, first.output[-5000:]
    second = run_on(cluster, results, "run_second", "-e", cases_arg(dict(DIGITS, nnodes=2, nproc=1)))
    assert second.rc == 0, second.output[-5000:]
    statuses = second.task_statuses()
    for task in ("runtime_host : Copy the checkout bundle", "runtime_host : Create the project directory"):
        assert statuses[task] == ["ok", "ok"], (task, statuses[task])
    assert set(statuses["runtime_host : Install the requirements into the venv"]) == {"skipping"}
    assert "RUNNING HANDLER [runtime_host : Unpack the checkout]" not in second.output


def test_two_runs_at_once_on_the_same_hosts_do_not_collide(cluster: Cluster, results: Path, tmp_path: Path):
    runs = {run_id: start_on(cluster, results, run_id, "-e", cases_arg(dict(DIGITS, nnodes=2, nproc=1)),
                             log=tmp_path / f"{run_id}.log") for run_id in ("run_two_a", "run_two_b")}
    for run_id, proc in runs.items():
        assert proc.wait(timeout=600) == 0, (tmp_path / f"{run_id}.log").read_text()[-5000:]
    masters = set()
    for run_id in runs:
        record = round_record(results, run_id, "digits_cnn_CPUx2x1", 1)
        assert record["status"] == "success", record["reason"]
        node0 = json.loads((results / run_id / "digits_cnn_CPUx2x1" / "round1" / "node1_noderank0" /
                            "node_result.json").read_text())
        masters.add(node0["master"])
        # Each run's node directories on the hosts are its own.
        assert (cluster.host_results("node2") / run_id / "digits_cnn_CPUx2x1" / "round1" / "node2_noderank1").is_dir()
    assert len(masters) == 2, f"both runs used the same rendezvous port: {masters}"
