"""Controller CPU per host per further round of a multi-host run, on the namespace cluster (--sizes hosts).

For each size, `tests/cluster/hosts.sh up N` (of the bench's private copy of the checkout, so its cluster is not the
test suite's) makes N ssh hosts; `ansible-playbook run_case.yml` then runs a trivial case on all of them
(digits_cnn, nnodes=N, nproc=1, a few steps) at 1 and at 3 (--rounds) rounds, back to back, --repeats times.

Controller CPU is the CPU time of every process of the controller: ansible-playbook, its workers, local modules and
the ssh processes, the connection-sharing masters (ControlMaster, which detach from the playbook) included:
bench/process_tree.py makes this script their subreaper and ends them after each run, so that their CPU is counted.
A further round costs (CPU of N rounds - CPU of 1 round) / (N - 1); what each host adds to it is the slope of that over
the sizes (the least squares line; with one size, the round's CPU divided by its hosts, the round's own part
included). That figure does not need a core per host: the hosts' module processes queue for this machine's cores,
but the controller's CPU time is the same.

Judged by bench/verdict.py's rule over the repeats (each repeat a full set of sizes), from two repeats on: PASS
when their spread lies within the target, MISSED (exit 1) when it lies over it, CANNOT JUDGE (exit 2) when it
straddles the target or is wider than the target allows, or fewer than two repeats ran.
Wall time, the control plane's share of it (wall minus the ranks' own time, from their events) and the load are
printed beside, for information. Needs root (namespaces, sshd).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench.alternation import ROUNDS, add_rounds_option
from bench.process_tree import run_tree
from bench.verdict import CANNOT_JUDGE, MISSED, PASS, bounded, judge
from case_runners.core.cli_io import ArgumentParser
from case_runners.rank.driver.events import events_files, read_events
from case_runners.records.node import NODE_RESULT
from tests.integration.playbook_run import checkout_copy

VENV_BIN = Path(sys.executable).parent
TARGET_CPU_PER_HOST_ROUND_S = 0.4
EXIT_CODES = {PASS: 0, MISSED: 1, CANNOT_JUDGE: 2}  # a figure the noise swamps is neither
QUICK = {"sizes": "2", "repeats": 2, "steps": 2}
# N hosts' launchers and ranks share this machine's cores: bounds that a loaded machine cannot fail on, as the
# figure is the controller's CPU, not how soon a missing or silent node is found.
PATIENT = {"perfplay_rdzv_timeout_s": 600, "perfplay_heartbeat_timeout_s": 120}
SCALE_CONFIG = "---\n# bench/control_plane.py: one CPU process on each of {n} hosts.\nbatch_size: 32\nnum_workers: 0\n"


@dataclass
class Run:
    wall: float
    cpu: float
    ranks: float
    load: float


def checkout_with_scales(sizes: list[int], tmp: Path) -> Path:
    """A copy of the checkout with digits_cnn configs for Nx1 (the shipped vendor has 1x1, 1x2, 2x1, 2x2)."""
    copy = checkout_copy(tmp / "checkout")
    for n in sizes:
        path = copy / "vendor" / "cpu" / "cases" / "digits_cnn" / f"config_CPUx{n}x1.yaml"
        if not path.exists():
            path.write_text(SCALE_CONFIG.format(n=n))
    return copy


def hosts_sh(checkout: Path, *args: str) -> str:
    proc = subprocess.run(["bash", str(checkout / "tests" / "cluster" / "hosts.sh"), *args], capture_output=True,
                          text=True, check=False, timeout=900)
    if proc.returncode != 0:
        sys.exit(f"hosts.sh {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def ranks_time(run_dir: Path) -> float:
    """Seconds the ranks themselves ran, summed over rounds: per round, first to last event of any of its ranks."""
    total = 0.0
    for round_dir in run_dir.glob("*/round*"):
        stamps = [event["metadata"]["time_ms"] / 1000 for node in round_dir.iterdir() if node.is_dir()
                  for path in events_files(node).values() for event in read_events(path)]
        total += max(stamps) - min(stamps) if stamps else 0.0
    return total


def one_run(checkout: Path, inventory: Path, n: int, rounds: int, steps: int, results: Path, run_id: str) -> Run:
    selection = {"case": "digits_cnn", "hardware": "CPU", "nnodes": n, "nproc": 1, "repeat": rounds,
                 "overrides": {"max_steps": steps}}
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(checkout / "ansible.cfg"), PATH=f"{VENV_BIN}{os.pathsep}{env['PATH']}")
    argv = [str(VENV_BIN / "ansible-playbook"), "run_case.yml", "-i", str(inventory),
            "-e", json.dumps({"perfplay_cases": [selection], "perfplay_results_dir": str(results),
                              "perfplay_run_id": run_id, **PATIENT})]
    load = os.getloadavg()[0]
    # The ssh masters never end on their own: no grace. The cluster's hosts (hosts.sh up) are not among the
    # orphans: they detached while this process was no subreaper.
    proc, wall, cpu = run_tree(argv, 0.0, cwd=checkout, env=env, timeout=1800)
    if proc.returncode != 0:
        sys.exit(f"run failed ({proc.returncode}) at {n} hosts:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
    nodes = list((results / run_id).glob(f"*/round*/*/{NODE_RESULT}"))
    if len(nodes) != n * rounds:
        sys.exit(f"{len(nodes)} node results for {n} hosts x {rounds} rounds")
    return Run(wall=wall, cpu=cpu, ranks=ranks_time(results / run_id), load=(load + os.getloadavg()[0]) / 2)


def per_host(sizes: list[int], cpu_round: list[float]) -> float:
    """What each host adds to a further round's CPU: the least-squares slope over the sizes (one size: per host)."""
    if len(sizes) == 1:
        return cpu_round[0] / sizes[0]
    mx, my = statistics.fmean(sizes), statistics.fmean(cpu_round)
    return sum((x - mx) * (y - my) for x, y in zip(sizes, cpu_round)) / sum((x - mx) ** 2 for x in sizes)


