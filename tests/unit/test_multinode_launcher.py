"""Two launchers on 127.0.0.1 as node 0 and node 1 of a real digits_cnn round (nnodes=2, nproc=1):
rendezvous, torch's port, the NIC, failure propagation, lost hosts, and rendezvous errors."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from case_runners.core.defaults import HEARTBEAT_TIMEOUT_S, RDZV_TIMEOUT_S
from case_runners.core.netutil import NoInterfaceError, free_port, interface_for
from case_runners.core.paths import project_root
from case_runners.launch.node import NodeLauncher, NodeSpec, RunState, choose_nic, rank_env
from process_helpers import REAPED_S, kill_run
from test_launcher import rank_pids, resolved, wait_for_event

NAMES = {0: "node1", 1: "node2"}
# The tests' heartbeat and rendezvous timeouts, shorter than the defaults (a quicker test); every bound below is
# derived from them: a lower bound holds on any machine, an upper one is a fraction of a timeout not waited out.
HEARTBEAT_S = 3.0
RDZV_S = 3.0
assert HEARTBEAT_S < HEARTBEAT_TIMEOUT_S and RDZV_S < RDZV_TIMEOUT_S


def two_node_config(tmp_path: Path, nnodes: int = 2, **overrides) -> Path:
    """digits_cnn resolved for 1 rank, then declared a round of nnodes nodes (the cpu vendor has no such
    scale: the launcher only reads nnodes and nproc)."""
    config = json.loads(resolved(tmp_path, 1, synthetic=True, **overrides).read_text())
    config.update(nnodes=nnodes, case_id=f"digits_cnn_CPUx{nnodes}x1")
    path = tmp_path / f"resolved_{nnodes}x1.json"
    path.write_text(json.dumps(config))
    return path


class Node:
    """One launcher process playing node `rank` of the round."""

    def __init__(self, config: Path, tmp_path: Path, rank: int, port: int, *args: str, run_id: str | None = None,
                 name: str | None = None, dir_name: str | None = None) -> None:
        self.rank, self.name = rank, name or NAMES[rank]
        self.run_id = run_id or f"multinode-{tmp_path.name[-12:]}"
        self.log_dir = tmp_path / (dir_name or f"{self.name}_noderank{rank}")
        argv = [sys.executable, "-m", "case_runners", "launch", "--config", str(config),
                "--log-dir", str(self.log_dir), "--node-rank", str(rank), "--master-addr", "127.0.0.1",
                "--master-port", str(port), "--node-name", self.name, "--run-id", self.run_id, "--no-monitors", *args]
        env = {k: v for k, v in os.environ.items() if k not in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")}
        self.proc = subprocess.Popen(argv, cwd=project_root(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        self.started = time.monotonic()
        self.ended: float | None = None

    def result(self, timeout: float = 300) -> dict:
        """Wait for the launcher; its node_result.json (also checked against what it printed)."""
        out, err = self.proc.communicate(timeout=timeout)
        self.ended = self.ended or time.monotonic()
        result = json.loads((self.log_dir / "node_result.json").read_text())
        assert json.loads(out) == result, err
        return result

    def ended_within(self, since: float, timeout: float = 300) -> float:
        """Seconds from `since` until the launcher exited."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        self.ended = time.monotonic()
        return self.ended - since

    def rank_pid(self) -> int:
        (pid,) = rank_pids(self.log_dir)
        return pid

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(timeout=REAPED_S)
        for pid in rank_pids(self.log_dir):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        kill_run(self.run_id)


@pytest.fixture
def nodes():
    started: list[Node] = []
    yield started
    for node in started:
        node.kill()


def start(nodes: list[Node], *args, **kwargs) -> Node:
    node = Node(*args, **kwargs)
    nodes.append(node)
    return node


