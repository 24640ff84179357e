"""Helpers of the cluster tests: the namespace cluster of hosts.sh, playbook runs on it, and a run's processes.

Every host is a network, PID, mount and UTS namespace of this machine, so the root namespace sees every
host's processes (to find a rank to kill, or debris) and every host's /opt/perfplay under the state dir.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from case_runners.core.processes import read_argv, read_environ  # noqa: E402
from playbook_run import BIN, REPO, PlaybookRun, playbook_env, run_playbook  # noqa: E402
from process_helpers import REAPED_S, SHORT_S, kill_run, run_pids  # noqa: E402

HOSTS_SH = REPO / "tests" / "cluster" / "hosts.sh"


def cluster_info() -> dict[str, str]:
    """This checkout's cluster names from `hosts.sh info` (state, net, bridge, netns_prefix, tag): hosts.sh is
    their one definition, each checkout's cluster its own."""
    out = subprocess.run(["bash", str(HOSTS_SH), "info"], capture_output=True, text=True, check=True, timeout=30).stdout
    return dict(line.split("=", 1) for line in out.splitlines())


INFO = cluster_info()
STATE = Path(INFO["state"])


@dataclass
class Cluster:
    size: int
    user: str

    @property
    def inventory(self) -> Path:
        return STATE / "inventory.yml"

    @property
    def hosts(self) -> list[str]:
        return [f"node{i}" for i in range(1, self.size + 1)]

    def ip(self, host: str) -> str:
        return f"{INFO['net']}.{10 + int(host.removeprefix('node'))}"

    def host_results(self, host: str) -> Path:
        """The host's perfplay_host_results_dir (/opt/perfplay/results there), seen from here."""
        return STATE / "hosts" / host / "opt" / "results"

    def netns(self, host: str, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", "netns", "exec", INFO["netns_prefix"] + host.removeprefix("node"), *argv],
                              capture_output=True, text=True, check=True, timeout=SHORT_S)


def hosts_sh(*args: str, timeout: float = 900) -> None:
    proc = subprocess.run(["bash", str(HOSTS_SH), *args], capture_output=True, text=True, timeout=timeout,
                          check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"hosts.sh {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")


def cases_arg(*cases: dict) -> str:
    return json.dumps({"perfplay_cases": list(cases)})


def run_on(cluster: Cluster, results: Path, run_id: str, *extra: str, timeout: float = 900) -> PlaybookRun:
    """ansible-playbook run_case.yml on the cluster, as a user runs it."""
    _run_ids.append(run_id)
    return run_playbook(REPO, "run_case.yml", "-i", str(cluster.inventory), "-e", f"perfplay_results_dir={results}",
                        "-e", f"perfplay_run_id={run_id}", *extra, timeout=timeout)


def start_on(cluster: Cluster, results: Path, run_id: str, *extra: str, log: Path) -> subprocess.Popen:
    """The same, in the background (output to log), for faults injected while it runs."""
    _run_ids.append(run_id)
    handle = open(log, "w")  # noqa: SIM115 - owned by the process
    return _remember(subprocess.Popen([str(BIN / "ansible-playbook"), "run_case.yml", "-i", str(cluster.inventory),
                             "-e", f"perfplay_results_dir={results}", "-e", f"perfplay_run_id={run_id}", *extra],
                            cwd=REPO, env=playbook_env(REPO), stdout=handle, stderr=subprocess.STDOUT, text=True))


_started: list[subprocess.Popen] = []
_run_ids: list[str] = []


def _remember(proc: subprocess.Popen) -> subprocess.Popen:
    _started.append(proc)
    return proc


def stop_started() -> None:
    """Kill the background playbooks a failed test left running, then every process of the runs it started, on
    every host (this namespace sees them all)."""
    while _started:
        proc = _started.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=REAPED_S)
    while _run_ids:
        kill_run(_run_ids.pop())


def rank_pid(run_id: str, rank: int) -> int | None:
    """The pid of a rank (a `case_runners worker`) of the run, on whichever host it runs."""
    for pid in run_pids(run_id):
        if "worker" in read_argv(pid) and read_environ(pid).get("RANK") == str(rank):
            return pid
    return None


def leftovers(run_id: str) -> list[str]:
    """Processes of the run still alive anywhere on this machine (every host included)."""
    return [f"{pid}: {' '.join(read_argv(pid))}" for pid in run_pids(run_id)]


def wait_for(predicate, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def training_started(cluster: Cluster, host: str, run_id: str, rank: int) -> bool:
    logs = list(cluster.host_results(host).glob(f"{run_id}/*/round*/{host}_noderank*/rank{rank}.out.log"))
    return any("TRAIN_START" in log.read_text(errors="replace") for log in logs)


def interrupt(proc: subprocess.Popen, timeout: float = 60) -> int:
    proc.send_signal(signal.SIGINT)
    return proc.wait(timeout=timeout)


def round_record(results: Path, run_id: str, case_id: str, number: int) -> dict:
    return json.loads((results / run_id / case_id / f"round{number}" / "round_record.json").read_text())