def verdict(figures: list[float], target: float) -> tuple[str, int]:
    """The repeats judged by the bench's one rule (at least two of them): its verdict and reason, and the exit
    code."""
    result = judge(figures, bounded(high=target), min_n=2)
    return f"{result.verdict}: {result.reason}", EXIT_CODES[result.verdict]


def measure(checkout: Path, sizes: list[int], repeats: int, steps: int, tmp: Path,
            round_counts: tuple[int, int] = ROUNDS) -> dict[int, dict[int, list[Run]]]:
    """runs[n][rounds]: the repeats at each size and round count (1 and 3 rounds by default), back to back."""
    runs: dict[int, dict[int, list[Run]]] = {}
    for n in sizes:
        hosts_sh(checkout, "up", str(n))
        state = dict(line.split("=", 1) for line in hosts_sh(checkout, "info").splitlines())["state"]
        inventory = Path(state) / "inventory.yml"
        results = tmp / f"results{n}"
        one_run(checkout, inventory, n, 1, steps, results, f"warmup-{n}-hosts")  # copies the checkout to the hosts
        runs[n] = {rounds: [] for rounds in round_counts}
        for i in range(repeats):
            for rounds in round_counts:
                run = one_run(checkout, inventory, n, rounds, steps, results, f"bench-{n}-hosts-{rounds}r-{i}")
                runs[n][rounds].append(run)
                print(f"{n:>3} hosts, {rounds} round(s), run {i + 1}: wall {run.wall:.2f} s, controller CPU "
                      f"{run.cpu:.2f} s, ranks {run.ranks:.2f} s, load {run.load:.1f}", flush=True)
    return runs


def main() -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2,4,8", help="host counts, comma-separated (default 2,4,8)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per size and round count (default 3)")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--target-s", type=float, default=TARGET_CPU_PER_HOST_ROUND_S,
                        help=f"controller CPU s per host per further round (default {TARGET_CPU_PER_HOST_ROUND_S})")
    add_rounds_option(parser, f"default {ROUNDS[1]}")
    parser.add_argument("--quick", action="store_true",
                        help=f"the smallest real measurement: {', '.join(f'{k} {v}' for k, v in QUICK.items())}")
    args = parser.parse_args()
    if args.quick:
        vars(args).update(QUICK)
    if os.geteuid() != 0:
        sys.exit("bench/control_plane.py needs root: it makes network namespaces with sshd (tests/cluster/hosts.sh)")
    sizes = sorted(int(s) for s in args.sizes.split(","))
    round_counts = (ROUNDS[0], args.rounds or ROUNDS[1])
    with tempfile.TemporaryDirectory(prefix="perfplay-bench-cp-") as tmp:
        checkout = checkout_with_scales(sizes, Path(tmp))
        try:
            runs = measure(checkout, sizes, args.repeats, args.steps, Path(tmp), round_counts)
        finally:
            subprocess.run(["bash", str(checkout / "tests" / "cluster" / "hosts.sh"), "down", "--purge"],
                           check=False, capture_output=True, timeout=300)
    print(f"\nmedians of {args.repeats} runs (controller CPU: the whole process tree, ssh masters included)")
    print("hosts  rounds  wall s  control s  ranks s  controller CPU s  load  | further round: CPU s  CPU s/host")
    cpu_rounds: list[list[float]] = []  # [size][repeat]
    for n in sizes:
        further = [(more.cpu - one.cpu) / (round_counts[1] - round_counts[0]) for one, more in zip(*runs[n].values())]
        cpu_rounds.append(further)
        for rounds, rs in runs[n].items():
            tail = f"  | {statistics.median(further):<18.2f}  {statistics.median(further) / n:.2f}" \
                if rounds == round_counts[-1] else ""
            med = {key: statistics.median(getattr(r, key) for r in rs) for key in ("wall", "cpu", "ranks", "load")}
            print(f"{n:<5}  {rounds:<6}  {med['wall']:<6.2f}  {med['wall'] - med['ranks']:<9.2f}  "
                  f"{med['ranks']:<7.2f}  {med['cpu']:<16.2f}  {med['load']:<4.1f}{tail}")
    figures = [per_host(sizes, [cpu_rounds[s][i] for s in range(len(sizes))]) for i in range(args.repeats)]
    how = f"slope over {','.join(map(str, sizes))} hosts" if len(sizes) > 1 else f"round's CPU / {sizes[0]} hosts"
    text, code = verdict(figures, args.target_s)
    print(f"\ncontroller CPU per host per further round ({how}): median {statistics.median(figures):.2f} s, "
          f"repeats {', '.join(f'{f:.2f}' for f in figures)} (target <= {args.target_s:g} s, "
          f"{os.cpu_count()} cores): {text}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
