"""Control-plane cost of a multi-host run on the namespace cluster, at 2 and 16 hosts (--sizes).

For each size, `tests/cluster/hosts.sh up N` makes N ssh hosts, then `ansible-playbook run_case.yml` runs a
trivial case on all of them (digits_cnn, nnodes=N, nproc=1, a few steps), at 1 and at 3 rounds. The control plane
is everything the playbook does around the ranks: preflight (plan, runtime, host checks), launch, waits, monitors,
collect, records and summary. Its time is the playbook's wall time minus the ranks' own time, read from their
events (from the first event of any rank of a round to the last of any rank of it, summed over rounds).

Targets, each printed with PASS/FAIL (the script exits 1 when one is missed):
- controller CPU per host per round <= 0.5 s: the CPU every process of the controller spent (ansible-playbook,
  its workers, ssh, local modules) on a further round (3 rounds minus 1 round, halved), split into what a round
  costs once (its record) and what each host adds: the slope between the smallest and the largest size (with one
  size, the round's CPU divided by its hosts);
- control-plane time at the largest size <= 1.5x that at the smallest (wall ratio printed beside it), judged only
  where every host has cores of its own (at least CORES_PER_HOST per host of the largest size): where the hosts
  share a few cores, their module processes queue for them and the ratio measures the machine, not the control
  plane; it is then printed for information.
Needs root (namespaces, sshd). The hosts share this machine's cores: read the figures as ratios of one sitting.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from case_runners.driver.events import events_files, read_events
from case_runners.records.node import NODE_RESULT
from case_runners.run_options import ArgumentParser
from tests.integration.playbook_run import checkout_copy

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
HOSTS_SH = ROOT / "tests" / "cluster" / "hosts.sh"
STATE = Path(os.environ.get("PERFPLAY_CLUSTER_DIR", "/tmp/perfplay-cluster"))
TARGET_RATIO = 1.5
TARGET_CPU_PER_HOST_ROUND_S = 0.5
CORES_PER_HOST = 2
SCALE_CONFIG = "---\n# bench/control_plane.py: one CPU process on each of {n} hosts.\nbatch_size: 32\nnum_workers: 0\n"


def checkout_with_scales(sizes: list[int], tmp: Path) -> Path:
    """A copy of the checkout with digits_cnn configs for Nx1 (the shipped vendor has 1x1, 1x2, 2x1, 2x2)."""
    copy = checkout_copy(tmp / "checkout")
    for n in sizes:
        path = copy / "vendor" / "cpu" / "cases" / "digits_cnn" / f"config_CPUx{n}x1.yaml"
        if not path.exists():
            path.write_text(SCALE_CONFIG.format(n=n))
    return copy


def ranks_time(run_dir: Path) -> float:
    """Seconds the ranks themselves ran, summed over rounds: per round, first to last event of any of its ranks."""
    total = 0.0
    for round_dir in run_dir.glob("*/round*"):
        stamps = [event["metadata"]["time_ms"] / 1000 for node in round_dir.iterdir() if node.is_dir()
                  for path in events_files(node).values() for event in read_events(path)]
        total += max(stamps) - min(stamps) if stamps else 0.0
    return total


def one_run(checkout: Path, n: int, rounds: int, steps: int, results: Path, run_id: str) -> dict[str, float]:
    selection = {"case": "digits_cnn", "hardware": "CPU", "nnodes": n, "nproc": 1, "repeat": rounds,
                 "overrides": {"max_steps": steps}}
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(checkout / "ansible.cfg"), PATH=f"{VENV_BIN}{os.pathsep}{env['PATH']}")
    argv = [str(VENV_BIN / "ansible-playbook"), "run_case.yml", "-i", str(STATE / "inventory.yml"),
            "-e", json.dumps({"perfplay_cases": [selection], "perfplay_results_dir": str(results),
                              "perfplay_run_id": run_id})]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=checkout, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"run failed ({proc.returncode}) at {n} hosts:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
    nodes = list((results / run_id).glob(f"*/round*/*/{NODE_RESULT}"))
    if len(nodes) != n * rounds:
        sys.exit(f"{len(nodes)} node results for {n} hosts x {rounds} rounds")
    ranks = ranks_time(results / run_id)
    return {"wall": wall, "ranks": ranks, "control": wall - ranks,
            "controller_cpu": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)}


def main() -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2,16")
    parser.add_argument("--repeats", type=int, default=2, help="measured runs per size and round count")
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/control_plane.py needs root: it makes network namespaces with sshd (tests/cluster/hosts.sh)")
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="perfplay-bench-cp-") as tmp:
        checkout = checkout_with_scales(sizes, Path(tmp))
        try:
            for n in sizes:
                subprocess.run(["bash", str(HOSTS_SH), "up", str(n)], check=True, capture_output=True)
                results = Path(tmp) / f"results{n}"
                one_run(checkout, n, 1, args.steps, results, f"warmup-{n}-hosts")  # copies the checkout to the hosts
                med = {}
                for rounds in (1, 3):
                    runs = [one_run(checkout, n, rounds, args.steps, results, f"bench-{n}-hosts-{rounds}r-{i}")
                            for i in range(args.repeats)]
                    med[rounds] = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
                cpu_round = (med[3]["controller_cpu"] - med[1]["controller_cpu"]) / 2
                row = dict(med[1], cpu_round=cpu_round, cpu_per_host_round=cpu_round / n)
                rows.append((n, row))
                print(f"{n:>3} hosts, 1 round: wall {row['wall']:.2f} s, ranks {row['ranks']:.2f} s, control plane "
                      f"{row['control']:.2f} s, controller CPU {row['controller_cpu']:.1f} s; per further round "
                      f"{row['cpu_per_host_round']:.2f} CPU s per host", flush=True)
        finally:
            subprocess.run(["bash", str(HOSTS_SH), "down"], check=False, capture_output=True)
    base = rows[0][1]
    print(f"\ncontrol plane (median of {args.repeats}; ranks' own time, from their events, excluded)")
    print("hosts  control s  vs first  wall s  vs first  ranks s  controller CPU s  CPU s/host/round")
    for n, row in rows:
        print(f"{n:<5}  {row['control']:<9.2f}  {row['control'] / base['control']:<8.2f}  {row['wall']:<6.2f}  "
              f"{row['wall'] / base['wall']:<8.2f}  {row['ranks']:<7.2f}  {row['controller_cpu']:<16.1f}  "
              f"{row['cpu_per_host_round']:.2f}")
    (first, _), (last, top) = rows[0], rows[-1]
    ratio = top["control"] / base["control"]
    if len(rows) > 1:  # what each further host adds to a round, without the round's own fixed part
        cpu = (top["cpu_round"] - base["cpu_round"]) / (last - first)
        fixed = base["cpu_round"] - cpu * first
        print(f"controller CPU of a round: {base['cpu_round']:.2f} s at {first} hosts, {top['cpu_round']:.2f} s at "
              f"{last}: {fixed:.2f} s per round and {cpu:.2f} s per host")
    else:
        cpu = base["cpu_per_host_round"]
    verdicts = {"cpu": cpu <= TARGET_CPU_PER_HOST_ROUND_S}
    judged = (os.cpu_count() or 1) >= CORES_PER_HOST * last
    if judged:
        verdicts["ratio"] = ratio <= TARGET_RATIO
    verdict = ("PASS" if verdicts["ratio"] else "FAIL") if judged else \
        f"not judged: {last} hosts share {os.cpu_count()} cores (needs {CORES_PER_HOST * last})"
    print(f"\n{last} hosts / {first} hosts: control plane {ratio:.2f}x (target <= {TARGET_RATIO}x), "
          f"wall {top['wall'] / base['wall']:.2f}x: {verdict}")
    print(f"controller CPU per host per round: {cpu:.2f} s (target <= {TARGET_CPU_PER_HOST_ROUND_S} s): "
          f"{'PASS' if verdicts['cpu'] else 'FAIL'}")
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