def test_two_nodes_meet_at_node_0_and_succeed_on_the_port_it_picked(tmp_path, nodes):
    config, port = two_node_config(tmp_path, max_steps=5), free_port()
    node1 = start(nodes, config, tmp_path, 1, port)  # before node 0: it retries until node 0 listens
    time.sleep(0.5)
    node0 = start(nodes, config, tmp_path, 0, port)
    results = [node0.result(), node1.result()]
    for rank, result in enumerate(results):
        assert result["status"] == "success", result
        assert (result["node_rank"], result["host"], result["node_name"]) == (rank, NAMES[rank], NAMES[rank])
        assert result["hostname"] and result["master"] == f"127.0.0.1:{port}" and result["nic"] == "lo"
        assert list(result["ranks"]) == [str(rank)] and result["ranks"][str(rank)]["exit_code"] == 0
    torch_port = results[0]["torch_port"]
    assert isinstance(torch_port, int) and torch_port != port and results[1]["torch_port"] == torch_port
    rank1 = json.loads((node1.log_dir / "rank1.result.json").read_text())
    assert rank1["world_size"] == 2


@pytest.mark.parametrize("victim", [1, 0])
def test_a_killed_rank_stops_every_node_naming_the_rank_and_its_node(tmp_path, nodes, victim):
    config, port = two_node_config(tmp_path, max_steps=1000000), free_port()
    both = [start(nodes, config, tmp_path, 0, port), start(nodes, config, tmp_path, 1, port)]
    for node in both:
        wait_for_event(node.log_dir / f"rank{node.rank}.events.jsonl", "TRAIN_START")
    os.kill(both[victim].rank_pid(), signal.SIGKILL)
    killed_at = time.monotonic()
    took = [node.ended_within(killed_at) for node in both]
    results = [node.result() for node in both]
    print(f"victim node {victim}: launchers ended {took[0]:.2f} s / {took[1]:.2f} s after the kill")
    cause = f"rank {victim} on {NAMES[victim]} was killed by SIGKILL"
    for rank, result in enumerate(results):
        assert both[rank].proc.returncode == 1 and result["status"] == "failed", result
        expected = cause if rank == victim else f"stopped: node {victim} ({NAMES[victim]}) failed: {cause}"
        assert result["reason"] == expected
        assert rank_pids(both[rank].log_dir) == []


def test_a_host_that_drops_off_is_lost_by_node_0_and_fences_itself(tmp_path, nodes):
    config, port = two_node_config(tmp_path, max_steps=1000000), free_port()
    both = [start(nodes, config, tmp_path, rank, port, "--heartbeat-timeout-s", f"{HEARTBEAT_S:g}") for rank in (0, 1)]
    for node in both:
        wait_for_event(node.log_dir / f"rank{node.rank}.events.jsonl", "TRAIN_START")
    # The whole of node 1 freezes, as a host that falls off the network looks from node 0.
    frozen_rank = both[1].rank_pid()
    os.kill(both[1].proc.pid, signal.SIGSTOP)
    os.kill(frozen_rank, signal.SIGSTOP)
    frozen_at = time.monotonic()
    took = both[0].ended_within(frozen_at)
    result0 = both[0].result()
    print(f"node 0 ended {took:.2f} s after node 1 froze (heartbeat timeout {HEARTBEAT_S:g} s)")
    assert result0["status"] == "failed"
    assert result0["reason"] == f"stopped: node 1 (node2) lost contact (no heartbeat for {HEARTBEAT_S:g} s)"
    assert took >= HEARTBEAT_S, "a node is lost only after the heartbeat timeout"
    assert rank_pids(both[0].log_dir) == []
    # Node 1 comes back: it finds node 0 gone and stops its own (still frozen) rank.
    assert rank_pids(both[1].log_dir) == [frozen_rank]
    os.kill(both[1].proc.pid, signal.SIGCONT)
    resumed_at = time.monotonic()
    took = both[1].ended_within(resumed_at)
    result1 = both[1].result()
    print(f"node 1 ended {took:.2f} s after it resumed")
    assert result1["status"] == "failed"
    assert result1["reason"].startswith(f"lost contact with node 0 (node1) at 127.0.0.1:{port} (")
    assert rank_pids(both[1].log_dir) == []


def test_an_interrupted_node_stops_the_others(tmp_path, nodes):
    config, port = two_node_config(tmp_path, max_steps=1000000), free_port()
    both = [start(nodes, config, tmp_path, rank, port) for rank in (0, 1)]
    for node in both:
        wait_for_event(node.log_dir / f"rank{node.rank}.events.jsonl", "TRAIN_START")
    both[1].proc.send_signal(signal.SIGTERM)
    results = [node.result() for node in both]
    assert (results[1]["status"], results[1]["reason"]) == ("interrupted", "launcher received SIGTERM")
    assert both[1].proc.returncode == 130
    assert results[0]["status"] == "failed"
    assert results[0]["reason"] == "stopped: node 1 (node2) was interrupted: launcher received SIGTERM"
    assert all(rank_pids(node.log_dir) == [] for node in both)


