"""The node launcher with real ranks: success, a killed rank, a timeout, a signal, its pid files and monitors, a
killed launcher, a planted symlink, device visibility. Every process a test starts is killed at its end."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from case_runners.core import pidfiles
from case_runners.core.paths import project_root
from case_runners.core.processes import identify, is_run_process
from case_runners.launch.node import NodeLauncher, NodeSpec, Rank, RunState, rank_env
from case_runners.plan.run_plan import make_plan
from case_runners.rank.env import omp_num_threads
from process_helpers import REAPED_S, kill_run, run_pids, wait_for
from record_helpers import rank_result


def resolved(tmp_path: Path, nproc: int, **overrides) -> Path:
    plan = make_plan({"vendor": "cpu", "results_dir": str(tmp_path),
                      "cases": [{"case": "digits_cnn", "nproc": nproc, "overrides": overrides}]})
    assert plan["ok"], plan["errors"]
    return Path(plan["cases"][0]["config_path"])


def rank_pids(log_dir: Path) -> list[int]:
    """Pids of this test's workers, found by their argv."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if proc.name.isdigit() and b"worker" in argv and str(log_dir).encode() in argv and \
                identify(int(proc.name)) is not None:
            pids.append(int(proc.name))
    return pids


class Launcher:
    """One `case_runners launch` of a test, with a run id of its own."""

    def __init__(self, config: Path, log_dir: Path, timeout: float | None = None, monitors: bool = False) -> None:
        self.run_id = f"launcher-{uuid.uuid4().hex[:8]}"
        self.log_dir = log_dir
        argv = [sys.executable, "-m", "case_runners", "launch", "--config", str(config), "--log-dir", str(log_dir),
                "--run-id", self.run_id, "--monitor-interval-s", "0.2"] + ([] if monitors else ["--no-monitors"]) + \
            (["--timeout-s", str(timeout)] if timeout else [])
        self.proc = subprocess.Popen(argv, cwd=project_root(), stdout=subprocess.PIPE, text=True)

    def result(self, timeout: float = 600) -> dict:
        self.proc.communicate(timeout=timeout)
        return json.loads((self.log_dir / "node_result.json").read_text())

    def stop_everything(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=REAPED_S)
        kill_run(self.run_id)


@pytest.fixture
def launchers():
    """start(config, log_dir, ...) -> Launcher; every process of every launcher is killed at the end."""
    started: list[Launcher] = []

    def start(*args, **kwargs) -> Launcher:
        started.append(Launcher(*args, **kwargs))
        return started[-1]

    yield start
    for launcher in started:
        launcher.stop_everything()


