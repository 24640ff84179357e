"""The node launcher with real ranks: success, a killed rank, a timeout, a signal, device visibility."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from case_runners.config.plan import make_plan
from case_runners.launch.node import GRACE_S, NodeLauncher, NodeSpec, Rank, rank_env
from case_runners.paths import project_root


def resolved(tmp_path: Path, nproc: int, **overrides) -> Path:
    plan = make_plan({"vendor": "cpu", "results_dir": str(tmp_path),
                      "cases": [{"case": "digits_cnn", "nproc": nproc, "overrides": overrides}]})
    assert plan["ok"], plan["errors"]
    return Path(plan["cases"][0]["config_path"])


def start_launcher(config: Path, log_dir: Path, timeout: float | None = None) -> subprocess.Popen:
    argv = [sys.executable, "-m", "case_runners", "launch", "--config", str(config), "--log-dir", str(log_dir),
            "--run-id", "launcher-test"] + (["--timeout", str(timeout)] if timeout else [])
    return subprocess.Popen(argv, cwd=project_root(), stdout=subprocess.PIPE, text=True)


def wait_for_event(path: Path, event: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and f'"event": "{event}"' in path.read_text():
            return
        time.sleep(0.1)
    raise AssertionError(f"{event} not seen in {path}")


def rank_pids(log_dir: Path) -> list[int]:
    """Pids of this test's workers, found by their argv."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if proc.name.isdigit() and b"worker" in argv and str(log_dir).encode() in argv:
            pids.append(int(proc.name))
    return pids


def test_two_ranks_succeed_and_leave_the_flagperf_layout(tmp_path):
    config = resolved(tmp_path, 2, synthetic=True, max_steps=5)
    log_dir = tmp_path / "node"
    proc = start_launcher(config, log_dir)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    result = json.loads((log_dir / "node_result.json").read_text())
    assert result["status"] == "success" and set(result["ranks"]) == {"0", "1"}
    # A single node: no rendezvous, torch's port is the free master port, no NIC chosen.
    assert result["host"] == result["node_name"] == result["hostname"]
    assert result["master"] == f"127.0.0.1:{result['torch_port']}" and result["nic"] is None
    for rank in (0, 1):
        assert "[PerfLog]" in (log_dir / f"rank{rank}.out.log").read_text()
        assert (log_dir / f"rank{rank}.events.jsonl").exists()


def test_a_killed_rank_fails_the_node_naming_the_rank_and_stops_the_others(tmp_path):
    config = resolved(tmp_path, 2, synthetic=True, max_steps=1000000)
    log_dir = tmp_path / "node"
    proc = start_launcher(config, log_dir)
    try:
        wait_for_event(log_dir / "rank1.events.jsonl", "TRAIN_START")
        victim = next(pid for pid in rank_pids(log_dir)
                      if f"rank1" in Path(f"/proc/{pid}/fd/1").resolve().name)
        os.kill(victim, signal.SIGKILL)
        killed_at = time.monotonic()
        proc.wait(timeout=30)
        assert time.monotonic() - killed_at < 10
    finally:
        proc.kill()
    result = json.loads((log_dir / "node_result.json").read_text())
    assert proc.returncode == 1
    assert result["status"] == "failed" and "rank 1" in result["reason"] and "SIGKILL" in result["reason"]
    assert rank_pids(log_dir) == []


def test_timeout_stops_every_rank(tmp_path):
    config = resolved(tmp_path, 2, synthetic=True, max_steps=1000000)
    log_dir = tmp_path / "node"
    proc = start_launcher(config, log_dir, timeout=6)
    proc.wait(timeout=60)
    result = json.loads((log_dir / "node_result.json").read_text())
    assert proc.returncode == 124 and result["status"] == "timeout" and "timeout of 6 s" in result["reason"]
    assert rank_pids(log_dir) == []


def test_sigterm_to_the_launcher_stops_its_ranks(tmp_path):
    config = resolved(tmp_path, 2, synthetic=True, max_steps=1000000)
    log_dir = tmp_path / "node"
    proc = start_launcher(config, log_dir)
    wait_for_event(log_dir / "rank0.events.jsonl", "TRAIN_START")
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    result = json.loads((log_dir / "node_result.json").read_text())
    assert proc.returncode == 130 and result["status"] == "interrupted" and "SIGTERM" in result["reason"]
    assert rank_pids(log_dir) == []


def test_a_stopped_rank_is_continued_so_that_it_handles_the_stop_signal(tmp_path):
    config = resolved(tmp_path, 2, synthetic=True, max_steps=1000000)
    log_dir = tmp_path / "node"
    proc = start_launcher(config, log_dir)
    try:
        wait_for_event(log_dir / "rank1.events.jsonl", "TRAIN_START")
        for pid in rank_pids(log_dir):
            os.kill(pid, signal.SIGSTOP)
        proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        proc.wait(timeout=30)
        # Without SIGCONT the stopped ranks would only die by SIGKILL, after the grace period.
        assert time.monotonic() - signalled < GRACE_S - 0.5
    finally:
        proc.kill()
    assert json.loads((log_dir / "node_result.json").read_text())["status"] == "interrupted"
    assert rank_pids(log_dir) == []


def spec(scope: str, nproc: int = 4, env: str = "CUDA_VISIBLE_DEVICES") -> NodeSpec:
    return NodeSpec(config_path=Path("c.json"), log_dir=Path("."), node_rank=1, master_addr="10.0.0.1",
                    master_port=29500, timeout_s=10, run_id="r", nnodes=2, nproc=nproc,
                    vendor_info={"device": "cuda", "visible_devices_env": env, "visible_devices_scope": scope})


@pytest.mark.parametrize(("scope", "visible", "index"), [("node", "0,1,2,3", "2"), ("rank", "2", "0")])
def test_visible_devices_per_vendor_scope(scope, visible, index):
    env = rank_env(spec(scope), local_rank=2, base={})
    assert env["CUDA_VISIBLE_DEVICES"] == visible and env["PERFPLAY_DEVICE_INDEX"] == index
    assert (env["RANK"], env["WORLD_SIZE"], env["NODE_RANK"], env["LOCAL_RANK"]) == ("6", "8", "1", "2")


def test_a_host_restricted_device_list_is_honoured():
    env = rank_env(spec("node", nproc=2), local_rank=1, base={"CUDA_VISIBLE_DEVICES": "4,5,6,7"})
    assert env["CUDA_VISIBLE_DEVICES"] == "4,5" and env["PERFPLAY_DEVICE_INDEX"] == "1"


def test_a_failed_rank_s_own_reason_follows_its_exit_in_the_node_s_reason(tmp_path: Path):
    """A rank that wrote why it failed (a bad input, a traceback) gets that line after "exited with code N"."""
    spec = NodeSpec(config_path=tmp_path / "resolved.json", log_dir=tmp_path, node_rank=0, master_addr="127.0.0.1",
                    master_port=0, timeout_s=1, run_id="cause", nnodes=1, nproc=1)
    launcher, rank = NodeLauncher(spec), Rank(0, 0, process=None, log=None)
    assert launcher.rank_cause(rank) == "", "no result: nothing to add"
    (tmp_path / "rank0.result.json").write_text(json.dumps(
        {"status": "failed", "reason": "Traceback (most recent call last):\n  ...\nValueError: bad shard\n"}))
    assert launcher.rank_cause(rank) == ": ValueError: bad shard"
    (tmp_path / "rank0.result.json").write_text(json.dumps({"status": "success", "reason": None}))
    assert launcher.rank_cause(rank) == ""
