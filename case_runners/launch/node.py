"""Start nproc local ranks of a case, watch them, stop them all on the first failure or on timeout.

Each rank is `python -m case_runners worker`, its stdout and stderr merged into rank<R>.out.log (FlagPerf's
layout), in a session of its own (its children with it) that dies with the launcher (PDEATHSIG) and ends itself at
the round's deadline (ROUND_DEADLINE_ENV) should the launcher stop answering (SIGSTOP) before it. The launcher
forwards SIGINT/SIGTERM/SIGHUP to its ranks and writes node_result.json. While it runs, it holds its pid file
and the round's monitors (guard.py), and a pid file per rank: the case timeout counts from its start, so every
process of a round is gone within the timeout plus ROUND_GRACE_S, whether or not the controller is still there.

With nnodes > 1 (one launcher per host) the launchers first meet at node 0 (rendezvous.py), which picks
torch's port, and then watch each other (watchdog.py): a failure, timeout or lost host anywhere stops the
ranks of every node, each node's reason naming the root cause. Stdlib only: no torch here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from case_runners.core import files, pidfiles
from case_runners.core.defaults import HEARTBEAT_TIMEOUT_S, MONITOR_INTERVAL_S, RDZV_TIMEOUT_ENV, RDZV_TIMEOUT_S
from case_runners.core.errors import PerfplayError
from case_runners.core.netutil import NoInterfaceError, interface_for
from case_runners.core.paths import package_root, project_root
from case_runners.core.processes import PARENT_PID_ENV, ROUND_DEADLINE_ENV, ProcessId, identify
from case_runners.core.run_ids import RUN_ID_ENV
from case_runners.launch import env_file, rendezvous
from case_runners.launch.guard import SetupError, guarded_node
from case_runners.launch.watchdog import Failure, Link, node_label, own_failure, root_cause, settled
from case_runners.rank.env import DEVICE_INDEX_ENV, THREADS_ENV, omp_num_threads, result_path
from case_runners.records.names import FAILED, INTERRUPTED, SUCCESS, TIMEOUT
from case_runners.records.node import NODE_RESULT, NodeResult, RankExit
from case_runners.records.rank import FailedRankResult, RankResult
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.schema import ABSENT, RecordError
from case_runners.vendors import layout

POLL_S = 0.05
RANK_EXIT_GRACE_S = 5.0  # a rank's time to exit after the stop signal, before SIGKILL
ROUND_GRACE_S = 60.0  # every process of a round is gone by its case timeout plus this (docker's backstop included)
MONITOR_GRACE_S = 2 * RANK_EXIT_GRACE_S  # monitors stop at the case timeout plus this, even if their launcher is stuck
EXIT_CODES = {SUCCESS: 0, FAILED: 1, TIMEOUT: 124, INTERRUPTED: 130}


@dataclass
class Rank:
    rank: int
    local_rank: int
    process: subprocess.Popen
    log: IO[str]
    ident: ProcessId | None = None  # None where /proc could not tell (it had already ended)
    exit_code: int | None = None


@dataclass(frozen=True)
class NodeSpec:
    """What a node's launcher is asked to run, fixed before it starts (what it learns on the way: RunState)."""
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
    node_name: str = field(default_factory=socket.gethostname)
    nic: str | None = None  # --nic: the collectives' network interface (None: chosen at the start, see RunState)
    rdzv_timeout_s: float = RDZV_TIMEOUT_S
    heartbeat_timeout_s: float = HEARTBEAT_TIMEOUT_S
    monitors: tuple[str, ...] = ()  # "host" and/or vendor names, run for the length of the round
    monitor_interval_s: float = MONITOR_INTERVAL_S
    inside_container: bool = False  # the launcher in a node's container: its host-side twin owns pid file and monitors
    env_file: Path | None = None  # the vendor case's environment_variables.sh, sourced for the ranks (host runtime)

    @property
    def master(self) -> str:
        return f"{self.master_addr}:{self.master_port}"