def wait_for_event(path: Path, event: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and f'"event": "{event}"' in path.read_text():
            return
        time.sleep(0.1)
    raise AssertionError(f"{event} not seen in {path}")


def test_two_ranks_succeed_and_leave_the_flagperf_layout(tmp_path, launchers):
    config = resolved(tmp_path, 2, synthetic=True, max_steps=5)
    log_dir = tmp_path / "node"
    launcher = launchers(config, log_dir, monitors=True)
    result = launcher.result()
    assert launcher.proc.returncode == 0
    assert result["status"] == "success" and set(result["ranks"]) == {"0", "1"}
    # A single node: no rendezvous, torch's port is the free master port, no NIC chosen.
    assert result["host"] == result["node_name"] == result["hostname"]
    assert result["master"] == f"127.0.0.1:{result['torch_port']}" and result["nic"] is None
    for rank in (0, 1):
        assert "[PerfLog]" in (log_dir / f"rank{rank}.out.log").read_text()
        assert (log_dir / f"rank{rank}.events.jsonl").exists()
    # The launcher ran the round's monitors, and left neither them nor a pid file behind.
    for monitor in ("host", "cpu"):
        assert (log_dir / f"{monitor}_monitor.jsonl").stat().st_size > 0
    assert list(log_dir.glob("*.pid")) == [] and run_pids(launcher.run_id) == []
    assert (os.stat(log_dir).st_mode & 0o777) == 0o700


def test_while_it_runs_every_process_is_in_a_pid_file_with_its_start_time(tmp_path, launchers):
    config = resolved(tmp_path, 2, synthetic=True, max_steps=1000000)
    log_dir = tmp_path / "node"
    launcher = launchers(config, log_dir, monitors=True)
    wait_for_event(log_dir / "rank1.events.jsonl", "TRAIN_START")
    recorded = {path.name.split(".")[0]: pidfiles.read(path) for path in log_dir.glob("*.pid")}
    assert set(recorded) == {"launcher", "rank0", "rank1", "host_monitor", "cpu_monitor"}
    assert recorded["launcher"]["id"].pid == launcher.proc.pid
    for doc in recorded.values():
        assert doc["run_id"] == launcher.run_id and is_run_process(doc["id"], launcher.run_id)
    assert sorted(doc["id"].pid for doc in recorded.values()) == run_pids(launcher.run_id)


def test_a_killed_rank_fails_the_node_naming_the_rank_and_stops_the_others(tmp_path, launchers):
    config = resolved(tmp_path, 2, synthetic=True, max_steps=1000000)
    log_dir = tmp_path / "node"
    launcher = launchers(config, log_dir)
    wait_for_event(log_dir / "rank1.events.jsonl", "TRAIN_START")
    victim = next(pid for pid in rank_pids(log_dir) if "rank1" in Path(f"/proc/{pid}/fd/1").resolve().name)
    os.kill(victim, signal.SIGKILL)
    result = launcher.result()
    assert launcher.proc.returncode == 1
    assert result["status"] == "failed" and "rank 1" in result["reason"] and "SIGKILL" in result["reason"]
    # rank 0 ended on its own (its collective broke) or by SIGTERM, within its grace, not by SIGKILL after it
    assert result["ranks"]["0"]["exit_code"] != -signal.SIGKILL
    assert rank_pids(log_dir) == [] and run_pids(launcher.run_id) == []


def test_timeout_stops_every_rank(tmp_path, launchers):
    config = resolved(tmp_path, 2, synthetic=True, max_steps=1000000)
    log_dir = tmp_path / "node"
    timeout = 6.0
    launcher = launchers(config, log_dir, timeout=timeout)
    result = launcher.result()
    assert launcher.proc.returncode == 124 and result["status"] == "timeout"
    assert f"timeout of {timeout:g} s" in result["reason"]
    assert rank_pids(log_dir) == [] and run_pids(launcher.run_id) == []


def test_sigterm_to_the_launcher_stops_its_ranks(tmp_path, launchers):
    config = resolved(tmp_path, 2, synthetic=True, max_steps=1000000)
    log_dir = tmp_path / "node"
    launcher = launchers(config, log_dir)
    wait_for_event(log_dir / "rank0.events.jsonl", "TRAIN_START")
    launcher.proc.send_signal(signal.SIGTERM)
    result = launcher.result()
    assert launcher.proc.returncode == 130 and result["status"] == "interrupted" and "SIGTERM" in result["reason"]
    assert rank_pids(log_dir) == [] and run_pids(launcher.run_id) == []


def test_a_stopped_rank_is_continued_so_that_it_handles_the_stop_signal(tmp_path, launchers):
    config = resolved(tmp_path, 2, synthetic=True, max_steps=1000000)
    log_dir = tmp_path / "node"
    launcher = launchers(config, log_dir)
    wait_for_event(log_dir / "rank1.events.jsonl", "TRAIN_START")
    for pid in rank_pids(log_dir):
        os.kill(pid, signal.SIGSTOP)
    launcher.proc.send_signal(signal.SIGTERM)
    result = launcher.result()
    assert result["status"] == "interrupted"
    # Without SIGCONT the stopped ranks would only die by SIGKILL after the grace period; with it they run, and end
    # by their SIGTERM handler (143) or, in a broken collective, on their own (1).
    codes = [r["exit_code"] for r in result["ranks"].values()]
    assert 128 + signal.SIGTERM in codes and -signal.SIGKILL not in codes and None not in codes, codes
    assert rank_pids(log_dir) == []


def test_the_ranks_of_a_stopped_launcher_end_themselves_at_the_round_deadline(tmp_path, launchers):
    """SIGSTOP leaves the launcher alive but deaf: no PDEATHSIG, no timeout of its own. Its ranks end by themselves
    at the round's deadline (case timeout + MONITOR_GRACE_S), as the monitors do."""
    from case_runners.launch.node import MONITOR_GRACE_S, RANK_EXIT_GRACE_S
    timeout = 4.0
    # No epoch limit: on an idle host digits' 30 epochs end in under 3 s, before the deadline.
    config = resolved(tmp_path, 1, synthetic=True, max_steps=1000000, max_epochs=0)
    log_dir = tmp_path / "node"
    launcher = launchers(config, log_dir, timeout=timeout)
    try:
        assert wait_for(lambda: rank_pids(log_dir)), "the rank started"
        launcher.proc.send_signal(signal.SIGSTOP)
        stopped_at = time.monotonic()
        # A bound on a hang, not on speed: the deadline plus the rank's stop time, and a loaded host's slack.
        bound = timeout + MONITOR_GRACE_S + RANK_EXIT_GRACE_S + 120
        assert wait_for(lambda: rank_pids(log_dir) == [], timeout=bound), "the ranks of a stopped launcher ran on"
        assert time.monotonic() - stopped_at >= timeout, "they ran to the deadline, not stopped by something else"
        reason = json.loads((log_dir / "rank0.result.json").read_text())["reason"]
        assert "past the round's deadline" in reason and "ended by the rank itself" in reason, reason
    finally:
        launcher.proc.send_signal(signal.SIGCONT)
        launcher.stop_everything()


def test_a_killed_launcher_takes_its_ranks_and_monitors_with_it(tmp_path, launchers):
    """SIGKILL leaves the launcher no time to stop anything: the ranks die with it (PDEATHSIG) and the monitors
    see their owner gone. Nothing of the round is left, without any cleanup."""
    config = resolved(tmp_path, 2, synthetic=True, max_steps=1000000)
    log_dir = tmp_path / "node"
    launcher = launchers(config, log_dir, monitors=True)
    wait_for_event(log_dir / "rank1.events.jsonl", "TRAIN_START")
    assert len(run_pids(launcher.run_id)) == 5
    launcher.proc.kill()
    launcher.proc.wait(timeout=REAPED_S)
    assert wait_for(lambda: run_pids(launcher.run_id) == []), run_pids(launcher.run_id)


def test_a_planted_symlink_in_the_node_dir_is_never_written_through(tmp_path, launchers):
    config = resolved(tmp_path, 1, synthetic=True, max_steps=2)
    log_dir = tmp_path / "node"
    log_dir.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (log_dir / "rank0.out.log").symlink_to(victim)
    result = launchers(config, log_dir).result()
    assert result["status"] == "failed" and "refusing to follow a symlink" in result["reason"]
    assert victim.read_text() == "precious\n"


def spec(scope: str, nproc: int = 4, env: str = "CUDA_VISIBLE_DEVICES") -> NodeSpec:
    return NodeSpec(config_path=Path("c.json"), log_dir=Path("."), node_rank=1, master_addr="10.0.0.1",
                    master_port=29500, timeout_s=10, run_id="r", nnodes=2, nproc=nproc,
                    vendor_info={"device": "cuda", "visible_devices_env": env, "visible_devices_scope": scope})


@pytest.mark.parametrize(("scope", "visible", "index"), [("node", "0,1,2,3", "2"), ("rank", "2", "0")])
def test_visible_devices_per_vendor_scope(scope, visible, index):
    env = rank_env(spec(scope), RunState(), local_rank=2, base={})
    assert env["CUDA_VISIBLE_DEVICES"] == visible and env["PERFPLAY_DEVICE_INDEX"] == index
    assert (env["RANK"], env["WORLD_SIZE"], env["NODE_RANK"], env["LOCAL_RANK"]) == ("6", "8", "1", "2")


def test_a_host_restricted_device_list_is_honoured():
    env = rank_env(spec("node", nproc=2), RunState(), local_rank=1, base={"CUDA_VISIBLE_DEVICES": "4,5,6,7"})
    assert env["CUDA_VISIBLE_DEVICES"] == "4,5" and env["PERFPLAY_DEVICE_INDEX"] == "1"


@pytest.mark.parametrize(("device", "threads"), [("cpu", str(max(1, (os.cpu_count() or 1) // 2))), ("cuda", None)])
def test_a_cpu_backed_vendor_s_ranks_share_the_cores(device, threads):
    """The test chip (vendor.yaml device: cpu, its own name and backend) splits the cores as the cpu vendor does;
    a user's OMP_NUM_THREADS wins; a GPU vendor's ranks keep torch's default."""
    node = dataclasses.replace(spec("node", nproc=2, env=""), vendor_info={
        "device": device, "dist_backend": "testccl", "visible_devices_env": "", "visible_devices_scope": "node"})
    assert rank_env(node, RunState(), local_rank=1, base={}).get("OMP_NUM_THREADS") == threads
    assert rank_env(node, RunState(), local_rank=1, base={"OMP_NUM_THREADS": "7"})["OMP_NUM_THREADS"] == "7"


def test_a_rank_on_torch_s_cpu_under_another_device_name_splits_and_records_its_threads(monkeypatch):
    """A chip whose vendor.yaml device is its own name but whose torch device is the CPU: the launcher set no
    OMP_NUM_THREADS, so the rank, which finds it CPU-backed, sets it as the launcher would for `device: cpu`, and
    its record holds it (not null) with torch's thread count."""
    import torch

    from case_runners.rank.start import set_cpu_threads, thread_settings

    node = dataclasses.replace(spec("node", nproc=2, env=""), vendor_info={
        "device": "chipx", "dist_backend": "testccl", "visible_devices_env": "", "visible_devices_scope": "node"})
    assert "OMP_NUM_THREADS" not in rank_env(node, RunState(), local_rank=1, base={})
    cpu = dataclasses.replace(node, vendor_info={**node.vendor_info, "device": "cpu"})
    expected = rank_env(cpu, RunState(), local_rank=1, base={})["OMP_NUM_THREADS"]
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = torch.get_num_threads()
    try:
        threads = omp_num_threads(os.environ, 2, "chipx", torch.device("cpu").type)  # as start_rank asks
        assert threads == expected
        set_cpu_threads(threads)
        assert thread_settings() == {"intra_op": int(expected), "omp_num_threads": expected}
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("host", [{}, {"OMP_NUM_THREADS": ""}, {"OMP_NUM_THREADS": "7"}])
def test_the_launcher_and_the_rank_split_the_threads_alike(host):
    """One rule: the OMP_NUM_THREADS the launcher gives a CPU-backed rank is the one the rank, started in the host's
    environment, would set itself (an empty value is unset for both, not passed on empty)."""
    node = dataclasses.replace(spec("node", nproc=2, env=""), vendor_info={
        "device": "cpu", "dist_backend": "gloo", "visible_devices_env": "", "visible_devices_scope": "node"})
    launched = rank_env(node, RunState(), local_rank=1, base=host)["OMP_NUM_THREADS"]
    assert launched == (host.get("OMP_NUM_THREADS") or str(max(1, (os.cpu_count() or 1) // 2)))
    assert omp_num_threads(host, 2, "cpu") in (None, launched)  # a rank started without the launcher: the same
    assert omp_num_threads({"OMP_NUM_THREADS": launched}, 2, "cpu") is None  # the launched rank keeps it


def test_a_failed_rank_s_own_reason_follows_its_exit_in_the_node_s_reason(tmp_path: Path):
    """A rank that wrote why it failed (a bad input, a traceback) gets that line after "exited with code N"."""
    spec = NodeSpec(config_path=tmp_path / "resolved.json", log_dir=tmp_path, node_rank=0, master_addr="127.0.0.1",
                    master_port=0, timeout_s=1, run_id="cause", nnodes=1, nproc=1)
    launcher, rank = NodeLauncher(spec), Rank(0, 0, process=None, log=None)
    assert launcher.rank_cause(rank) == "", "no result: nothing to add"
    (tmp_path / "rank0.result.json").write_text(json.dumps(
        {"schema": "perfplay.rank_result/1", "rank": 0, "world_size": 1, "status": "failed",
         "reason": "Traceback (most recent call last):\n  ...\nValueError: bad shard\n", "e2e_time": 1.0}))
    assert launcher.rank_cause(rank) == ": ValueError: bad shard"
    (tmp_path / "rank0.result.json").write_text(json.dumps(rank_result()))
    assert launcher.rank_cause(rank) == ""
