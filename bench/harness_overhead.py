"""Harness overhead: the default case through the playbook against the same case run directly.

Alternates `ansible-playbook run_case.yml` and `python -m case_runners run` on the same case, at 1 and at
3 rounds (--quick: 1 and 2), and reports, from each pair's own four runs (median and spread over the pairs, wall
and CPU time):
- fixed cost: what the playbook adds once per run (preflight, runtime check, summary);
- per-round cost: what it adds to each further round — the target is at most 1.0 s of wall time
  (FlagPerf sleeps 60 s after every launch, then polls every 10 s).
CPU time counts each side's whole process tree, what detaches from it included (the playbook's background
launcher and its ranks, the monitors): bench/process_tree.py.
Both paths train the same seeded case for the same number of steps, so the training time cancels out.
The verdict follows bench/verdict.py: too few pairs, or a spread the target cannot be told from, is CANNOT JUDGE.
--quick: one pair of 5 steps at 1 and 2 rounds, the smallest real measurement (which one pair cannot judge).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from bench.alternation import add_pair_options, alternate, judge_added, pair_sizes, round_counts
from bench.verdict import LoadWatch, bounded
from case_runners.core.cli_io import ArgumentParser

VENV_BIN = Path(sys.executable).parent
TARGET_PER_ROUND_S = 1.0
STEPS = (60, 5)  # steps per round: by default, and with --quick


def commands(case: str, steps: int, rounds: int, results: Path) -> dict[str, list[str]]:
    overrides = {"max_steps": steps}
    selection = {"case": case, "repeat": rounds, "overrides": overrides}
    return {
        "playbook": [str(VENV_BIN / "ansible-playbook"), "run_case.yml", "-e",
                     json.dumps({"perfplay_cases": [selection], "perfplay_results_dir": str(results)})],
        "direct": [sys.executable, "-m", "case_runners", "run", case, "--repeat", str(rounds),
                   "--set", f"max_steps={steps}", "--results-dir", str(results)],
    }


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="digits_cnn")
    target_help = f"LOW..HIGH seconds per round (default ..{TARGET_PER_ROUND_S:g})"
    add_pair_options(parser, "playbook/direct", "training steps per round, fixed work", STEPS,
                     bounded(high=TARGET_PER_ROUND_S), target_help)
    args = parser.parse_args(argv)
    steps, pairs = pair_sizes(args, STEPS)
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    load = LoadWatch()
    with tempfile.TemporaryDirectory(prefix="perfplay-bench-") as tmp:
        measured = alternate(("playbook", "direct"),
                             lambda way, rounds: commands(args.case, steps, rounds, Path(tmp))[way], pairs, env, load,
                             round_counts(args))
    print(f"\n{args.case}, {steps} steps a round")
    print(load.line())
    result = judge_added(measured, "playbook", "direct", args.target, "playbook overhead per round (wall)")
    return result.exit_code  # anything but PASS fails `make bench`


if __name__ == "__main__":
    raise SystemExit(main())