def test_the_case_timeout_stops_both_nodes_as_a_timeout(tmp_path, nodes):
    config, port = two_node_config(tmp_path, max_steps=1000000), free_port()
    timeout = 8.0
    both = [start(nodes, config, tmp_path, rank, port, "--timeout-s", f"{timeout:g}") for rank in (0, 1)]
    results = [node.result() for node in both]
    for node, result in zip(both, results):
        assert node.proc.returncode == 124 and result["status"] == "timeout", result
        assert f"case timeout of {timeout:g} s reached" in result["reason"]
        assert rank_pids(node.log_dir) == []


def test_a_wrong_port_fails_both_nodes_after_the_rendezvous_timeout(tmp_path, nodes):
    config, port, wrong = two_node_config(tmp_path), free_port(), free_port()
    node0 = start(nodes, config, tmp_path, 0, port, "--rdzv-timeout-s", f"{RDZV_S:g}")
    node1 = start(nodes, config, tmp_path, 1, wrong, "--rdzv-timeout-s", f"{RDZV_S:g}")
    results = [node0.result(), node1.result()]
    took = [node.ended - node.started for node in (node0, node1)]
    print(f"rendezvous failures after {took[0]:.2f} s (node 0) and {took[1]:.2f} s (node 1)")
    assert all(t >= RDZV_S for t in took), "they fail after the rendezvous timeout, not before"
    assert results[1]["reason"] == (f"rendezvous: cannot reach node 0 at 127.0.0.1:{wrong} within {RDZV_S:g} s "
                                    "(Connection refused) — check perfplay_master_port and the firewall")
    assert results[0]["reason"] == (f"rendezvous: node(s) 1 did not join node 0 (node1) at 127.0.0.1:{port} "
                                    f"within {RDZV_S:g} s")
    for node, result in zip((node0, node1), results):
        assert node.proc.returncode == 1 and result["status"] == "failed" and result["ranks"] == {}


def test_a_node_of_another_run_is_rejected(tmp_path, nodes):
    config, port = two_node_config(tmp_path), free_port()
    waits = {0: 20.0, 1: 120.0}  # node 0's: node 1 surely joins within it; node 1's: never waited out
    node0 = start(nodes, config, tmp_path, 0, port, "--rdzv-timeout-s", f"{waits[0]:g}", run_id="run-aaaa")
    node1 = start(nodes, config, tmp_path, 1, port, "--rdzv-timeout-s", f"{waits[1]:g}", run_id="run-bbbb")
    result1 = node1.result()
    # Rejected at once: waiting for node 0 would take node 1's rendezvous timeout.
    assert node1.ended - node1.started < waits[1] / 2
    assert result1["status"] == "failed"
    assert result1["reason"] == (f"rendezvous: node 0 (node1) at 127.0.0.1:{port} rejected node 1 (node2): "
                                 "its run id 'run-bbbb' is not node 0's 'run-aaaa'")
    result0 = node0.result()
    assert result0["reason"].startswith(f"rendezvous: node(s) 1 did not join node 0 (node1) at 127.0.0.1:{port} "
                                        f"within {waits[0]:g} s; rejected: node 1 (node2) from 127.0.0.1:")
    assert result0["reason"].endswith("its run id 'run-bbbb' is not node 0's 'run-aaaa'")


def test_a_node_rank_taken_twice_is_rejected_and_a_missing_node_aborts_the_joined_ones(tmp_path, nodes):
    config, port = two_node_config(tmp_path, nnodes=3), free_port()
    node0 = start(nodes, config, tmp_path, 0, port, "--rdzv-timeout-s", "10")
    both = {"node2": start(nodes, config, tmp_path, 1, port, "--rdzv-timeout-s", "10", name="node2"),
            "node3": start(nodes, config, tmp_path, 1, port, "--rdzv-timeout-s", "10", name="node3", dir_name="dup")}
    results = {name: node.result() for name, node in both.items()}
    # Whichever joined first holds rank 1; the other is rejected, naming it.
    rejected = [name for name, result in results.items()
                if result["reason"].startswith(f"rendezvous: node 0 (node1) at 127.0.0.1:{port} rejected")]
    assert len(rejected) == 1, results
    (loser,) = rejected
    (winner,) = set(both) - {loser}
    assert results[loser]["reason"].startswith(
        f"rendezvous: node 0 (node1) at 127.0.0.1:{port} rejected node 1 ({loser}): "
        f"node rank 1 has already joined from {winner} (127.0.0.1:")
    missing = f"rendezvous: node(s) 2 did not join node 0 (node1) at 127.0.0.1:{port} within 10 s"
    assert node0.result()["reason"].startswith(missing)
    assert results[winner]["reason"].startswith(missing)  # the joined node fails with node 0's reason


