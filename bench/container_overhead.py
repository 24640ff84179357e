"""Container overhead: the same case through the playbook with the docker runtime and with the host runtime.

Alternates `ansible-playbook run_case.yml -e perfplay_runtime=docker` and `... =host` on the same case (fixed
training steps), at 1 and at 3 rounds (--quick: 1 and 2), the image already built, and reports the seconds the
docker runtime adds per round in each pair: ((docker, 3) - (docker, 1)) - ((host, 3) - (host, 1)), over 2 rounds;
the median and spread over the pairs, wall and CPU time and the load average. Target: at most 3 s, judged by
bench/verdict.py.
--quick: one pair of 5 steps at 1 and 2 rounds, the smallest real measurement (which one pair cannot judge).
Also reports what each container costs as the supervisor sees it (its wall time minus the launcher's inside).

Needs root and a Docker engine: tests/docker/engine.sh starts dockerd and imports the base image.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from bench.alternation import add_pair_options, alternate, judge_added, pair_sizes, round_counts, timed
from bench.verdict import LoadWatch, bounded, summary
from case_runners.core.cli_io import ArgumentParser
from case_runners.records.node import NODE_RESULT, NodeResult
from case_runners.records.schema import ABSENT

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
TARGET_PER_ROUND_S = 3.0
STEPS = (60, 5)  # steps per round: by default, and with --quick


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


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="digits_cnn")
    parser.add_argument("--nproc", type=int, default=1)
    target_help = f"LOW..HIGH seconds per round (default ..{TARGET_PER_ROUND_S:g})"
    add_pair_options(parser, "docker/host", "training steps per round, fixed work", STEPS,
                     bounded(high=TARGET_PER_ROUND_S), target_help)
    args = parser.parse_args(argv)
    steps, pairs = pair_sizes(args, STEPS)
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
        load = LoadWatch()
        measured = alternate(("docker", "host"), lambda runtime, rounds: playbook(
            runtime, args.case, args.nproc, steps, rounds, Path(tmp) / runtime, settings), pairs, env, load,
            round_counts(args))
        costs = supervisor_costs(Path(tmp) / "docker")
    print(f"\n{args.case}, {steps} steps a round")
    print(load.line())
    if costs:
        print(f"container cost seen by the supervisor: {summary(costs, ' s')} over {len(costs)} rounds "
              f"(create, start, prepare, stop, remove)")
    result = judge_added(measured, "docker", "host", args.target, "docker runtime added per round (wall)")
    return result.exit_code  # anything but PASS fails `make bench`


if __name__ == "__main__":
    raise SystemExit(main())
