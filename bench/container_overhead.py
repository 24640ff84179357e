"""Container overhead: the same case through the playbook with the docker runtime and with the host runtime.

Alternates `ansible-playbook run_case.yml -e perfplay_runtime=docker` and `... =host` on the same case (fixed
training steps), at 1 and at 3 rounds, the image already built, and reports the seconds the docker runtime
adds per round: ((docker, 3) - (docker, 1)) - ((host, 3) - (host, 1)), over 2 rounds. Target: at most 3 s.
Also reports what each container costs as the supervisor sees it (its wall time minus the launcher's inside).

Needs root and a Docker engine: tests/docker/engine.sh starts dockerd and imports the base image.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from bench.alternation import added_costs, alternate, timed
from case_runners.records.node import NODE_RESULT, NodeResult
from case_runners.records.schema import ABSENT
from case_runners.run_options import ArgumentParser

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
TARGET_PER_ROUND_S = 3.0


def playbook(runtime: str, case: str, nproc: int, steps: int, rounds: int, results: Path, settings: dict) -> list[str]:
    selection = {"case": case, "nproc": nproc, "repeat": rounds, "overrides": {"max_steps": steps}}
    extra = {"perfplay_runtime": runtime, "perfplay_cases": [selection], "perfplay_results_dir": str(results),
             "perfplay_image": settings}
    return [str(VENV_BIN / "ansible-playbook"), "run_case.yml", "-e", json.dumps(extra)]


def supervisor_costs(results: Path) -> list[float]:
    """Per docker round: the container's wall time minus the launcher's inside it."""
    costs = []
    for path in results.glob(f"run*/*/round*/*/{NODE_RESULT}"):
        node = NodeResult.load(path)
        if node.container_duration_s is not ABSENT:
            costs.append(node.container_duration_s - node.duration_s)
    return costs


def main() -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="digits_cnn")
    parser.add_argument("--nproc", type=int, default=1)
    parser.add_argument("--steps", type=int, default=60, help="training steps per round (fixed work)")
    parser.add_argument("--pairs", type=int, default=2, help="alternated docker/host pairs per round count")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("container_overhead: needs root (dockerd); run it as root")
    from tests.docker.docker_env import engine, image_settings
    engine("up")
    settings = image_settings()
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    with tempfile.TemporaryDirectory(prefix="perfplay-bench-") as tmp:
        warm = Path(tmp) / "warm"
        print("building the image if absent (not timed) ...", flush=True)
        timed(playbook("docker", args.case, args.nproc, 5, 1, warm, settings), env)
        med = alternate(("docker", "host"), lambda runtime, rounds: playbook(
            runtime, args.case, args.nproc, args.steps, rounds, Path(tmp) / runtime, settings), args.pairs, env)
        costs = supervisor_costs(Path(tmp) / "docker")
    fixed, per_round = added_costs(med, "docker", "host")
    print(f"\nmedian wall time, 1 round:  docker {med['docker', 1]:.2f} s, host {med['host', 1]:.2f} s")
    print(f"median wall time, 3 rounds: docker {med['docker', 3]:.2f} s, host {med['host', 3]:.2f} s")
    print(f"docker fixed cost per run:    {fixed:.2f} s (image check, agent venv check)")
    print(f"container cost seen by the supervisor: median {statistics.median(costs):.2f} s over {len(costs)} rounds "
          f"(create, start, prepare, stop, remove)")
    verdict = "PASS" if per_round <= TARGET_PER_ROUND_S else "FAIL"
    print(f"docker runtime added per round: {per_round:.2f} s (target <= {TARGET_PER_ROUND_S:.0f} s) {verdict}")
    return 0 if verdict == "PASS" else 1  # a missed target fails `make bench`


if __name__ == "__main__":
    raise SystemExit(main())
