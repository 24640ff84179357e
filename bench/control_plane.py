"""Control-plane time of a multi-host run on the namespace cluster: 2, 4, 8 and 16 hosts.

For each size, `tests/cluster/hosts.sh up N` makes N ssh hosts, then `ansible-playbook run_case.yml` runs a
trivial case on all of them (digits_cnn, nnodes=N, nproc=1, a few steps). The control plane is everything
the playbook does around the ranks: preflight (plan, runtime, host checks), launch, monitors, collect,
records and summary. It is the playbook's wall time minus the longest node's launcher time (the ranks'
own work, which grows with N on this one machine and is not the control plane's).

Target: 16 hosts take at most 1.5x the control-plane time of 2. Needs root (namespaces, sshd).
The hosts share this machine's cores, so CPU-seconds spent by every process are reported beside wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.integration.playbook_run import checkout_copy

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
HOSTS_SH = ROOT / "tests" / "cluster" / "hosts.sh"
STATE = Path(os.environ.get("PERFPLAY_CLUSTER_DIR", "/tmp/perfplay-cluster"))
TARGET_RATIO = 1.5
SCALE_CONFIG = "---\n# bench/control_plane.py: one CPU process on each of {n} hosts.\nbatch_size: 32\nnum_workers: 0\n"


def checkout_with_scales(sizes: list[int], tmp: Path) -> Path:
    """A copy of the checkout with digits_cnn configs for Nx1 (the shipped vendor has 1x1, 1x2, 2x1, 2x2)."""
    copy = checkout_copy(tmp / "checkout")
    for n in sizes:
        path = copy / "vendor" / "cpu" / "cases" / "digits_cnn" / f"config_CPUx{n}x1.yaml"
        if not path.exists():
            path.write_text(SCALE_CONFIG.format(n=n))
    return copy


def one_run(checkout: Path, n: int, steps: int, results: Path, run_id: str) -> dict[str, float]:
    selection = {"case": "digits_cnn", "hardware": "CPU", "nnodes": n, "nproc": 1, "repeat": 1,
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
    nodes = [json.loads(p.read_text()) for p in (results / run_id).glob("*/round1/*/node_result.json")]
    if len(nodes) != n:
        sys.exit(f"{len(nodes)} node results for {n} hosts")
    ranks = max(node["duration_s"] for node in nodes)
    return {"wall": wall, "ranks": ranks, "control": wall - ranks,
            "controller_cpu": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2,4,8,16")
    parser.add_argument("--repeats", type=int, default=2, help="measured runs per size (after one warm-up)")
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
                one_run(checkout, n, args.steps, results, f"warmup-{n}-hosts")  # copies the checkout to the new hosts
                runs = [one_run(checkout, n, args.steps, results, f"bench-{n}-hosts-{i}") for i in range(args.repeats)]
                row = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
                rows.append((n, row))
                print(f"{n:>3} hosts: wall {row['wall']:.2f} s, ranks {row['ranks']:.2f} s, "
                      f"control plane {row['control']:.2f} s (controller-side CPU {row['controller_cpu']:.1f} s)",
                      flush=True)
        finally:
            subprocess.run(["bash", str(HOSTS_SH), "down"], check=False, capture_output=True)
    base = rows[0][1]["control"]
    print(f"\ncontrol plane (median of {args.repeats}; ranks' own time excluded)")
    print("hosts  control s  vs 2 hosts  wall s  ranks s")
    for n, row in rows:
        print(f"{n:<5}  {row['control']:<9.2f}  {row['control'] / base:<10.2f}  {row['wall']:<6.2f}  "
              f"{row['ranks']:.2f}")
    ratio = rows[-1][1]["control"] / base
    verdict = "PASS" if ratio <= TARGET_RATIO else "FAIL"
    print(f"\n{rows[-1][0]} hosts / {rows[0][0]} hosts: {ratio:.2f}x (target <= {TARGET_RATIO}x): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
