"""Faults on the namespace cluster. Each test asserts what the user sees, and that afterwards no process of
the run is left on any host (the root namespace sees every host's processes)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import yaml

from cluster import (
    INFO,
    REPO,
    Cluster,
    cases_arg,
    interrupt,
    leftovers,
    rank_pid,
    round_record,
    start_on,
    training_started,
    wait_for,
)
from playbook_run import run_playbook
from process_helpers import SHORT_S

# Runs until its time budget unless a fault stops it first (synthetic data never reaches the target).
LONG = {"case": "digits_cnn", "hardware": "CPU", "nnodes": 2, "nproc": 2, "repeat": 1,
        "overrides": {"synthetic": True, "time_budget_s": 90, "max_epochs": 10000}}
AFTER = {"case": "digits_cnn", "hardware": "CPU", "nnodes": 1, "nproc": 1, "repeat": 1}


def _rank_running(cluster: Cluster, run_id: str, host: str, rank: int) -> int:
    wait_for(lambda: training_started(cluster, host, run_id, rank), 180, f"rank {rank} training on {host}")
    return wait_for(lambda: rank_pid(run_id, rank), 10, f"the pid of rank {rank}")


def _record_written(results: Path, run_id: str, case_id: str) -> Path:
    return results / run_id / case_id / "round1" / "round_record.json"


def test_an_unreachable_host_stops_the_run_before_anything_starts(cluster: Cluster, results: Path,
                                                                    tmp_path: Path):
    inventory = yaml.safe_load(cluster.inventory.read_text())
    inventory["all"]["children"]["perfplay_hosts"]["hosts"]["ghost"] = {"ansible_host": f"{INFO['net']}.250"}
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(inventory))
    run = run_playbook(REPO, "run_case.yml", "-i", str(path), "-e", f"perfplay_results_dir={results}",
                       "-e", "perfplay_run_id=run_ghost", "-e", cases_arg(AFTER))
    assert run.rc != 0
    assert "UNREACHABLE" in run.output and "ghost" in run.output
    assert not list(results.glob("run_ghost/*/round*")), "a round started"
    assert not list(cluster.host_results("node1").glob("run_ghost/*/round*")), "node1 launched something"
    assert leftovers("run_ghost") == []


def test_a_killed_rank_fails_the_round_within_30_s_and_the_run_goes_on(cluster: Cluster, results: Path,
                                                                      tmp_path: Path):
    run = start_on(cluster, results, "run_kill", "-e", cases_arg(LONG, AFTER), log=tmp_path / "run.log")
    pid = _rank_running(cluster, "run_kill", "node2", 3)
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    record_path = _record_written(results, "run_kill", "digits_cnn_CPUx2x2")
    wait_for(record_path.exists, 30, "the round record")
    assert time.monotonic() - killed < 30
    assert run.wait(timeout=600) != 0, "the play fails at the end: a round failed"
    output = (tmp_path / "run.log").read_text()

    record = round_record(results, "run_kill", "digits_cnn_CPUx2x2", 1)
    assert record["status"] == "failed"
    assert "rank 3" in record["reason"] and "node2" in record["reason"], record["reason"]
    nodes = {n["host"]: n for n in record["per_node"]}
    assert nodes["node1"]["status"] == "failed" and "node2" in nodes["node1"]["reason"], "node1 was not stopped"
    # Partial logs of both nodes came back, monitor logs included.
    round_dir = results / "run_kill" / "digits_cnn_CPUx2x2" / "round1"
    assert "TRAIN_START" in (round_dir / "node2_noderank1" / "rank3.out.log").read_text()
    assert (round_dir / "node1_noderank0" / "host_monitor.jsonl").exists()
    # The next case still ran.
    assert round_record(results, "run_kill", "digits_cnn_CPUx1x1", 1)["status"] == "success", output[-3000:]
    assert leftovers("run_kill") == []


def test_a_hung_rank_is_stopped_by_the_case_timeout(cluster: Cluster, results: Path, tmp_path: Path):
    hung = dict(LONG, timeout_s=40)
    run = start_on(cluster, results, "run_hang", "-e", cases_arg(hung), log=tmp_path / "run.log")
    pid = _rank_running(cluster, "run_hang", "node2", 2)
    os.kill(pid, signal.SIGSTOP)  # the others wait for it in their next all-reduce
    assert run.wait(timeout=300) != 0
    record = round_record(results, "run_hang", "digits_cnn_CPUx2x2", 1)
    assert record["status"] == "timeout", record["reason"]
    assert "timeout" in record["reason"]
    assert leftovers("run_hang") == []


def test_a_host_dropping_off_the_network_fails_the_round(cluster: Cluster, results: Path, tmp_path: Path):
    run = start_on(cluster, results, "run_drop", "-e", cases_arg(LONG, AFTER), log=tmp_path / "run.log")
    _rank_running(cluster, "run_drop", "node2", 3)
    cluster.netns("node2", "ip", "link", "set", "eth0", "down")
    dropped = time.monotonic()
    try:
        wait_for(_record_written(results, "run_drop", "digits_cnn_CPUx2x2").exists, 30, "the round record")
        took = time.monotonic() - dropped
        print(f"host drop: round recorded {took:.1f} s after the link went down")
        assert run.wait(timeout=300) != 0
    finally:
        cluster.netns("node2", "ip", "link", "set", "eth0", "up")
    output = (tmp_path / "run.log").read_text()
    record = round_record(results, "run_drop", "digits_cnn_CPUx2x2", 1)
    assert record["status"] == "failed"
    assert "node2" in record["reason"], record["reason"]
    assert took < 30
    assert "node2" in output and "UNREACHABLE" in output
    # node1 was stopped by its launcher; node2 stopped its own ranks when it lost node 0 (nobody could reach it).
    assert round_record(results, "run_drop", "digits_cnn_CPUx1x1", 1)["status"] == "success"
    wait_for(lambda: leftovers("run_drop") == [], 30, "node2 to stop its own processes")


def test_an_interrupted_controller_leaves_nothing_after_cleanup(cluster: Cluster, results: Path, tmp_path: Path):
    run = start_on(cluster, results, "run_sigint", "-e", cases_arg(LONG), log=tmp_path / "run.log")
    _rank_running(cluster, "run_sigint", "node2", 3)
    interrupt(run)
    cleanup = run_playbook(REPO, "playbooks/cleanup.yml", "-i", str(cluster.inventory),
                           "-e", "perfplay_run_id=run_sigint")
    assert cleanup.rc == 0, cleanup.output[-5000:]
    wait_for(lambda: leftovers("run_sigint") == [], 15, "every process of the run to stop")


def test_host_keys_are_verified_and_become_says_why():
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True,
                             timeout=SHORT_S).stdout
    for name in tracked.split():
        if name.startswith("tests/") or not name.endswith((".yml", ".yaml", ".cfg", ".py", ".sh")):
            continue
        text = (REPO / name).read_text()
        assert "StrictHostKeyChecking=no" not in text, name
        assert "host_key_checking = False" not in text, name
        lines = text.splitlines()
        for number, line in enumerate(lines):
            if line.strip() == "become: true":
                above = lines[number - 1].strip()
                assert above.startswith("#"), f"{name}:{number + 1}: say why become is needed"