@dataclass
class RunState:
    """What a node's launcher learns as its round starts: torch's port (node 0 picks it at the rendezvous of a
    multi-node round) and the network interface of the collectives (spec.nic, or the one that routes to node 0)."""
    torch_port: int | None = None  # MASTER_PORT of the ranks; None: spec.master_port (a single node)
    nic: str | None = None  # None: the host's default


def nic_env(vendor_info: dict[str, Any]) -> tuple[str, ...]:
    """The variables naming the collectives' network interface: gloo's (torch's own store and CPU collectives)
    and, by the common convention, the vendor backend's <BACKEND>_SOCKET_IFNAME (NCCL_, HCCL_, ...)."""
    backend = str(vendor_info.get("dist_backend") or "gloo").upper()
    return tuple(dict.fromkeys(("GLOO_SOCKET_IFNAME", f"{backend}_SOCKET_IFNAME")))


def rank_env(spec: NodeSpec, state: RunState, local_rank: int, base: dict[str, str]) -> dict[str, str]:
    """The environment of one rank: torch.distributed's variables, device visibility, threads."""
    env = dict(base)
    rank = spec.node_rank * spec.nproc + local_rank
    env.update(
        RANK=str(rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(spec.nnodes * spec.nproc),
        LOCAL_WORLD_SIZE=str(spec.nproc), NODE_RANK=str(spec.node_rank), GROUP_RANK=str(spec.node_rank),
        MASTER_ADDR=spec.master_addr, MASTER_PORT=str(state.torch_port or spec.master_port),
        **{RUN_ID_ENV: spec.run_id},
        PYTHONUNBUFFERED="1", PYTHONPATH=os.pathsep.join(filter(None, [str(package_root()),
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
            env[DEVICE_INDEX_ENV] = "0"
        else:
            env[visible_env] = ",".join(node_devices)
            env[DEVICE_INDEX_ENV] = str(local_rank)
    else:
        env[DEVICE_INDEX_ENV] = str(local_rank)
    for name in nic_env(spec.vendor_info):
        if state.nic and not base.get(name):  # a value the host sets wins
            env[name] = state.nic
    threads = omp_num_threads(base, spec.nproc, str(spec.vendor_info.get("device")))
    if threads is not None:
        env[THREADS_ENV] = threads
    return env


class NodeLauncher:
    def __init__(self, spec: NodeSpec) -> None:
        self.spec = spec
        self.deadline = time.monotonic() + spec.timeout_s  # the case timeout counts from the launcher's start
        self.started = time.time()
        self.ranks: list[Rank] = []
        self.signal_received: int | None = None
        self.link: Link | None = None  # to the other nodes' launchers (nnodes > 1)
        self.state = RunState()

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.signal_received = signum

    def interrupted(self) -> str | None:
        """Why the launcher must stop now (a signal it received), or None."""
        if self.signal_received is None:
            return None
        return f"launcher received {signal.Signals(self.signal_received).name}"

    def start(self) -> None:
        """Start the node's ranks, each in its own session, each recorded in a pid file (WriteError if not), with the
    vendor case's environment_variables.sh applied (PerfplayError if it fails)."""
        spec = self.spec
        argv = [sys.executable, "-m", "case_runners", "worker", "--config", str(spec.config_path),
                "--log-dir", str(spec.log_dir), "--run-id", spec.run_id]
        base = env_file.sourced(spec.env_file, dict(os.environ), None if spec.inside_container else spec.log_dir,
                                spec.run_id) if spec.env_file else dict(os.environ)
        for local_rank in range(spec.nproc):
            rank = spec.node_rank * spec.nproc + local_rank
            log = files.open_text(spec.log_dir / f"rank{rank}.out.log")
            env = {**rank_env(spec, self.state, local_rank, base), PARENT_PID_ENV: str(os.getpid()),
                   ROUND_DEADLINE_ENV: repr(monitor_deadline(spec, self.started))}  # if this launcher is stuck
            process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env=env, cwd=project_root(), start_new_session=True)
            entry = Rank(rank, local_rank, process, log, identify(process.pid))
            self.ranks.append(entry)
            if entry.ident and not spec.inside_container:  # inside, pids are the container's: cleanup removes it
                pidfiles.write(self.rank_pid_path(entry), entry.ident, spec.run_id, role=f"rank{rank}")

    def rank_pid_path(self, rank: Rank) -> Path:
        return pidfiles.pid_path(self.spec.log_dir, f"rank{rank.rank}", self.spec.run_id)

    def reap(self, rank: Rank, block: bool = False) -> int | None:
        """The rank's exit code once it has exited (block: wait for that), else None. Before the rank is reaped
        (while its pid still names its session), whatever it left running in its session is killed."""
        if rank.exit_code is None:
            flags = os.WEXITED | os.WNOWAIT | (0 if block else os.WNOHANG)
            if os.waitid(os.P_PID, rank.process.pid, flags) is None:
                return None
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(rank.process.pid, signal.SIGKILL)
            rank.exit_code = rank.process.wait()
            if rank.ident and not self.spec.inside_container:
                pidfiles.remove(self.rank_pid_path(rank), rank.ident)
        return rank.exit_code

    def rank_cause(self, rank: Rank) -> str:
        """': <why>' from the rank's result when it failed and said why (a traceback's last line), or the full disk
        that kept it from saying; else ''."""
        try:
            result = RankResult.load(result_path(self.spec.log_dir, rank.rank))
        except RecordError:
            full = files.disk_full_reason(self.spec.log_dir)
            return f": {full}" if full else ""
        reason = result.reason.strip() if isinstance(result, FailedRankResult) else ""
        return ": " + reason.splitlines()[-1] if reason else ""

    def failure(self, status: str, reason: str, urgent: bool = True) -> Failure:
        return own_failure(self.spec.node_rank, self.spec.node_name, status, reason, urgent)

    def wait(self) -> tuple[str, str | None]:
        """Watch the ranks (and, on a multi-node round, the other nodes); return (status, reason)."""
        link = self.link
        own: list[Failure] = []
        while True:
            interrupted = self.interrupted()
            if interrupted:
                return self.conclude(self.failure(INTERRUPTED, interrupted))
            running = False
            for r in self.ranks:
                code = self.reap(r) if r.exit_code is None else None  # None: still running, or seen before
                if code is not None and code != 0:
                    own.append(self.failure(FAILED, f"rank {r.rank} on {self.spec.node_name} "
                                                      f"{describe_exit(code)}{self.rank_cause(r)}",
                                            urgent=code < 0))
                running = running or r.exit_code is None
            if link is None:
                if own:  # single node: the first failure, at once
                    return own[0].status, own[0].reason
            else:
                link.poll(POLL_S)
                if link.outcome:  # node 0 stopped the round, or was lost
                    return link.outcome
                failures = own + link.failures
                if failures and settled(failures):
                    return self.conclude(root_cause(failures))
            if not running and not own and (link is None or link.peers_done()):
                if link:
                    link.finish()
                return SUCCESS, None
            if time.monotonic() > self.deadline:
                return self.conclude(self.failure(
                    TIMEOUT, f"case timeout of {self.spec.timeout_s:g} s reached; ranks stopped"))
            if link is None:
                time.sleep(POLL_S)

    def conclude(self, root: Failure) -> tuple[str, str]:
        """This node's (status, reason) for root; the other nodes are told."""
        return self.link.conclude(root) if self.link else (root.status, root.reason)

    def stop(self, first_signal: int = signal.SIGTERM) -> None:
        """Stop every rank still running: a signal, a grace period, then SIGKILL to its whole session."""
        alive = [r for r in self.ranks if self.reap(r) is None]
        for r in alive:
            r.process.send_signal(first_signal)
            r.process.send_signal(signal.SIGCONT)  # a stopped rank must run to handle it
        deadline = time.monotonic() + RANK_EXIT_GRACE_S
        while any(self.reap(r) is None for r in alive) and time.monotonic() < deadline:
            time.sleep(POLL_S)
        for r in alive:
            if r.exit_code is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(r.process.pid, signal.SIGKILL)  # not reaped yet: the session is still the rank's
                self.reap(r, block=True)
        for r in self.ranks:
            r.log.close()


def describe_exit(code: int) -> str:
    if code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


def meet(spec: NodeSpec, launcher: NodeLauncher) -> Link:
    """The rendezvous of a multi-node round: this node's link to the others (torch's port in its torch_port)."""
    common: dict[str, Any] = dict(
        master_addr=spec.master_addr, master_port=spec.master_port, node_name=spec.node_name, run_id=spec.run_id,
        nnodes=spec.nnodes, nproc=spec.nproc, rdzv_timeout_s=spec.rdzv_timeout_s,
        heartbeat_timeout_s=spec.heartbeat_timeout_s, interrupted=launcher.interrupted)
    if not 0 <= spec.node_rank < spec.nnodes:
        raise rendezvous.RendezvousError(FAILED, f"node rank {spec.node_rank} of {spec.node_name} is outside "
                                                   f"0..{spec.nnodes - 1} (nnodes={spec.nnodes})")
    if not spec.master_port:
        raise rendezvous.RendezvousError(FAILED, f"a round of {spec.nnodes} nodes needs a fixed master port "
                                                   "(run var perfplay_master_port), not 0")
    return rendezvous.host(**common) if spec.node_rank == 0 else rendezvous.join(node_rank=spec.node_rank, **common)


def choose_nic(spec: NodeSpec, environ: dict[str, str]) -> str | None:
    """--nic; else, on a multi-node round, the interface that routes to node 0 (unless the host's
    environment already names one for both gloo and NCCL)."""
    if spec.nic or spec.nnodes == 1:
        return spec.nic
    names = nic_env(spec.vendor_info)
    if all(environ.get(name) for name in names):
        return environ[names[0]]
    try:
        return interface_for(spec.master_addr)
    except NoInterfaceError as exc:
        raise NoInterfaceError(f"cannot find the network interface of the collectives on {spec.node_name}: "
                               f"{exc}; name it with --nic (host var perfplay_nic)") from None


def run(launcher: NodeLauncher) -> tuple[str, str | None]:
    """Meet the other nodes (nnodes > 1), start this node's ranks and watch them; (status, reason)."""
    spec = launcher.spec
    try:
        if spec.nnodes > 1:
            launcher.link = meet(spec, launcher)
            launcher.state.torch_port = launcher.link.torch_port
        launcher.state.nic = choose_nic(spec, dict(os.environ))
        launcher.start()
    except rendezvous.RendezvousError as exc:
        return exc.status, exc.reason
    except (NoInterfaceError, PerfplayError) as exc:  # WriteError, a failing environment_variables.sh
        return launcher.conclude(launcher.failure(FAILED, str(exc)))
    return launcher.wait()


def monitor_deadline(spec: NodeSpec, started: float) -> float:
    """time.time() at which the round's monitors and ranks stop whatever happens, their launcher stuck (SIGSTOP)
    or not (started: the launcher's time.time())."""
    return started + spec.timeout_s + MONITOR_GRACE_S


def launch(spec: NodeSpec) -> NodeResult:
    """Run the node's ranks to completion under its monitors; write and return node_result.json. A node that
    loses the others stops its own ranks and monitors: nobody may be able to reach it to do so."""
    launcher = NodeLauncher(spec)
    previous = {s: signal.signal(s, launcher._on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    started = launcher.started
    try:
        with guarded_node(spec, monitor_deadline(spec, started)):
            try:
                status, reason = run(launcher)
            finally:
                launcher.stop(signal.SIGINT if launcher.signal_received == signal.SIGINT else signal.SIGTERM)
                if launcher.link:
                    launcher.link.close()
    except SetupError as exc:
        status, reason = FAILED, str(exc)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if reason and spec.nnodes > 1:  # the task's stderr shows why this host stopped
        print(f"perfplay launch: {node_label(spec.node_rank, spec.node_name)}: {status}: {reason}",
              file=sys.stderr, flush=True)
    return write_node_result(spec, status, reason, started, nic=launcher.state.nic,
                             torch_port=launcher.state.torch_port or (spec.master_port if spec.nnodes == 1 else None),
                             ranks={str(r.rank): RankExit(exit_code=r.exit_code, log=f"rank{r.rank}.out.log")
                                    for r in launcher.ranks},
                             environment_file=str(spec.env_file) if spec.env_file else None)


def write_node_result(spec: NodeSpec, status: str, reason: str | None, started: float, *, nic: str | None,
                      torch_port: int | None = None, ranks: dict[str, RankExit] | None = None,
                      **extra: Any) -> NodeResult:
    """Write and return the node's node_result.json (started: time.time() at the node's start; `extra`: the
    optional fields of NodeResult). A result that cannot be written is still returned (the launcher prints it),
    with the reason in write_error."""
    result = NodeResult(host=spec.node_name, node_name=spec.node_name, hostname=socket.gethostname(),
                        node_rank=spec.node_rank, run_id=spec.run_id, status=status, reason=reason,
                        duration_s=round(time.time() - started, 3), master=spec.master, torch_port=torch_port,
                        nic=nic, ranks=ranks or {}, **extra)
    return save_node_result(spec.log_dir, result)


def save_node_result(log_dir: Path, result: NodeResult) -> NodeResult:
    """Write `result` as log_dir's node_result.json; the result, with write_error when it could not be written."""
    try:
        files.atomic_write_json(log_dir / NODE_RESULT, result.to_json())
    except files.WriteError as exc:
        return dataclasses.replace(result, write_error=str(exc))
    return dataclasses.replace(result, write_error=ABSENT)


def env_seconds(name: str, default: float) -> float:
    raw = os.environ.get(name, "")
    try:
        return float(raw) if raw.strip() else default
    except ValueError:
        raise PerfplayError(f"environment variable {name}={raw!r} is not a number of seconds") from None


def round_monitors(config: ResolvedConfig) -> tuple[str, ...]:
    """The monitors of a round of this config: the host's, and the vendor's when it has one."""
    return ("host", *([config.vendor] if config.vendor_info.monitor else []))


def spec_from_config(config_path: Path, log_dir: Path, *, node_rank: int, master_addr: str, master_port: int,
                     timeout_s: float | None, run_id: str, node_name: str | None = None, nic: str | None = None,
                     rdzv_timeout_s: float | None = None, heartbeat_timeout_s: float | None = None,
                     monitors: bool = True, monitor_interval_s: float | None = None,
                     inside_container: bool = False) -> NodeSpec:
    config = ResolvedConfig.load(config_path)
    return NodeSpec(config_path=config_path.resolve(), log_dir=log_dir.resolve(), node_rank=node_rank,
                    master_addr=master_addr, master_port=master_port,
                    timeout_s=float(timeout_s or config.timeout_s), run_id=run_id,
                    nnodes=config.nnodes, nproc=config.nproc, vendor_info=config.vendor_info.to_json(),
                    node_name=node_name or socket.gethostname(), nic=nic or None,
                    rdzv_timeout_s=rdzv_timeout_s or env_seconds(RDZV_TIMEOUT_ENV, RDZV_TIMEOUT_S),
                    heartbeat_timeout_s=float(heartbeat_timeout_s or HEARTBEAT_TIMEOUT_S),
                    monitors=round_monitors(config) if monitors and not inside_container else (),
                    monitor_interval_s=monitor_interval_s or MONITOR_INTERVAL_S, inside_container=inside_container,
                    env_file=None if inside_container else layout.env_file(project_root(), config.vendor,
                                                                                 config.case))
