"""Start nproc local ranks of a case, watch them, stop them all on the first failure or on timeout.

Each rank is `python -m case_runners worker`, its stdout and stderr merged into rank<R>.out.log (FlagPerf's
layout). The launcher forwards SIGINT/SIGTERM/SIGHUP to its ranks and writes node_result.json.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from case_runners.paths import project_root

NODE_RESULT = "node_result.json"
NODE_SCHEMA = "perfplay.node_result/1"
POLL_S = 0.05
GRACE_S = 5.0
EXIT_CODES = {"success": 0, "failed": 1, "timeout": 124, "interrupted": 130}


@dataclass
class Rank:
    rank: int
    local_rank: int
    process: subprocess.Popen
    log: TextIO
    exit_code: int | None = None


@dataclass
class NodeSpec:
    config_path: Path
    log_dir: Path
    node_rank: int
    master_addr: str
    master_port: int
    timeout_s: float
    run_id: str
    nnodes: int
    nproc: int
    vendor_info: dict[str, Any] = field(default_factory=dict)


def rank_env(spec: NodeSpec, local_rank: int, base: dict[str, str]) -> dict[str, str]:
    """The environment of one rank: torch.distributed's variables, device visibility, threads."""
    env = dict(base)
    rank = spec.node_rank * spec.nproc + local_rank
    env.update(
        RANK=str(rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(spec.nnodes * spec.nproc),
        LOCAL_WORLD_SIZE=str(spec.nproc), NODE_RANK=str(spec.node_rank), GROUP_RANK=str(spec.node_rank),
        MASTER_ADDR=spec.master_addr, MASTER_PORT=str(spec.master_port), PERFPLAY_RUN_ID=spec.run_id,
        PYTHONUNBUFFERED="1", PYTHONPATH=os.pathsep.join(filter(None, [str(project_root()),
                                                                        base.get("PYTHONPATH")])),
    )
    visible_env = spec.vendor_info.get("visible_devices_env")
    if visible_env:
        # Honour a device list the host already restricts to; else the first nproc devices.
        offered = [d for d in base.get(visible_env, "").split(",") if d.strip()] or \
            [str(i) for i in range(spec.nproc)]
        node_devices = offered[:spec.nproc]
        if spec.vendor_info.get("visible_devices_scope") == "rank":
            env[visible_env] = node_devices[local_rank % len(node_devices)]
            env["PERFPLAY_DEVICE_INDEX"] = "0"
        else:
            env[visible_env] = ",".join(node_devices)
            env["PERFPLAY_DEVICE_INDEX"] = str(local_rank)
    else:
        env["PERFPLAY_DEVICE_INDEX"] = str(local_rank)
    if spec.vendor_info.get("device") == "cpu" and "OMP_NUM_THREADS" not in base:
        # Share the cores between the node's ranks instead of oversubscribing them.
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // spec.nproc))
    return env


class NodeLauncher:
    def __init__(self, spec: NodeSpec) -> None:
        self.spec = spec
        self.ranks: list[Rank] = []
        self.signal_received: int | None = None

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.signal_received = signum

    def start(self) -> None:
        spec = self.spec
        spec.log_dir.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "case_runners", "worker", "--config", str(spec.config_path),
                "--log-dir", str(spec.log_dir), "--run-id", spec.run_id]
        for local_rank in range(spec.nproc):
            rank = spec.node_rank * spec.nproc + local_rank
            log = open(spec.log_dir / f"rank{rank}.out.log", "w", encoding="utf-8")  # noqa: SIM115
            process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env=rank_env(spec, local_rank, dict(os.environ)), cwd=project_root())
            self.ranks.append(Rank(rank, local_rank, process, log))

    def wait(self) -> tuple[str, str | None]:
        """Watch the ranks; return (status, reason)."""
        deadline = time.monotonic() + self.spec.timeout_s
        while True:
            if self.signal_received is not None:
                return "interrupted", f"launcher received {signal.Signals(self.signal_received).name}"
            running = False
            for r in self.ranks:
                if r.exit_code is None:
                    r.exit_code = r.process.poll()
                if r.exit_code is None:
                    running = True
                elif r.exit_code != 0:
                    return "failed", f"rank {r.rank} on {socket.gethostname()} {describe_exit(r.exit_code)}"
            if not running:
                return "success", None
            if time.monotonic() > deadline:
                return "timeout", f"case timeout of {self.spec.timeout_s:g} s reached; ranks stopped"
            time.sleep(POLL_S)

    def stop(self, first_signal: int = signal.SIGTERM) -> None:
        """Stop every rank still running: a signal, a grace period, then SIGKILL."""
        alive = [r for r in self.ranks if r.process.poll() is None]
        for r in alive:
            r.process.send_signal(first_signal)
        deadline = time.monotonic() + GRACE_S
        for r in alive:
            try:
                r.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                r.process.kill()
                r.process.wait()
        for r in self.ranks:
            if r.exit_code is None:
                r.exit_code = r.process.poll()
            r.log.close()


def describe_exit(code: int) -> str:
    if code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


def launch(spec: NodeSpec) -> dict[str, Any]:
    """Run the node's ranks to completion; write and return node_result.json."""
    launcher = NodeLauncher(spec)
    previous = {s: signal.signal(s, launcher._on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    started = time.time()
    try:
        launcher.start()
        status, reason = launcher.wait()
    finally:
        launcher.stop(signal.SIGINT if launcher.signal_received == signal.SIGINT else signal.SIGTERM)
        for s, handler in previous.items():
            signal.signal(s, handler)
    result = {
        "schema": NODE_SCHEMA,
        "host": socket.gethostname(),
        "node_rank": spec.node_rank,
        "run_id": spec.run_id,
        "status": status,
        "reason": reason,
        "duration_s": round(time.time() - started, 3),
        "ranks": {str(r.rank): {"exit_code": r.exit_code, "log": f"rank{r.rank}.out.log"} for r in launcher.ranks},
    }
    (spec.log_dir / NODE_RESULT).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


def spec_from_config(config_path: Path, log_dir: Path, *, node_rank: int, master_addr: str, master_port: int,
                     timeout_s: float | None, run_id: str) -> NodeSpec:
    config = json.loads(config_path.read_text(encoding="utf-8"))
    return NodeSpec(config_path=config_path.resolve(), log_dir=log_dir.resolve(), node_rank=node_rank,
                    master_addr=master_addr, master_port=master_port,
                    timeout_s=float(timeout_s or config["timeout_s"]), run_id=run_id,
                    nnodes=int(config["nnodes"]), nproc=int(config["nproc"]), vendor_info=config["vendor_info"])