def test_a_master_port_in_use_fails_node_0_at_once(tmp_path, nodes):
    import socket

    config = two_node_config(tmp_path)
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = start(nodes, config, tmp_path, 0, port).result(timeout=20)
    assert result["status"] == "failed"
    assert result["reason"] == (f"master port {port} on 127.0.0.1 is in use or not bindable: Address already in use "
                                "(run var perfplay_master_port)")


def test_interface_for_loopback_and_unknown_hosts():
    assert interface_for("127.0.0.1") == "lo"
    with pytest.raises(NoInterfaceError, match="no route from this host to no-such-host.invalid"):
        interface_for("no-such-host.invalid")


def nic_spec(nic: str | None, backend: str = "nccl") -> NodeSpec:
    return NodeSpec(config_path=Path("c.json"), log_dir=Path("."), node_rank=1, master_addr="10.0.0.1",
                    master_port=29500, timeout_s=10, run_id="r", nnodes=2, nproc=1,
                    vendor_info={"device": "cuda", "dist_backend": backend}, nic=nic)


def nic_env_of(nic: str | None, base: dict[str, str], backend: str = "nccl") -> dict[str, str]:
    """A rank's environment once the launcher chose `nic` and met node 0, which picked torch's port 41000."""
    return rank_env(nic_spec(nic, backend), RunState(torch_port=41000, nic=nic), 0, base)


def test_the_nic_goes_to_gloo_and_the_vendor_backend_unless_the_host_names_one():
    env = nic_env_of("eth1", {}, backend="hccl")
    assert (env["GLOO_SOCKET_IFNAME"], env["HCCL_SOCKET_IFNAME"]) == ("eth1", "eth1"), "any backend's convention"
    assert "NCCL_SOCKET_IFNAME" not in env
    env = nic_env_of("eth1", {})
    assert (env["GLOO_SOCKET_IFNAME"], env["NCCL_SOCKET_IFNAME"]) == ("eth1", "eth1")
    assert env["MASTER_PORT"] == "41000" and env["MASTER_ADDR"] == "10.0.0.1"
    env = nic_env_of("eth1", {"NCCL_SOCKET_IFNAME": "ib0"})
    assert (env["GLOO_SOCKET_IFNAME"], env["NCCL_SOCKET_IFNAME"]) == ("eth1", "ib0")
    assert "GLOO_SOCKET_IFNAME" not in nic_env_of(None, {})
    assert rank_env(nic_spec(None), RunState(), 0, {})["MASTER_PORT"] == "29500", "one node: its master port"


def test_the_nic_is_detected_only_on_a_multi_node_round_the_host_did_not_configure():
    spec = dataclasses.replace(nic_spec(None), master_addr="127.0.0.1")
    assert choose_nic(spec, {}) == "lo"
    assert choose_nic(spec, {"GLOO_SOCKET_IFNAME": "eth2", "NCCL_SOCKET_IFNAME": "eth2"}) == "eth2"
    assert choose_nic(dataclasses.replace(spec, nnodes=1), {}) is None
    assert choose_nic(dataclasses.replace(spec, nic="ib1"), {}) == "ib1", "--nic wins"
    with pytest.raises(NoInterfaceError, match=r"on .*: no route from this host to no-such-host.invalid.*--nic"):
        choose_nic(dataclasses.replace(spec, master_addr="no-such-host.invalid"), {})


def test_the_spec_is_fixed_and_what_the_launcher_learns_is_its_run_state():
    spec = nic_spec(None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.nnodes = 1  # type: ignore[misc]
    assert NodeLauncher(spec).state == RunState(torch_port=None, nic=None)
